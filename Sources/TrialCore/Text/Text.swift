/// Small text helpers the modules share, in place of Foundation's string extensions: the
/// project builds on FoundationEssentials, which has none of them.
extension StringProtocol {
  /// Without leading and trailing whitespace (Unicode's, newlines included).
  public func trimmingWhitespace() -> Substring {
    var slice = Substring(self)
    while let first = slice.first, first.isWhitespace { slice.removeFirst() }
    while let last = slice.last, last.isWhitespace { slice.removeLast() }
    return slice
  }
}

/// File paths as text, with the rules of POSIX path names: components separated by one or more
/// slashes, a trailing slash ignored, `/` the root. Nothing here touches the file system.
public enum FilePaths {
  /// The last component: `b` of `/a/b` and of `/a/b/`; `/` of `/`; empty for an empty path.
  public static func lastComponent(_ path: String) -> String {
    let trimmed = withoutTrailingSlashes(path)
    if trimmed == "/" || trimmed.isEmpty { return String(trimmed) }
    guard let slash = trimmed.lastIndex(of: "/") else { return String(trimmed) }
    return String(trimmed[trimmed.index(after: slash)...])
  }

  /// The folder that holds the last component: `/a` of `/a/b`; `/` of `/a` and of `/`; empty
  /// for a relative path of one component.
  public static func parent(_ path: String) -> String {
    let trimmed = withoutTrailingSlashes(path)
    guard let slash = trimmed.lastIndex(of: "/") else { return "" }
    var folder = trimmed[..<slash]
    while folder.count > 1, folder.last == "/" { folder.removeLast() }
    return folder.isEmpty ? "/" : String(folder)
  }

  /// `component` inside `folder`, with one slash between them (`folder` empty: `component`).
  public static func join(_ folder: String, _ component: String) -> String {
    if folder.isEmpty { return component }
    let name = component.drop { $0 == "/" }
    return folder.hasSuffix("/") ? folder + name : folder + "/" + name
  }

  private static func withoutTrailingSlashes(_ path: String) -> Substring {
    var slice = Substring(path)
    while slice.count > 1, slice.last == "/" { slice.removeLast() }
    return slice
  }
}

/// `value` in `radix` (lower-case digits), with zeros in front up to `width` digits: as
/// `printf`'s `%0*d` and `%0*x` for a non-negative value.
public func zeroPadded(_ value: some BinaryInteger, width: Int, radix: Int = 10) -> String {
  let digits = String(value, radix: radix)
  return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
}
