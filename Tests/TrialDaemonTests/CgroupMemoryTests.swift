import Testing
import TrialDaemon

/// The reading of the daemon's cgroup memory limit from the text of its files, and the need it
/// is checked against (`CgroupMemory`, `MemoryNeed`).
@Suite struct CgroupMemoryTests {
  // A host with cgroup v1 controllers and the unified hierarchy beside them (systemd's hybrid).
  static let hybridCgroup = """
    12:pids:/system.slice/trialwatch.service
    4:memory:/system.slice/trialwatch.service
    3:cpu,cpuacct:/system.slice/trialwatch.service
    1:name=systemd:/system.slice/trialwatch.service
    0::/system.slice/trialwatch.service

    """
  static let hybridMounts = """
    31 23 0:28 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755
    35 31 0:32 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:16 - cgroup cgroup rw,memory
    40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime shared:10 - cgroup cgroup rw,xattr,name=systemd
    41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:11 - cgroup2 cgroup2 rw,nsdelegate

    """
  static let unifiedMounts = """
    22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
    25 22 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate

    """

  @Test func membership_V1MemoryController_BeforeUnified() {
    #expect(
      CgroupMemory.membership(cgroupFile: Self.hybridCgroup) == .v1(path: "/system.slice/trialwatch.service"))
    #expect(CgroupMemory.membership(cgroupFile: "3:cpu,memory:/a/b\n") == .v1(path: "/a/b"))
  }

  @Test func membership_V2Only_IsUnifiedPath() {
    #expect(
      CgroupMemory.membership(cgroupFile: "0::/system.slice/x.service\n")
        == .v2(path: "/system.slice/x.service"))
    #expect(CgroupMemory.membership(cgroupFile: "") == nil)
    #expect(CgroupMemory.membership(cgroupFile: "garbage\n1:name=systemd:/\n") == nil)
  }

  @Test func limitFiles_FromOwnCgroup_UpToRoot() {
    let v1 = CgroupMemory.limitFiles(
      .v1(path: "/system.slice/trialwatch.service"), mountInfo: Self.hybridMounts)
    #expect(
      v1 == [
        "/sys/fs/cgroup/memory/system.slice/trialwatch.service/memory.limit_in_bytes",
        "/sys/fs/cgroup/memory/system.slice/memory.limit_in_bytes",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
      ])
    let v2 = CgroupMemory.limitFiles(
      .v2(path: "/system.slice/trialwatch.service"), mountInfo: Self.unifiedMounts)
    #expect(
      v2 == [
        "/sys/fs/cgroup/system.slice/trialwatch.service/memory.max", "/sys/fs/cgroup/system.slice/memory.max",
        "/sys/fs/cgroup/memory.max",
      ])
  }

  @Test func limitFiles_MountOfPart_StartsAtItsRoot() {
    // A container that sees its own part of the host's hierarchy, mounted as its root.
    let mounts = "50 40 0:32 /docker/abc /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n"
    #expect(
      CgroupMemory.limitFiles(.v1(path: "/docker/abc/inner"), mountInfo: mounts) == [
        "/sys/fs/cgroup/memory/inner/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.limit_in_bytes",
      ])
    #expect(CgroupMemory.limitFiles(.v1(path: "/elsewhere"), mountInfo: mounts).isEmpty)
    #expect(CgroupMemory.limitFiles(.v2(path: "/x"), mountInfo: Self.hybridMounts.replacingCgroup2()).isEmpty)
    let escaped = "25 22 0:23 / /run/my\\040cgroup rw - cgroup2 cgroup2 rw\n"
    #expect(CgroupMemory.limitFiles(.v2(path: "/"), mountInfo: escaped) == ["/run/my cgroup/memory.max"])
  }

  @Test func value_V2AndV1Formats() {
    #expect(CgroupMemory.value(limitFile: "max\n") == .unlimited)
    #expect(CgroupMemory.value(limitFile: "268435456\n") == .bytes(268_435_456))
    #expect(CgroupMemory.value(limitFile: "9223372036854771712\n") == .unlimited)
    #expect(CgroupMemory.value(limitFile: "99999999999999999999999\n") == .unlimited)
    #expect(CgroupMemory.value(limitFile: "0\n") == .bytes(0))
  }

  @Test func value_Garbage_IsInvalid() {
    #expect(CgroupMemory.value(limitFile: "") == .invalid(""))
    #expect(CgroupMemory.value(limitFile: "-1\n") == .invalid("-1"))
    #expect(CgroupMemory.value(limitFile: "12M\n") == .invalid("12M"))
    #expect(CgroupMemory.value(limitFile: "1 2\n") == .invalid("1 2\n"))
    #expect(CgroupMemory.value(limitFile: "١٢\n") == .invalid("١٢"))
  }

  @Test func need_BelowLimit_RefusedWithFix() throws {
    let need = MemoryNeed(trials: 1_000_000, storeBytes: 325_000_000)
    #expect(need.bytes == MemoryNeed.base + MemoryNeed.perTrial * 1_000_000 + 325_000_000)
    let limit = CgroupMemory.Limit(bytes: need.bytes - 1, file: "/sys/fs/cgroup/t.service/memory.max")
    let refusal = try #require(need.refusal(under: limit))
    #expect(refusal.contains("/sys/fs/cgroup/t.service/memory.max"))
    #expect(refusal.contains("1000000 active trials"))
    #expect(refusal.contains("325.0 MB of the store"))
    #expect(refusal.contains("MemoryMax= to at least \(need.recommendedMegabytes)M"))
    #expect(need.refusal(under: CgroupMemory.Limit(bytes: need.bytes, file: "f")) == nil)
  }
}

extension String {
  /// The mount table without its cgroup2 mount.
  fileprivate func replacingCgroup2() -> String {
    split(separator: "\n").filter { !$0.contains("cgroup2") }.joined(separator: "\n")
  }
}
