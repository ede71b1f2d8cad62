import Foundation
import Logging
import SystemdTesting
import Testing

@testable import Systemd

/// What a journal that is down throws.
struct JournalDown: Error, CustomStringConvertible {
  var description: String { "journal is down" }
}

@Suite struct LogHandlerTests {
  @Test func priority_OfEachLevel_FollowsSyslog() {
    let expected: [(Logger.Level, Int)] = [
      (.trace, 7), (.debug, 7), (.info, 6), (.notice, 5), (.warning, 4), (.error, 3), (.critical, 2),
    ]
    for (level, priority) in expected {
      #expect(syslogPriority(of: level) == priority, "\(level)")
    }
  }

  @Test func journalHandler_WhenLogging_SendsStructuredFields() throws {
    let journal = RecordingJournal()
    var handler = JournalLogHandler(
      label: "io.trialwatch.engine", identifier: "trialwatchd", sink: journal,
      metadataProvider: .init { ["provided": "yes", "shared": "provider"] })
    handler.metadata["handler-key"] = "h"
    handler.metadata["shared"] = "handler"
    let logger = Logger(label: "io.trialwatch.engine", factory: { _ in handler })
    let line: UInt = #line + 1
    logger.error(
      "commit failed", metadata: ["trial.id": "00000000000000ff", "message": "clash", "shared": "event"])

    let entry = try #require(journal.sent.first).fields
    #expect(journal.sent.count == 1)
    #expect(
      entry
        == journalFields([
          "MESSAGE": "commit failed",
          "PRIORITY": "3",
          "SYSLOG_IDENTIFIER": "trialwatchd",
          "LOGGER": "io.trialwatch.engine",
          "CODE_FILE": "SystemdTests/LogHandlerTests.swift",
          "CODE_LINE": String(line),
          "CODE_FUNC": "journalHandler_WhenLogging_SendsStructuredFields()",
          "HANDLER_KEY": "h",
          "META_MESSAGE": "clash",
          "PROVIDED": "yes",
          "SHARED": "event",
          "TRIAL_ID": "00000000000000ff",
        ]))
  }

  @Test func journalHandler_WithAnEventError_CarriesIt() throws {
    struct StoreFull: Error, CustomStringConvertible {
      var description: String { "store is full" }
    }
    let event = LogEvent(
      level: .critical, message: "giving up", metadata: nil, source: nil, file: "F.swift",
      function: "f()", line: 9)
    var withError = event
    withError.error = StoreFull()
    let fields = JournalLogHandler.fields(for: withError, label: "l", identifier: "i", metadata: [:])
    #expect(
      fields.map(\.name) == [
        "MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER", "LOGGER", "CODE_FILE", "CODE_LINE", "CODE_FUNC", "ERROR",
      ])
    #expect(fields.last?.value == "store is full")
    #expect(fields[1].value == "2")
  }

  @Test func journalHandler_WhenTheJournalFails_FallsBackToStandardError() async {
    let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
      let handler = JournalLogHandler(
        label: "io.trialwatch.test", identifier: "trialwatchd",
        sink: RecordingJournal(failuresLeft: .max, failure: JournalDown()))
      Logger(label: "io.trialwatch.test", factory: { _ in handler }).warning("store is slow")
    }
    let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    #expect(
      text.contains("warning  io.trialwatch.test: store is slow (journal unavailable: journal is down)\n"))
  }

  @Test func stderrHandler_WhenLogging_WritesOneReadableLine() {
    let pipe = LinePipe()
    var handler = StderrLogHandler(label: "trialwatchd", fileDescriptor: pipe.write)
    handler.metadata["path"] = "/run/trialwatch/io.trialwatch"
    let logger = Logger(label: "trialwatchd", factory: { _ in handler })
    logger.debug("not shown at the default level")
    logger.notice("socket bound", metadata: ["mode": "0660", "owner": "root root"])
    #expect(
      pipe.readAvailable()
        == "notice   trialwatchd: socket bound mode=0660 owner=\"root root\""
        + " path=/run/trialwatch/io.trialwatch\n")
  }

  @Test func stderrFormat_OfAnyMessage_KeepsItOnOneLine() {
    struct Denied: Error, CustomStringConvertible {
      var description: String { "permission denied" }
    }
    let line = StderrLogHandler.format(
      level: .critical, label: "trialwatchd", message: "two\nlines\tand\u{7}bell",
      metadata: ["empty": "", "quote": "say \"hi\"", "eq": "a=b", "list": ["x", "y"]], error: Denied())
    #expect(
      line
        == #"critical trialwatchd: two\nlines\tand\u{7}bell empty="" eq="a=b""#
        + #" list="[\"x\", \"y\"]" quote="say \"hi\"" error="permission denied""#)
    #expect(!line.contains("\n"))
  }

  @Test func stderrFormat_EscapesEveryControlCharacter_AndNothingElse() {
    // Unicode's general category Cc is fixed (C0, DEL, C1): the handler tests it by value.
    for value in UInt32(0)...0x10FFFF {
      guard let scalar = Unicode.Scalar(value) else { continue }
      if StderrLogHandler.isControl(scalar) != (scalar.properties.generalCategory == .control) {
        Issue.record("U+\(String(value, radix: 16)) is taken for a control character wrongly")
        return
      }
    }
    let line = StderrLogHandler.format(
      level: .info, label: "l", message: "caf\u{E9} \u{85}next\u{7F}",
      metadata: ["k": "\u{9F}x", "w": "\u{E9}t\u{E9}"])
    #expect(line == #"info     l: café \u{85}next\u{7f} k="\u{9f}x" w=été"#)
  }

  @Test func bootstrapHandlers_WhenTheLevelChanges_FollowTheSharedLevel() {
    let pipe = LinePipe()
    let level = SharedLogLevel(.warning)
    var logger = Logger(label: "trialwatchd") { label in
      SystemdLogging.makeHandler(
        label: label, destination: .standardError, identifier: "trialwatchd", level: level,
        standardError: pipe.write)
    }
    logger.info("hidden at warning")
    level.level = .info
    logger.info("shown after a reload")
    #expect(pipe.readAvailable() == "info     trialwatchd: shown after a reload\n")
    // A logger that sets its own level no longer follows the shared one.
    logger.logLevel = .error
    level.level = .trace
    logger.warning("hidden: the logger chose error")
    logger.error("shown")
    #expect(pipe.readAvailable() == "error    trialwatchd: shown\n")
  }

  @Test func makeHandler_ForEachDestination_PicksItsBackend() throws {
    let journal = RecordingJournal()
    let level = SharedLogLevel(.info)
    let handler = SystemdLogging.makeHandler(
      label: "x", destination: .journal, identifier: "trialwatchd", level: level, journal: journal)
    #expect(handler is JournalLogHandler)
    Logger(label: "x", factory: { _ in handler }).info("to the journal")
    #expect(journal.sent.first?.fields.first == JournalField(name: "MESSAGE", value: "to the journal"))
    let console = SystemdLogging.makeHandler(
      label: "x", destination: .standardError, identifier: "trialwatchd", level: level, journal: journal)
    #expect(console is StderrLogHandler)
  }

  @Test func bootstrap_OnAConsole_LogsToStandardError() async {
    let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
      let destination = SystemdLogging.bootstrap(identifier: "trialwatchd", target: .console)
      #expect(destination == .standardError)
      Logger(label: "trialwatchd").notice("started", metadata: ["trials": "3"])
    }
    let text = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    #expect(text.contains("notice   trialwatchd: started trials=3\n"))
  }
}
