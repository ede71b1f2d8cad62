// A cgroup with a memory limit, for tests that run the real daemon under one.
import Foundation
import TestSupport
import TrialDaemon

#if canImport(Glibc)
  import Glibc
#endif

/// A cgroup of its own made by a test, with a memory limit, at the root of the host's memory
/// hierarchy (cgroup v1's memory controller, or cgroup v2 with its memory controller enabled
/// at the root), where the daemon is put before it runs (`wrapping(_:)`). Removed when let
/// go, once nothing runs in it. Making one needs root and a writable cgroup file system.
public final class MemoryCgroup {
  /// The cgroup's directory.
  public let path: String
  /// The limit written, in bytes.
  public let limit: Int
  private let version: String

  /// Makes the cgroup and writes its limit; throws, saying why, where the host has no memory
  /// controller a test can write to.
  public init(limit: Int, label: String) throws {
    guard getuid() == 0 else { throw Unavailable("making a cgroup needs root") }
    guard let cgroup = Self.read("/proc/self/cgroup"), let mounts = Self.read("/proc/self/mountinfo"),
      let membership = CgroupMemory.membership(cgroupFile: cgroup),
      let rootFile = CgroupMemory.limitFiles(membership, mountInfo: mounts).last
    else {
      throw Unavailable("no memory controller mounted (/proc/self/cgroup, /proc/self/mountinfo)")
    }
    let root = (rootFile as NSString).deletingLastPathComponent
    let limitFile: String
    switch membership {
    case .v1:
      version = "cgroup v1"
      limitFile = "memory.limit_in_bytes"
    case .v2:
      version = "cgroup v2"
      limitFile = "memory.max"
      let enabled = Self.read(root + "/cgroup.subtree_control")?.split(separator: " ") ?? []
      if !enabled.contains(where: { $0.hasPrefix("memory") }) {
        guard Self.write("+memory", to: root + "/cgroup.subtree_control") else {
          throw Unavailable(
            "cannot enable the memory controller in \(root)/cgroup.subtree_control: \(String(cString: strerror(errno)))"
          )
        }
      }
    }
    path = root + "/trialwatch-\(label)-\(getpid())-\(Self.counter.next())"
    self.limit = limit
    guard mkdir(path, 0o755) == 0 else {
      throw Unavailable(
        "cannot make the \(version) cgroup \(path): \(String(cString: strerror(errno)))")
    }
    guard Self.write("\(limit)", to: path + "/" + limitFile) else {
      let reason = String(cString: strerror(errno))
      rmdir(path)
      throw Unavailable("cannot write \(path)/\(limitFile): \(reason)")
    }
  }

  deinit {
    // The processes in it have ended by now: a test stops or kills its daemon first. A cgroup
    // whose last process has just exited may be busy a moment longer.
    _ = waitUntil(timeout: patience) { rmdir(path) == 0 || errno == ENOENT }
  }

  /// The command line that runs `command` in this cgroup: a shell that moves itself into it,
  /// then runs the command in its place (`exec`), so that the command's first allocation is
  /// already charged to it.
  public func wrapping(_ command: [String]) -> [String] {
    ["/bin/sh", "-c", "echo $$ > \"$0\" && exec \"$@\"", path + "/cgroup.procs"] + command
  }

  /// The most memory charged to it at once (cgroup v1's `memory.max_usage_in_bytes`, v2's
  /// `memory.peak` where the kernel has it), for the test's log; nil where not kept.
  public var peakUsage: Int? {
    for name in ["memory.max_usage_in_bytes", "memory.peak"] {
      if let text = Self.read(path + "/" + name), let value = Int(text.filter { !$0.isWhitespace }) {
        return value
      }
    }
    return nil
  }

  /// Why no cgroup could be made here: a test skips with it.
  public struct Unavailable: Error, CustomStringConvertible {
    public var description: String

    init(_ description: String) {
      self.description = description
    }
  }

  private static let counter = Counter()

  private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0

    func next() -> Int {
      lock.lock()
      defer { lock.unlock() }
      value += 1
      return value
    }
  }

  private static func read(_ path: String) -> String? {
    try? String(contentsOfFile: path, encoding: .utf8)
  }

  private static func write(_ text: String, to path: String) -> Bool {
    let fd = open(path, O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    return Array(text.utf8).withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } == text.utf8.count
  }
}
