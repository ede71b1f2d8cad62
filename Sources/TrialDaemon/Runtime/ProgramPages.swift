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
    for mapping in mappings(in: String(decoding: bytes, as: UTF8.self))
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
    var permissions: Substring
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

  /// The mappings of a `/proc/PID/smaps` text, in order.
  static func mappings(in smaps: String) -> [Mapping] {
    var found: [Mapping] = []
    for line in smaps.split(separator: "\n") {
      if let mapping = header(line) {
        found.append(mapping)
      } else if line.hasPrefix("Anonymous:"), !found.isEmpty {
        let figures = line.dropFirst("Anonymous:".count).split(separator: " ")
        found[found.count - 1].anonymousKB = figures.first.flatMap { Int($0) }
      }
    }
    return found
  }

  private static func header(_ line: Substring) -> Mapping? {
    let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
    guard fields.count >= 5 else { return nil }
    let range = fields[0].split(separator: "-")
    let device = fields[3].split(separator: ":")
    guard range.count == 2, let start = UInt(range[0], radix: 16), let end = UInt(range[1], radix: 16),
      end > start, device.count == 2, let major = UInt64(device[0], radix: 16),
      let minor = UInt64(device[1], radix: 16), let inode = UInt64(fields[4])
    else { return nil }
    return Mapping(
      start: start, end: end, permissions: fields[1], device: (major, minor), inode: inode, anonymousKB: nil)
  }
}
