import Foundation
import TestSupport
import Testing
import TrialControl
import TrialDaemonTesting

#if canImport(Glibc)
  import Glibc
#endif

/// Labels with trialwatchctl against the real trialwatchd.
@Suite struct LabelCommandLineTests {
  @Test func labels_StartedShownFilteredChangedAndRemoved() throws {
    let daemon = try DaemonProcess()
    let env = try daemon.startReady()

    let started = try Ctl.run(
      ["start", "acme-42", "--duration", "30d", "--label", "customer=c-991", "--label", "tier=pro"],
      environment: env)
    #expect(started.status == 0, "\(started.errors)")
    #expect(started.output.contains("Labels     customer=c-991, tier=pro"), "\(started.output)")
    _ = try Ctl.run(["start", "other", "--duration", "30d", "--label", "tier=free"], environment: env)

    let status = try Ctl.run(["status", "acme-42", "--json"], environment: env)
    #expect(try status.trial()["labels"] as? [String: String] == ["customer": "c-991", "tier": "pro"])
    let listed = try Ctl.run(["list", "--label", "tier=pro"], environment: env)
    #expect(listed.status == 0 && listed.output.contains("acme-42") && !listed.output.contains("other"))

    let extended = try Ctl.run(
      ["extend", "acme-42", "--by", "1d", "--label", "tier=max", "--remove-label", "customer", "--json"],
      environment: env)
    #expect(try extended.trial()["labels"] as? [String: String] == ["tier": "max"])
    let ended = try Ctl.run(
      ["end", "acme-42", "--outcome", "converted", "--label", "converted_by=sales", "--json"],
      environment: env)
    #expect(try ended.trial()["labels"] as? [String: String] == ["tier": "max", "converted_by": "sales"])

    daemon.signal(SIGTERM)
    #expect(daemon.waitForExit() == 0)
  }

  @Test(arguments: [
    (["start", "s", "--label", "Tier=pro"], "--label: label \"Tier\" must start with a lower-case letter"),
    (["start", "s", "--label", "tier"], "--label: \"tier\" is not key=value"),
    (["start", "s", "--label", "a=1", "--label", "a=2"], "the label \"a\" is given twice"),
    (["list", "--label", "no-equals"], "--label: \"no-equals\" is not key=value"),
    (["extend", "s", "--by", "1d", "--remove-label", "9"], "--remove-label: label \"9\" must start"),
    (["end", "s", "--outcome", "converted", "--label", "a=1", "--remove-label", "a"], "also set or removed"),
  ])
  func labels_OutOfBounds_AreUsageErrorsNamingTheLabel(arguments: [String], message: String) throws {
    let run = try Ctl.run(arguments, environment: ["TRIALWATCH_SOCKET": "/nonexistent/socket"])
    #expect(run.status == 2, "\(run.errors)")
    #expect(run.errors.contains(message), "\(run.errors)")
  }
}
