import Foundation
import TestSupport
import Testing
import TrialManual

/// `trialwatch-manual`, which `make release` runs, and mandoc's verdict on what it writes.
@Suite struct ManualToolTests {
  static let mandoc = ["/usr/bin/mandoc", "/usr/local/bin/mandoc"].first {
    FileManager.default.isExecutableFile(atPath: $0)
  }

  @Test func manualTool_WithADateAndAFolder_WritesThePages() throws {
    let scratch = try TemporaryDirectory("manual")
    let run = try ChildProcess.run(
      .product("trialwatch-manual"), ["--date", Pages.date, "--output", scratch.appending("man")])
    #expect(run.status.code == 0, "\(run.errors)")
    for page in try Pages.all() {
      let written = try String(contentsOfFile: scratch.appending("man/\(page.fileName)"), encoding: .utf8)
      #expect(written == page.source, "\(page.fileName)")
    }
    let files = try FileManager.default.contentsOfDirectory(atPath: scratch.appending("man")).sorted()
    #expect(
      files == [
        "trialwatch-http.8", "trialwatch-webhooks.8", "trialwatch.conf.5", "trialwatchctl.1", "trialwatchd.8",
      ])
  }

  @Test(arguments: [
    [], ["--date", "2026-11-23"], ["--date", "tomorrow", "--output", "/tmp/x"], ["--out", "x"],
  ])
  func manualTool_WithoutADateOrAFolder_Fails(arguments: [String]) throws {
    let run = try ChildProcess.run(.product("trialwatch-manual"), arguments)
    #expect(run.status.code != 0)
    #expect(run.errors.hasPrefix("trialwatch-manual: "), "\(run.errors)")
  }

  @Test(.enabled(if: mandoc != nil, "mandoc is not installed (Debian: mandoc)"))
  func pages_LintedByMandoc_ReportNothing() throws {
    let scratch = try TemporaryDirectory("manual")
    let paths = try TrialwatchManual.write(date: Pages.date, to: scratch.path)
    let lint = try ChildProcess.run(.path(Self.mandoc!), ["-T", "lint"] + paths)
    #expect(lint.status.code == 0)
    #expect(lint.output + lint.errors == "")
  }
}
