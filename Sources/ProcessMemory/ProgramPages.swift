import Glibc

/// The pages of the program and of its shared libraries that the process has in memory: most
/// of the program's are code and metadata run once, at start-up (for the daemon, loading the
/// configuration and the store, catching up; for the webhooks' sender, its command line and
/// its first attachment), and of the libraries' (glibc, libstdc++, libsystemd) the process
/// runs little once idle. They are clean copies of their files, yet they count in the resident
/// size, and the kernel keeps mapped code longer than other cache. `release()` unmaps them:
/// what runs next is mapped again from the page cache, a minor fault per 64 kB or so of code.
/// The page cache keeps them as long as the kernel would have; what shrinks is what this
/// process maps.
///
/// Only mappings that hold nothing but a file's bytes are released: private, not writable,
/// of a file (not anonymous, not shared: the store's map has its own release), and without a
/// page written since it was mapped (the relocated part, made read-only after the dynamic
/// linker wrote it, has such pages, and so has code a debugger put a breakpoint in). Dropping
/// a written page of a private mapping would bring back the file's bytes in its place.
public enum ProgramPages {
  /// The bytes of mapping released: of the program's own file, and of the other files.
  public struct Released: Sendable {
    public var program = 0
    public var libraries = 0

    /// As a log line's fields say it.
    public var fields: [String: String] {
      ["program_mapping_bytes": "\(program)", "library_mapping_bytes": "\(libraries)"]
    }
  }

  /// What a process lets go of once it goes idle: the unwritten pages of its program and
  /// libraries (`release`), then the heap's free memory (`HeapTrim.run`).
  @discardableResult
  public static func releaseIdle() -> Released {
    let released = release()
    HeapTrim.run()
    return released
  }

  /// Unmaps the unwritten pages of the program and its libraries.
  @discardableResult
  public static func release() -> Released {
    var program = stat()
    guard stat("/proc/self/exe", &program) == 0, let bytes = contents(of: "/proc/self/smaps") else {
      return Released()
    }
    var released = Released()
    for mapping in mappings(in: bytes) where mapping.isUnwrittenFileCopy {
      guard let address = UnsafeMutableRawPointer(bitPattern: mapping.start) else { continue }
      let size = Int(mapping.end - mapping.start)
      guard madvise(address, size, MADV_DONTNEED) == 0 else { continue }
      if mapping.isOfFile(program) {
        released.program += size
      } else {
        released.libraries += size
      }
    }
    return released
  }

  /// The bytes of the file at `path` (a file of /proc, whose size stat does not tell), or nil.
  static func contents(of path: String) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while true {
      let count = read(fd, &chunk, chunk.count)
      if count < 0 && errno == EINTR { continue }
      if count < 0 { return nil }
      if count == 0 { return bytes }
      bytes.append(contentsOf: chunk[0..<count])
    }
  }

  /// One mapping of `/proc/self/smaps`: its header line
  /// (`start-end perms offset major:minor inode path`) and the figures that matter here.
  struct Mapping {
    var start: UInt
    var end: UInt
    var permissions: String
    var device: (major: UInt64, minor: UInt64)
    var inode: UInt64
    /// Pages of the mapping that are the process's own, no longer the file's (`Anonymous:`),
    /// in kB; nil when smaps did not say.
    var anonymousKB: Int?

    /// Whether this maps a file privately, read-only, with every page still the file's.
    var isUnwrittenFileCopy: Bool {
      inode != 0 && permissions.count == 4 && !permissions.contains("w") && permissions.last == "p"
        && anonymousKB == 0
    }

    /// Whether this maps the file of `file`.
    func isOfFile(_ file: stat) -> Bool {
      let dev = UInt64(file.st_dev)
      let major = (dev >> 8) & 0xfff | (dev >> 32) & ~0xfff
      let minor = dev & 0xff | (dev >> 12) & ~0xff
      return inode == UInt64(file.st_ino) && device == (major, minor)
    }
  }

  /// The mappings of a `/proc/PID/smaps` text, in order. Read as bytes: only the header lines
  /// (which begin with a hexadecimal digit) and the `Anonymous:` lines are parsed, the other
  /// twenty or so lines of each mapping are skipped at their first byte.
  static func mappings(in smaps: [UInt8]) -> [Mapping] {
    let anonymous = Array("Anonymous:".utf8)
    var found: [Mapping] = []
    var lineStart = smaps.startIndex
    while lineStart < smaps.endIndex {
      let end = smaps[lineStart...].firstIndex(of: UInt8(ascii: "\n")) ?? smaps.endIndex
      defer { lineStart = end + 1 }
      let line = smaps[lineStart..<end]
      guard let first = line.first else { continue }
      if hexDigit(first) != nil {
        if let mapping = header(line) { found.append(mapping) }
      } else if first == anonymous[0], line.starts(with: anonymous), !found.isEmpty {
        var figures = Fields(line.dropFirst(anonymous.count))
        found[found.count - 1].anonymousKB = figures.next().flatMap { number($0, radix: 10) }.map { Int($0) }
      }
    }
    return found
  }

  /// `start-end perms offset major:minor inode [path]`
  private static func header(_ line: ArraySlice<UInt8>) -> Mapping? {
    var fields = Fields(line)
    guard let range = fields.next(), let permissions = fields.next(), fields.next() != nil,
      let device = fields.next(), let inodeField = fields.next(),
      let dash = range.firstIndex(of: UInt8(ascii: "-")),
      let colon = device.firstIndex(of: UInt8(ascii: ":")),
      let start = number(range[..<dash], radix: 16), let end = number(range[(dash + 1)...], radix: 16),
      end > start, let major = number(device[..<colon], radix: 16),
      let minor = number(device[(colon + 1)...], radix: 16), let inode = number(inodeField, radix: 10)
    else { return nil }
    return Mapping(
      start: UInt(start), end: UInt(end), permissions: String(decoding: permissions, as: UTF8.self),
      device: (major, minor), inode: inode, anonymousKB: nil)
  }

  /// The fields of a line, between runs of spaces.
  private struct Fields: IteratorProtocol {
    var rest: ArraySlice<UInt8>
    init(_ line: ArraySlice<UInt8>) { rest = line }
    mutating func next() -> ArraySlice<UInt8>? {
      guard let first = rest.firstIndex(where: { $0 != UInt8(ascii: " ") }) else { return nil }
      let end = rest[first...].firstIndex(of: UInt8(ascii: " ")) ?? rest.endIndex
      defer { rest = rest[end...] }
      return rest[first..<end]
    }
  }

  private static func hexDigit(_ byte: UInt8) -> UInt64? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt64(byte - UInt8(ascii: "0"))
    case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt64(byte - UInt8(ascii: "a") + 10)
    default: nil
    }
  }

  /// A number in `radix` (10 or 16, lower-case) that fits 64 bits, or nil.
  private static func number(_ digits: ArraySlice<UInt8>, radix: UInt64) -> UInt64? {
    guard !digits.isEmpty else { return nil }
    var value: UInt64 = 0
    for byte in digits {
      guard let digit = hexDigit(byte), digit < radix else { return nil }
      let (shifted, over) = value.multipliedReportingOverflow(by: radix)
      let (sum, carry) = shifted.addingReportingOverflow(digit)
      guard !over, !carry else { return nil }
      value = sum
    }
    return value
  }
}
