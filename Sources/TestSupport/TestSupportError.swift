import ErrnoText

#if canImport(Glibc)
  import Glibc
#endif

/// A failure of a test-support helper, in words: what was tried, on what, and why it failed.
public struct TestSupportError: Error, CustomStringConvertible, Sendable {
  public var description: String

  public init(_ description: String) {
    self.description = description
  }

  /// A failed system call: `call` on `subject`, with the text of `code`.
  static func systemCall(_ call: String, _ subject: String, errno code: Int32 = errno) -> TestSupportError {
    TestSupportError("\(call) \(subject): \(errnoText(code))")
  }
}
