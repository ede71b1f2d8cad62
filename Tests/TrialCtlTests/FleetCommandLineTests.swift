import Foundation
import Testing
import TrialControl
import TrialCore
import TrialDaemon
import TrialDaemonTesting
import TrialEngine
import TrialTesting

@testable import TrialCtl

/// `fleet`, `daemon-status` on a fleet node, and `export`, through the real binary.
@Suite struct FleetCommandLineTests {
  static let fleet = FleetStatus.twoNodes

  func fleetFixture() throws -> ControlFixture {
    try ControlFixture(ids: Array(1...50), start: SystemWallClock().now(), fleetStatus: { Self.fleet })
  }

  @Test func fleet_OnASingleHost_SaysSoAndFails() throws {
    let fixture = try ctlFixture()
    let run = try Ctl.run(["fleet", "--socket", fixture.socketPath])
    #expect(run.status == 1)
    #expect(run.output.isEmpty)
    #expect(
      run.errors
        == "trialwatchctl: not a fleet: this trialwatchd stores its trials on this host (Backend=lmdb)\n")
  }

  @Test func fleet_OfAFleetNode_ListsEveryNode() throws {
    let fixture = try fleetFixture()
    let run = try Ctl.run(["fleet", "--socket", fixture.socketPath])
    #expect(run.status == 0, "\(run.errors)")
    #expect(
      run.lines == [
        "Fleet of 2 nodes (1 alive), 16 shards; answered by node-a",
        "NODE    STATE  SHARDS  LEASE AGE  LAG  VERSION",
        "node-a  alive  9       2s         0s   0.2.0",
        "node-b  dead   7       1min 35s   -    -",
      ])
    let json = try Ctl.run(["fleet", "--json", "--socket", fixture.socketPath])
    let reply = try WireCoding.makeDecoder().decode(GetFleetReply.self, from: Data(json.output.utf8))
    #expect(reply.fleet?.nodes.map(\.name) == ["node-a", "node-b"])
  }

  @Test func daemonStatus_OfAFleetNode_ShowsItsShardsAndTheOtherNodes() throws {
    let fixture = try fleetFixture()
    let run = try Ctl.run(["daemon-status", "--socket", fixture.socketPath])
    #expect(run.status == 0, "\(run.errors)")
    #expect(
      Array(run.lines.suffix(3)) == [
        "  Fleet node      node-a",
        "  Shards          0-3,9,12-15 (9 of 16)",
        "  Other node      node-b: dead, 7 shards, lease renewed 1min 35s ago",
      ])
    let single = try Ctl.run(["daemon-status", "--socket", try ctlFixture().socketPath])
    #expect(!single.output.contains("Fleet"))
  }

  @Test func export_OfTrials_WritesOneRecordPerLine() throws {
    let fixture = try ctlFixture()
    let client = try fixture.client()
    for subject in ["a", "b", "c"] { _ = try client.startTrial(StartTrialParameters(subject: subject)) }
    let run = try Ctl.run(["export", "--limit", "2", "--socket", fixture.socketPath])
    #expect(run.status == 0, "\(run.errors)")
    #expect(run.lines.count == 3)
    // The daemon's clock is the system's: times are exported to the microsecond.
    #expect(run.lines == (try fixture.engine.storedTrials()).map { ExportRecord($0).jsonLine })
    #expect(run.lines.allSatisfy { $0.hasPrefix(#"{"trial":{"#) })
    #expect(run.errors == "exported 3 trials and 0 ledger entries\n")
    let bad = try Ctl.run(["export", "--limit", "0", "--socket", fixture.socketPath])
    #expect(bad.status == 2)
  }
}

@Suite struct FleetPresenterTests {
  @Test func present_OfAFleet_MakesOneRowPerNode() {
    let spy = SpyOutput()
    let presenter = TrialPresenter(
      output: spy, clock: StaticWallClock(PresenterTests.now), timeZone: PresenterTests.utc,
      locale: PresenterTests.posix)
    let fleet = FleetObject(
      node: "b", shards: [1, 0, 2], shardCount: 4,
      nodes: [
        FleetNodeObject(name: "a", alive: true, shards: 1, leaseAge: .milliseconds(1_500), lag: .seconds(75)),
        FleetNodeObject(name: "b", alive: true, shards: 3, version: "0.1.0"),
      ])
    presenter.present(fleet: fleet)
    #expect(spy.lists.first?.title == "Fleet of 2 nodes (2 alive), 4 shards; answered by b")
    #expect(
      spy.lists.first?.table.rows == [
        ["a", "alive", "1", "1s", "1min 15s", "-"], ["b", "alive", "3", "-", "-", "0.1.0"],
      ])
    #expect(
      presenter.fleetDetails(fleet).map(\.value) == [
        "b", "0-2 (3 of 4)", "a: alive, 1 shard, lease renewed 1s ago, lag 1min 15s",
      ])
  }
}
