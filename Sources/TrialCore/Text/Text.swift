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
/// slashes, a trailing slash ignored, `/` the root. Nothing here touches the file system. The
/// slashes are found among the bytes, not the characters: a slash followed by a combining mark
/// (`/\u{7F1}`) is one `Character`, and still separates two components of a path.
public enum FilePaths {
  private static let slash = UInt8(ascii: "/")

  /// The last component: `b` of `/a/b` and of `/a/b/`; `/` of `/`; empty for an empty path.
  public static func lastComponent(_ path: String) -> String {
    let trimmed = withoutTrailingSlashes(path)
    if trimmed.elementsEqual("/".utf8) || trimmed.isEmpty { return text(trimmed) }
    guard let at = trimmed.lastIndex(of: slash) else { return text(trimmed) }
    return text(trimmed[(at + 1)...])
  }

  /// The folder that holds the last component: `/a` of `/a/b`; `/` of `/a` and of `/`; empty
  /// for a relative path of one component.
  public static func parent(_ path: String) -> String {
    let trimmed = withoutTrailingSlashes(path)
    guard let at = trimmed.lastIndex(of: slash) else { return "" }
    var folder = trimmed[..<at]
    while folder.count > 1, folder.last == slash { folder.removeLast() }
    return folder.isEmpty ? "/" : text(folder)
  }

  /// `component` inside `folder`, with one slash between them (`folder` empty: `component`).
  public static func join(_ folder: String, _ component: String) -> String {
    if folder.isEmpty { return component }
    let name = text(Array(component.utf8).drop { $0 == slash })
    return folder.utf8.last == slash ? folder + name : folder + "/" + name
  }

  private static func withoutTrailingSlashes(_ path: String) -> ArraySlice<UInt8> {
    var bytes = ArraySlice(path.utf8)
    while bytes.count > 1, bytes.last == slash { bytes.removeLast() }
    return bytes
  }

  private static func text(_ bytes: ArraySlice<UInt8>) -> String { String(decoding: bytes, as: UTF8.self) }
}

/// `value` in `radix` (lower-case digits), with zeros in front up to `width` digits: as
/// `printf`'s `%0*d` and `%0*x` for a non-negative value.
public func zeroPadded(_ value: some BinaryInteger, width: Int, radix: Int = 10) -> String {
  let digits = String(value, radix: radix)
  return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
}

/// JSON text written by hand, where a message is hot (the control socket's fast path) or small
/// (a row's attributes).
public enum JSONText {
  /// `text` as a JSON string, as `JSONEncoder` writes it: quoted, with the quote, the backslash
  /// and the control characters U+0000 to U+001F escaped (RFC 8259, section 7; slashes not
  /// escaped), everything else as UTF-8.
  public static func appendString(_ text: String, to out: inout [UInt8]) {
    out.append(UInt8(ascii: "\""))
    for byte in text.utf8 {
      switch byte {
      case UInt8(ascii: "\""): out += #"\""#.utf8
      case UInt8(ascii: "\\"): out += #"\\"#.utf8
      case 0x0A: out += #"\n"#.utf8
      case 0x0D: out += #"\r"#.utf8
      case 0x09: out += #"\t"#.utf8
      case 0x08: out += #"\b"#.utf8
      case 0x0C: out += #"\f"#.utf8
      case 0..<0x20:
        let hex = Array("0123456789abcdef".utf8)
        out += #"\u00"#.utf8
        out += [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
      default: out.append(byte)
      }
    }
    out.append(UInt8(ascii: "\""))
  }

  /// An object of texts, its keys in byte order (as `JSONEncoder`'s `sortedKeys` writes keys
  /// that are ASCII).
  public static func appendObject(_ object: [String: String], to out: inout [UInt8]) {
    out.append(UInt8(ascii: "{"))
    for (index, key) in object.keys.sorted().enumerated() {
      if index > 0 { out.append(UInt8(ascii: ",")) }
      appendString(key, to: &out)
      out.append(UInt8(ascii: ":"))
      appendString(object[key]!, to: &out)
    }
    out.append(UInt8(ascii: "}"))
  }
}
