import Foundation
import TestSupport
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

  @Test(arguments: StoreKind.allCases)
  func referencePythonClient_Works(store: StoreKind) throws {
    let check = try ChildProcess.run(.path("/usr/bin/env"), ["python3", "-c", "import varlink"])
    try #require(
      check.status == .exited(0),
      "the reference Varlink implementation is missing: run `python3 -m pip install varlink` (make test does)"
    )

    let fixture = try ControlFixture(store: store, ids: [0x1A7E])
    let process = try ChildProcess(.path("/usr/bin/env"), ["python3", Self.script, fixture.socketPath])
    let deadline = ContinuousClock.now.advanced(by: .seconds(60))
    var steps: [String: [String: Any]] = [:]
    while let line = process.readLine(until: deadline).line {
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
    let errorText = process.readRest(.errors)
    #expect(process.wait() == .exited(0), "\(errorText)")

    func value<T: Decodable>(_ step: String, _ key: String, as type: T.Type) throws -> T {
      let object = try #require(steps[step]?[key], "no \(step) step: \(errorText)")
      let data = try JSONSerialization.data(withJSONObject: object)
      return try WireCoding.makeDecoder().decode(T.self, from: data)
    }
    let info = try value("info", "info", as: GetInfoReply.self)
    #expect(info.product == "trialwatchd")
    #expect(
      info.interfaces == [
        "org.varlink.service", "io.trialwatch", "io.trialwatch.Trials", "io.systemd.Metrics",
      ])

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

    let listed = try value("metrics", "listed", as: [MetricReply].self)
    #expect(
      listed.contains(
        MetricReply(name: "io.trialwatch.trials", value: .integer(1), fields: ["state": "active"])))
    #expect(listed.contains(MetricReply(name: "io.trialwatch.build_info", value: .text("1.2.3-test"))))
    let described = try value("families", "described", as: [MetricFamilyReply].self)
    #expect(described.map(\.name) == MetricFamily.allCases.map(\.name))
    #expect(Set(listed.map(\.name)).isSubset(of: described.map(\.name)))
    #expect(steps["no-metric"]?["error"] as? String == "io.systemd.Metrics.NoSuchMetric")
    #expect(
      try value("no-metric", "parameters", as: ControlError.Parameters.self)
        == .init(name: "io.trialwatch.nothing"))

    #expect((steps["watching"]?["first"] as? [String: Any])?.isEmpty == true)
    let event = try #require(try value("event", "reply", as: WatchReply.self).event)
    #expect(event.kind == .reminder)
    #expect(event.subject == "interop-1")
    #expect(event.state == .fired)
  }
}
