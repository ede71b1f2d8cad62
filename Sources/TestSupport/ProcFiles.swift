import Foundation

/// Files of `/proc`, as the tests and the benchmarks read another process's state.
public enum ProcFiles {
  /// The whole text of `path`, or nil when it cannot be opened (the process or thread is gone).
  /// Read to the end: a /proc file reports no size, and a read of the size it reports stops
  /// short.
  public static func read(_ path: String) -> String? {
    guard let file = FileHandle(forReadingAtPath: path) else { return nil }
    defer { try? file.close() }
    return String(decoding: file.readDataToEndOfFile(), as: UTF8.self)
  }

  /// The file a line of `/proc/PID/maps` or `/proc/PID/smaps` maps, when the line is a mapping's
  /// own (`start-end perms offset device inode path`) and names one; nil for an anonymous
  /// mapping and for smaps' lines of figures (`Rss: 4 kB`).
  public static func mappedPath(_ line: Substring) -> Substring? {
    let fields = line.split(separator: " ", omittingEmptySubsequences: true)
    guard fields.count >= 6, let range = fields.first, range.contains("-"), range.first?.isHexDigit == true
    else { return nil }
    return fields[5]
  }

  /// Whether `line` of `/proc/PID/smaps` starts a mapping (anonymous or not), rather than giving
  /// one of its figures.
  public static func startsMapping(_ line: Substring) -> Bool {
    guard let range = line.split(separator: " ", maxSplits: 1).first else { return false }
    return range.contains("-") && range.first?.isHexDigit == true
  }
}
