import Glibc

/// The pages of the daemon's own program file that it has in memory: most of them are code
/// and metadata run once, at start-up (loading the configuration and the store, catching
/// up). They are clean copies of the file, yet they count in the resident size, and the
/// kernel keeps mapped code longer than other cache. `release()` unmaps them: what runs next
/// is mapped again from the page cache, a minor fault per 64 kB or so of code.
///
/// Only mappings that hold nothing but the file's bytes are released: private, not writable,
/// and without a page written since the program was loaded (the relocated part, made read-only
/// after the dynamic linker wrote it, has such pages, and so has code a debugger put a
/// breakpoint in). Dropping a written page of a private mapping would bring back the file's
/// bytes in its place.
enum ProgramPages {
  /// Unmaps the program's unwritten pages; returns the bytes of mapping released.
  @discardableResult
  static func release() -> Int {
    var program = stat()
    guard stat("/proc/self/exe", &program) == 0,
      case .success(let bytes) = readFile("/proc/self/smaps")
    else { return 0 }
    var released = 0
    for mapping in mappings(in: bytes)
    where mapping.isUnwrittenCopy(ofFile: program) {
      guard let address = UnsafeMutableRawPointer(bitPattern: mapping.start) else { continue }
      if madvise(address, Int(mapping.end - mapping.start), MADV_DONTNEED) == 0 {
        released += Int(mapping.end - mapping.start)
      }
    }
    return released
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

    /// Whether this maps the file of `file` privately, read-only, with every page still the
    /// file's.
    func isUnwrittenCopy(ofFile file: stat) -> Bool {
      let dev = UInt64(file.st_dev)
      let major = (dev >> 8) & 0xfff | (dev >> 32) & ~0xfff
      let minor = dev & 0xff | (dev >> 12) & ~0xff
      return inode == UInt64(file.st_ino) && device == (major, minor) && permissions.count == 4
        && !permissions.contains("w") && permissions.last == "p" && anonymousKB == 0
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
