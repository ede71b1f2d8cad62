import CUnistring
import TrialCore

#if canImport(Glibc)
  import Glibc
#endif

extension SubjectFolding {
  /// Unicode NFKC case folding, as `SubjectKey=casefold` and `email` use it: default-ignorable
  /// code points (zero-width spaces, soft hyphens, variation selectors) are dropped, as
  /// Unicode's NFKC_Casefold drops them, then the system's libunistring folds the text
  /// (`u8_casefold` with NFKC: compatibility decomposition, full case folding, composition).
  /// ASCII text is folded here: it needs only its capitals made small. Without the library
  /// (Debian: libunistring2), a subject that is not ASCII is refused, naming it.
  public static let unicode = SubjectFolding { text throws(TrialError) in
    if let folded = SubjectFolding.foldingASCII(text) { return folded }
    let library: TWUnistring
    switch Unistring.library {
    case .success(let opened): library = opened
    case .failure(let problem): throw .invalid(.subject, "cannot be case folded: \(problem.description)")
    }
    let visible = Array(
      String(
        String.UnicodeScalarView(text.unicodeScalars.filter { !$0.properties.isDefaultIgnorableCodePoint })
      )
      .utf8)
    var length = 0
    guard
      let folded = visible.withUnsafeBufferPointer({
        library.u8_casefold($0.baseAddress, $0.count, nil, library.nfkc, nil, &length)
      })
    else {
      // The input is valid UTF-8, so only memory can run out.
      fatalError("libunistring could not fold a subject: out of memory")
    }
    defer { free(folded) }
    return String(decoding: UnsafeBufferPointer(start: folded, count: length), as: UTF8.self)
  }

  /// Why the Unicode folding cannot fold text that is not ASCII on this host; nil when it can
  /// (`--check-config` asks, for plans that need it).
  public static var unicodeUnavailable: String? {
    if case .failure(let problem) = Unistring.library { problem.description } else { nil }
  }
}

/// libunistring, opened at its first use.
private enum Unistring {
  struct Unavailable: Error, CustomStringConvertible {
    var reason: String
    var description: String { "\(reason) (libunistring, Debian package libunistring2)" }
  }

  nonisolated(unsafe) static let library: Result<TWUnistring, Unavailable> = {
    // nonisolated(unsafe): set once, then only read; the table holds the library's functions.
    // The table is filled in place and kept by value here: nothing is allocated for it.
    var reason = [CChar](repeating: 0, count: 512)
    return withUnsafeTemporaryAllocation(of: TWUnistring.self, capacity: 1) { table in
      guard tw_unistring_open(table.baseAddress!, &reason, reason.count) else {
        return .failure(
          Unavailable(reason: reason.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }))
      }
      return .success(table[0])
    }
  }()
}
