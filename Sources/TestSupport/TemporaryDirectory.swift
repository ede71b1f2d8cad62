import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A fresh directory for a test or a benchmark, `/tmp/trialwatch-LABEL-XXXXXX`, removed with
/// everything in it when its owner lets it go.
///
/// Always under `/tmp`: socket paths in it stay well under the 108 bytes a socket address
/// holds, and its mode 0711 lets a client running as another user reach a socket inside it
/// without listing it.
public final class TemporaryDirectory: Sendable {
  public let path: String

  public init(_ label: String = "test") throws {
    var template = Array("/tmp/trialwatch-\(label)-XXXXXX".utf8CString)
    guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
      throw TestSupportError.systemCall("mkdtemp", "/tmp/trialwatch-\(label)-XXXXXX")
    }
    path = String(cString: made)
    guard chmod(path, 0o711) == 0 else {
      let failure = TestSupportError.systemCall("chmod", path)
      rmdir(path)
      throw failure
    }
  }

  deinit {
    try? FileManager.default.removeItem(atPath: path)
  }

  public var url: URL { URL(fileURLWithPath: path, isDirectory: true) }

  /// The path of `relative` inside the directory.
  public func appending(_ relative: String) -> String {
    path + "/" + relative
  }
}
