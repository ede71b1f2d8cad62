import TrialConfiguration

/// The memory limit of the cgroup the daemon runs in (systemd's `MemoryMax=`), read from
/// `/proc/self/cgroup`, `/proc/self/mountinfo` and the cgroup file system: under cgroup v2 the
/// `memory.max` of its cgroup, under cgroup v1 the `memory.limit_in_bytes` of its memory
/// cgroup; of its cgroup and of each cgroup above it (a slice's limit bounds the services in
/// it), the smallest. Nothing here writes. The parsing is in pure functions of the files' text.
public enum CgroupMemory {
  /// A limit that applies, and the file that set it.
  public struct Limit: Equatable, Sendable {
    public var bytes: Int
    /// The file it was read from, such as
    /// `/sys/fs/cgroup/system.slice/trialwatch.service/memory.max`.
    public var file: String

    public init(bytes: Int, file: String) {
      self.bytes = bytes
      self.file = file
    }
  }

  /// Which cgroup version holds the memory controller, and the process's cgroup in it (as
  /// `/proc/self/cgroup` gives it, from the hierarchy's root).
  public enum Membership: Equatable, Sendable {
    case v1(path: String)
    case v2(path: String)

    var path: String {
      switch self {
      case .v1(let path), .v2(let path): path
      }
    }

    /// The file of a cgroup directory that holds its limit.
    var limitFileName: String {
      switch self {
      case .v1: "memory.limit_in_bytes"
      case .v2: "memory.max"
      }
    }
  }

  /// What a limit file says.
  public enum Value: Equatable, Sendable {
    case bytes(Int)
    case unlimited
    /// Not a limit: the text, for the log.
    case invalid(String)
  }

  /// The limit that applies to this process now; nil when there is none, or when the files
  /// that would tell cannot be read (then there is nothing to check).
  public static func current() -> Limit? {
    guard let cgroup = text("/proc/self/cgroup"), let membership = membership(cgroupFile: cgroup),
      let mountInfo = text("/proc/self/mountinfo")
    else { return nil }
    var smallest: Limit?
    for file in limitFiles(membership, mountInfo: mountInfo) {
      guard let content = text(file), case .bytes(let bytes) = value(limitFile: content) else { continue }
      if bytes < smallest?.bytes ?? .max { smallest = Limit(bytes: bytes, file: file) }
    }
    return smallest
  }

  /// The memory controller's line of `/proc/self/cgroup` (`ID:CONTROLLERS:PATH` lines): a
  /// cgroup v1 hierarchy whose controllers include `memory`, else the cgroup v2 one (`0::PATH`);
  /// nil when neither is there.
  public static func membership(cgroupFile text: String) -> Membership? {
    var unified: String?
    for line in text.split(separator: "\n") {
      let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
      guard fields.count == 3, fields[2].hasPrefix("/") else { continue }
      if fields[1].split(separator: ",").contains("memory") { return .v1(path: String(fields[2])) }
      if fields[0] == "0" && fields[1].isEmpty { unified = String(fields[2]) }
    }
    return unified.map { .v2(path: $0) }
  }

  /// The limit files that bound the cgroup of `membership`, its own first, then its parents'
  /// up to the root of the mount of its hierarchy found in `mountInfo` (the text of
  /// `/proc/self/mountinfo`); empty when that hierarchy is not mounted, or the cgroup is not
  /// under the mount's root.
  public static func limitFiles(_ membership: Membership, mountInfo: String) -> [String] {
    guard let mount = mountPoint(membership, mountInfo: mountInfo) else { return [] }
    let root = mount.root == "/" ? "" : mount.root
    let path = membership.path == "/" ? "" : membership.path
    guard path == root || path.hasPrefix(root + "/") else { return [] }
    // The directories below the mount point, from the cgroup's own up to the mount's root.
    var parts = path.dropFirst(root.count).split(separator: "/").map(String.init)
    var files: [String] = []
    while true {
      let directory = ([mount.point == "/" ? "" : mount.point] + parts).joined(separator: "/")
      files.append(directory + "/" + membership.limitFileName)
      guard !parts.isEmpty else { return files }
      parts.removeLast()
    }
  }

  /// Where the hierarchy of `membership` is mounted: the mount point and the cgroup path its
  /// root stands for (`/` but in a container that sees part of the host's hierarchy), from the
  /// lines of `/proc/self/mountinfo`
  /// (`ID PARENT MAJOR:MINOR ROOT POINT OPTIONS [TAGS] - TYPE SOURCE SUPER-OPTIONS`).
  static func mountPoint(_ membership: Membership, mountInfo: String) -> (root: String, point: String)? {
    for line in mountInfo.split(separator: "\n") {
      let fields = line.split(separator: " ")
      guard let dash = fields.firstIndex(of: "-"), dash >= 6, fields.count > dash + 3 else { continue }
      let type = fields[dash + 1]
      let superOptions = fields[dash + 3].split(separator: ",")
      let matches: Bool
      switch membership {
      case .v1: matches = type == "cgroup" && superOptions.contains("memory")
      case .v2: matches = type == "cgroup2"
      }
      if matches { return (unescaped(fields[3]), unescaped(fields[4])) }
    }
    return nil
  }

  /// A limit file's value: cgroup v2's `max` or a count of bytes; cgroup v1's count of bytes,
  /// where no limit is the largest count it holds (9223372036854771712, a page short of 2^63),
  /// so a count of 2^62 or more is taken for none.
  public static func value(limitFile text: String) -> Value {
    let trimmed = text.split(whereSeparator: { $0 == "\n" || $0 == " " || $0 == "\t" })
    guard trimmed.count == 1, let word = trimmed.first else { return .invalid(String(text.prefix(40))) }
    if word == "max" { return .unlimited }
    guard word.allSatisfy({ $0.isASCII && $0.isNumber }), let bytes = Int(word) else {
      // Digits beyond Int's range: no limit either.
      return word.allSatisfy({ $0.isASCII && $0.isNumber }) ? .unlimited : .invalid(String(word.prefix(40)))
    }
    return bytes >= 1 << 62 ? .unlimited : .bytes(bytes)
  }

  /// mountinfo writes a space, a tab, a newline and a backslash in a path as `\040`, `\011`,
  /// `\012` and `\134`.
  static func unescaped(_ field: Substring) -> String {
    guard field.contains("\\") else { return String(field) }
    var bytes: [UInt8] = []
    var rest = Array(field.utf8)[...]
    while let byte = rest.popFirst() {
      if byte == UInt8(ascii: "\\"), rest.count >= 3,
        let code = UInt8(String(decoding: rest.prefix(3), as: UTF8.self), radix: 8)
      {
        bytes.append(code)
        rest = rest.dropFirst(3)
      } else {
        bytes.append(byte)
      }
    }
    return String(decoding: bytes, as: UTF8.self)
  }

  private static func text(_ path: String) -> String? {
    guard case .success(let bytes) = readFile(path) else { return nil }
    return String(decoding: bytes, as: UTF8.self)
  }
}
