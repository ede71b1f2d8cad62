import Foundation
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting

@testable import TrialDaemon

/// The server against a Varlink client no one here wrote: the reference Python implementation
/// (`pip install varlink`; `make test` installs it).
@Suite struct InteropTests {
  static let script = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("interop/varlink_interop.py").path

  /// Reads stdout line by line, as the script prints its steps.
  final class Lines {
    private let handle: FileHandle
    private var buffer = Data()

    init(_ handle: FileHandle) {
      self.handle = handle
    }

    func next() -> String? {
      while true {
        if let newline = buffer.firstIndex(of: 0x0A) {
          let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
          buffer.removeSubrange(buffer.startIndex...newline)
          return line
        }
        let chunk = handle.availableData
        if chunk.isEmpty { return nil }
        buffer.append(chunk)
      }
    }
  }

  @Test(arguments: BackendKind.allCases)
  func theReferencePythonClientWorks(backend: BackendKind) throws {
    let check = Process()
    check.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    check.arguments = ["python3", "-c", "import varlink"]
    try check.run()
    check.waitUntilExit()
    try #require(
      check.terminationStatus == 0,
      "the reference Varlink implementation is missing: run `python3 -m pip install varlink` (make test does)"
    )

    let fixture = try ServerFixture(backend: backend, ids: [0x1A7E])
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", Self.script, fixture.socketPath]
    let output = Pipe()
    let errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    try process.run()
    defer { if process.isRunning { process.terminate() } }

    let lines = Lines(output.fileHandleForReading)
    var steps: [String: JSONObject] = [:]
    while let line = lines.next() {
      guard case .object(let object) = try JSONValue.parse(line), let step = object["step"]?.stringValue
      else {
        Issue.record("unexpected output: \(line)")
        break
      }
      steps[step] = object
      if step == "watching" {
        // The watch is in place: fire the trial's reminder.
        fixture.advance(by: 86_400)
        #expect(try fixture.fireDue().count == 1)
      }
    }
    process.waitUntilExit()
    let errorText = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    #expect(process.terminationStatus == 0, "\(errorText)")

    guard case .object(let info)? = steps["info"]?["info"] else {
      Issue.record("no GetInfo step: \(errorText)")
      return
    }
    #expect(info["product"] == "trialwatchd")
    #expect(info["interfaces"] == ["org.varlink.service", "io.trialwatch", "io.trialwatch.Trials"])

    guard case .object(let started)? = steps["start"]?["trial"] else {
      Issue.record("no StartTrial step")
      return
    }
    let trial = try TrialObject(json: started)
    #expect(trial.id == TrialID(0x1A7E))
    #expect(trial.endsAt == ServerFixture.start.addingTimeInterval(2 * 86_400))
    #expect(trial.reminders == [.days(1)])
    #expect(steps["get"]?["trial"] == .object(started))

    #expect(steps["not-found"]?["error"] == "io.trialwatch.TrialNotFound")
    #expect(steps["not-found"]?["parameters"] == .object(["id": "00000000deadbeef"]))
    #expect(steps["already-active"]?["error"] == "io.trialwatch.SubjectAlreadyActive")
    #expect(steps["invalid"]?["error"] == "org.varlink.service.InvalidParameter")
    #expect(steps["no-interface"]?["error"] == "org.varlink.service.InterfaceNotFound")
    guard case .object(let listed)? = steps["list"]?["reply"] else {
      Issue.record("no ListTrials step")
      return
    }
    #expect(try ListTrialsReply(json: listed).trials.map(\.id) == [TrialID(0x1A7E)])

    #expect(steps["watching"]?["first"] == .object([:]))
    guard case .object(let reply)? = steps["event"]?["reply"] else {
      Issue.record("no Watch event")
      return
    }
    let event = try #require(try WatchReply(json: reply).event)
    #expect(event.kind == .reminder)
    #expect(event.subject == "interop-1")
    #expect(event.state == .fired)
  }
}
