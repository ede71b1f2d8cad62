import Foundation
import Logging
import SystemdTesting
import TestSupport
import Testing

@testable import Systemd

@Suite struct JournalFieldTests {
  @Test(arguments: ["MESSAGE", "TRIAL_ID", "A", "X1_2", String(repeating: "N", count: 64)])
  func fieldName_ThatIsValid_HasNoProblem(name: String) {
    #expect(JournalField.problem(withName: name) == nil)
  }

  @Test(arguments: [
    ("", "field name must not be empty"),
    ("message", "field name \"message\" may only contain A-Z, 0-9 and \"_\""),
    ("TRIAL-ID", "field name \"TRIAL-ID\" may only contain A-Z, 0-9 and \"_\""),
    ("ÄRGER", "field name \"ÄRGER\" may only contain A-Z, 0-9 and \"_\""),
    ("_PID", "field name \"_PID\" must not start with \"_\" (reserved for journald)"),
    ("1ST", "field name \"1ST\" must not start with a digit"),
    (
      String(repeating: "N", count: 65),
      "field name \"\(String(repeating: "N", count: 65))\" is longer than 64 characters"
    ),
  ])
  func fieldName_ThatIsInvalid_HasItsProblemNamed(name: String, problem: String) {
    #expect(JournalField.problem(withName: name) == problem)
  }

  @Test func fieldNameForKey_OfAnyKey_IsAValidFieldName() {
    #expect(JournalField.fieldName(forKey: "trial-id") == "TRIAL_ID")
    #expect(JournalField.fieldName(forKey: "_private") == "PRIVATE")
    #expect(JournalField.fieldName(forKey: "2fa") == "META_2FA")
    #expect(JournalField.fieldName(forKey: "") == "META_")
    #expect(JournalField.fieldName(forKey: "größe") == "GR____E")
    #expect(JournalField.fieldName(forKey: String(repeating: "k", count: 80)).count == 64)
    for key in ["trial-id", "_private", "2fa", "", "größe", "a.b.c", "x y"] {
      #expect(JournalField.problem(withName: JournalField.fieldName(forKey: key)) == nil, "\(key)")
    }
  }
}

/// The real `sd_journal_sendv`, read back from journald's socket bound by the test.
@Suite(.serialized) struct SystemdJournalTests {
  @Test func send_OfFields_WritesExactlyThoseInOrder() throws {
    let journald = try FakeJournald.start()
    defer { journald.stop() }
    let marker = JournalMarker()
    let fields = journalFields([
      "MESSAGE": "Trial acme-42 expired",
      "PRIORITY": "5",
      "MULTI_LINE": "first line\nsecond line\n",
      "UNICODE": "Größe ✓",
      "EMPTY": "",
      "WITH_EQUALS": "a=b=c",
      marker.name: marker.value,
    ])
    try SystemdJournal().send(fields)
    let entry = try #require(try journald.receiveEntry(withMarker: marker))
    // libsystemd adds SYSLOG_IDENTIFIER (the program's name) when the entry has none.
    let program = (CommandLine.arguments[0] as NSString).lastPathComponent
    #expect(entry.map(\.0) == fields.map(\.name) + ["SYSLOG_IDENTIFIER"])
    #expect(entry.map(\.1) == fields.map(\.value) + [program])
  }

  @Test func send_WithAnInvalidFieldName_SendsNothing() throws {
    let journald = try FakeJournald.start()
    defer { journald.stop() }
    let marker = JournalMarker()
    let error = #expect(throws: SystemdError.invalidJournalField) {
      try SystemdJournal().send([
        JournalField(name: marker.name, value: marker.value),
        JournalField(name: "lower", value: "x"),
      ])
    }
    #expect(error?.description == "field name \"lower\" may only contain A-Z, 0-9 and \"_\"")
    // Nothing of the rejected entry arrives before a valid one sent after it.
    let second = JournalMarker()
    try SystemdJournal().send([JournalField(name: second.name, value: second.value)])
    var before: [[(String, String)]] = []
    var sawSecond = false
    while !sawSecond, let datagram = try journald.socket.receive() {
      let entry = try NativeJournalProtocol.parse(datagram)
      sawSecond = entry.first?.1 == second.value
      if !sawSecond { before.append(entry) }
    }
    #expect(sawSecond)
    #expect(!before.contains { $0.contains { $0.1 == marker.value } })
  }

  @Test func journalLogHandler_WhenLogging_WritesThroughSendv() throws {
    let journald = try FakeJournald.start()
    defer { journald.stop() }
    let marker = JournalMarker()
    var handler = JournalLogHandler(label: "io.trialwatch.test", identifier: "trialwatchd")
    handler.metadata["test-marker"] = .string(marker.value)
    let logger = Logger(label: "io.trialwatch.test", factory: { _ in handler })
    let line: UInt = #line + 1
    logger.warning("store is \("slow")", metadata: ["trial-id": "00000000000000ff"])
    let entry = try #require(try journald.receiveEntry(withMarker: marker))
    #expect(
      entry.map(\.0) == [
        "MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER", "LOGGER", "CODE_FILE", "CODE_LINE", "CODE_FUNC",
        "TEST_MARKER", "TRIAL_ID",
      ])
    #expect(
      entry.map(\.1) == [
        "store is slow", "4", "trialwatchd", "io.trialwatch.test", "SystemdTests/JournalTests.swift",
        String(line), "journalLogHandler_WhenLogging_WritesThroughSendv()", marker.value, "00000000000000ff",
      ])
  }
}

@Suite struct JournalDestinationTests {
  @Test func autoDestination_WhenStandardErrorIsTheJournalStream_IsTheJournal() {
    let stream = LinePipe()
    let environment = ["JOURNAL_STREAM": stream.streamValue]
    #expect(JournalDestination.isJournalStream(stream.write, environment: environment))
    #expect(
      JournalDestination.detect(target: .auto, environment: environment, standardError: stream.write)
        == .journal)
  }

  @Test func autoDestination_WhenStandardErrorIsElsewhere_IsStandardError() {
    let stream = LinePipe()
    let other = LinePipe()
    // A shell started from the service inherits JOURNAL_STREAM, but its stderr is a terminal.
    let environment = ["JOURNAL_STREAM": other.streamValue]
    #expect(
      JournalDestination.detect(target: .auto, environment: environment, standardError: stream.write)
        == .standardError)
    #expect(
      JournalDestination.detect(target: .auto, environment: [:], standardError: stream.write)
        == .standardError)
  }

  @Test(arguments: ["", "12", "a:b", "1:2:3", ":5", "-1:3"])
  func journalStream_ThatIsMalformed_IsNotTheJournal(value: String) {
    let stream = LinePipe()
    #expect(!JournalDestination.isJournalStream(stream.write, environment: ["JOURNAL_STREAM": value]))
  }

  @Test func journalStream_OfAnInvalidStandardError_IsNotTheJournal() {
    let stream = LinePipe()
    #expect(!JournalDestination.isJournalStream(-1, environment: ["JOURNAL_STREAM": stream.streamValue]))
  }

  @Test func consoleDestination_Always_IsStandardError() {
    let stream = LinePipe()
    let environment = ["JOURNAL_STREAM": stream.streamValue]
    #expect(
      JournalDestination.detect(target: .console, environment: environment, standardError: stream.write)
        == .standardError)
  }

  @Test func journalDestination_WhenRequested_NeedsJournaldsSocket() throws {
    let socket = try UnixDatagramSocket.temporary(name: "socket")
    defer { socket.close() }
    #expect(
      JournalDestination.detect(target: .journal, environment: [:], journalSocket: socket.path) == .journal)
    #expect(
      JournalDestination.detect(target: .journal, environment: [:], journalSocket: socket.path + ".missing")
        == .standardError)
    // A regular file where the socket should be is not journald.
    let file = socket.path + ".file"
    #expect(FileManager.default.createFile(atPath: file, contents: Data()))
    defer { unlink(file) }
    #expect(
      JournalDestination.detect(target: .journal, environment: [:], journalSocket: file) == .standardError)
  }

  @Test func journalSocketPath_ByDefault_IsJournaldsNativeSocket() {
    #expect(JournalDestination.journalSocketPath == "/run/systemd/journal/socket")
  }
}
