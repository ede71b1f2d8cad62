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

  @Test(arguments: StoreKind.allCases)
  func referencePythonClient_Works(store: StoreKind) throws {
    let check = Process()
    check.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    check.arguments = ["python3", "-c", "import varlink"]
    try check.run()
    check.waitUntilExit()
    try #require(
      check.terminationStatus == 0,
      "the reference Varlink implementation is missing: run `python3 -m pip install varlink` (make test does)"
    )

    let fixture = try ControlFixture(store: store, ids: [0x1A7E])
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
    var steps: [String: [String: Any]] = [:]
    while let line = lines.next() {
      guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
        let step = object["step"] as? String
      else {
        Issue.record("unexpected output: \(line)")
        break
      }
      steps[step] = object
      if step == "watching" {
        // The watch is in place: fire the trial's reminder.
        fixture.advance(by: 86_400)
        #expect(fixture.fireDue().count == 1)
      }
    }
    process.waitUntilExit()
    let errorText = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    #expect(process.terminationStatus == 0, "\(errorText)")

    func value<T: Decodable>(_ step: String, _ key: String, as type: T.Type) throws -> T {
      let object = try #require(steps[step]?[key], "no \(step) step: \(errorText)")
      let data = try JSONSerialization.data(withJSONObject: object)
      return try WireCoding.makeDecoder().decode(T.self, from: data)
    }
    let info = try value("info", "info", as: GetInfoReply.self)
    #expect(info.product == "trialwatchd")
    #expect(info.interfaces == ["org.varlink.service", "io.trialwatch", "io.trialwatch.Trials"])

    let trial = try value("start", "trial", as: TrialObject.self)
    #expect(trial.id == TrialID(0x1A7E))
    #expect(trial.endsAt == ControlFixture.start.addingTimeInterval(2 * 86_400))
    #expect(trial.reminders.map(\.duration) == [.days(1)])
    #expect(try value("get", "trial", as: TrialObject.self) == trial)

    #expect(steps["not-found"]?["error"] as? String == "io.trialwatch.TrialNotFound")
    #expect(
      try value("not-found", "parameters", as: ControlError.Parameters.self) == .init(id: "00000000deadbeef"))
    #expect(steps["already-active"]?["error"] as? String == "io.trialwatch.SubjectAlreadyActive")
    #expect(steps["invalid"]?["error"] as? String == "org.varlink.service.InvalidParameter")
    #expect(steps["no-interface"]?["error"] as? String == "org.varlink.service.InterfaceNotFound")
    #expect(try value("list", "reply", as: ListTrialsReply.self).trials.map(\.id) == [TrialID(0x1A7E)])

    #expect((steps["watching"]?["first"] as? [String: Any])?.isEmpty == true)
    let event = try #require(try value("event", "reply", as: WatchReply.self).event)
    #expect(event.kind == .reminder)
    #expect(event.subject == "interop-1")
    #expect(event.state == .fired)
  }
}
