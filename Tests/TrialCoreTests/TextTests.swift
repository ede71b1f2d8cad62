import Foundation
import Testing
import TrialCore

/// The path and number helpers that stand in for Foundation's, checked against it.
struct TextTests {
  static let paths = [
    "/var/lib/trialwatch/data.mdb", "/var/lib/trialwatch/", "/var", "/", "", "data.mdb", "a/b", "a/b/",
    "//a//b//", "./x", "../x/y", "/a/b/../c",
  ]

  @Test(arguments: paths)
  func lastComponent_OfAnyPath_IsFoundations(path: String) {
    #expect(FilePaths.lastComponent(path) == (path as NSString).lastPathComponent)
  }

  @Test(arguments: paths.filter { !$0.hasPrefix("//") })
  func parent_OfAnyPath_IsFoundations(path: String) {
    #expect(FilePaths.parent(path) == (path as NSString).deletingLastPathComponent)
  }

  @Test(arguments: ["/var/lib", "/var/lib/", "/", "", "lib"], ["data.mdb", "lock.mdb"])
  func join_OfAFolderAndAName_IsFoundations(folder: String, name: String) {
    #expect(FilePaths.join(folder, name) == (folder as NSString).appendingPathComponent(name))
  }

  /// A slash followed by a combining mark is one `Character` with it; it still separates.
  @Test func paths_WithACombiningMarkAfterASlash_SplitAtTheSlash() {
    let path = "/etc/tw\u{7F1}/plans/\u{7F1}basic.conf"
    #expect(FilePaths.lastComponent(path) == "\u{7F1}basic.conf")
    #expect(FilePaths.parent(path) == "/etc/tw\u{7F1}/plans")
    #expect(FilePaths.parent("plans/\u{7F1}x") == "plans")
    #expect(FilePaths.join("/etc", "/\u{7F1}x") == "/etc/\u{7F1}x")
  }

  @Test(arguments: [0, 7, 42, 255, 4096, 65_535])
  func zeroPadded_InBothRadixes_IsPrintfs(value: Int) {
    #expect(zeroPadded(value, width: 2, radix: 16) == String(format: "%02x", value))
    #expect(zeroPadded(value, width: 4) == String(format: "%04d", value))
  }

  @Test func trimmingWhitespace_OfBothEnds_KeepsTheMiddle() {
    #expect(" \t a b \n".trimmingWhitespace() == "a b")
    #expect("".trimmingWhitespace() == "")
    #expect("  ".trimmingWhitespace() == "")
  }
}
