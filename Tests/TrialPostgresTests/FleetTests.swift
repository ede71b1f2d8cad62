import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing
import TrialCore
import TrialTesting

@testable import TrialPostgres

/// Nodes of one fleet on one database, driven round by round: shares, takeovers, hand-offs
/// and the fence that makes a stale owner commit nothing.
@Suite struct FleetTests {
  static let shards = 8
  static let origin = Date(timeIntervalSince1970: 1_750_000_000)

  /// One node: its membership (joined: one round made) and its store.
  struct Node {
    let membership: FleetMembership
    let repository: PostgresTrialRepository

    init(_ name: String, on conninfo: String, lease: Duration = .seconds(30)) throws {
      let map = ShardMap(count: FleetTests.shards)
      let ownership = ShardOwnership()
      var settings = FleetMembership.Settings()
      settings.lease = lease
      membership = FleetMembership(
        conninfo: conninfo, name: name, version: "test", shards: map, ownership: ownership, settings: settings
      )
      try membership.join()
      repository = try PostgresTrialRepository(
        conninfo: conninfo, node: name, shards: map, ownership: ownership, refusesEarlyFires: false)
    }

    var owned: Set<Int> { Set(repository.ownership.owned.keys) }
  }

  static func database() throws -> String {
    let server = try PostgresServer.shared()
    let conninfo = server.conninfo(database: try server.createDatabase())
    try PostgresSchema.prepare(on: try PGConnection(conninfo: conninfo), shards: shards)
    return conninfo
  }

  static func owners(_ conninfo: String) throws -> [String?] {
    let result = try PGConnection(conninfo: conninfo).execute(
      "SELECT n.name FROM trialwatch.shard s LEFT JOIN trialwatch.node n ON n.node_id = s.owner ORDER BY s.shard"
    )
    return (0..<result.rows).map { result.string($0, 0) }
  }

  /// Nodes `a` and `b` on `conninfo`, after a round each.
  static func twoNodes(on conninfo: String) throws -> (a: Node, b: Node) {
    let a = try Node("a", on: conninfo)
    let b = try Node("b", on: conninfo)
    try a.membership.round()
    try b.membership.round()
    return (a, b)
  }

  /// `b` killed: its connection closes with the process, so its life lock goes, though its
  /// lease runs on; `a` notices at its next round and claims every shard.
  static func kill(_ b: Node, noticedBy a: Node) throws {
    try b.membership.abandon()
    try a.membership.round()
    #expect(a.owned == Set(0..<shards))
    #expect(a.membership.members.first { $0.name == "b" }?.alive == false)
  }

  @Test func firstNode_Joining_ClaimsEveryShard() throws {
    let conninfo = try Self.database()
    let a = try Node("a", on: conninfo)
    #expect(a.owned == Set(0..<Self.shards))
    #expect(try Self.owners(conninfo) == Array(repeating: "a", count: Self.shards))
  }

  @Test func secondNode_Joining_IsHandedHalfTheShards() throws {
    let conninfo = try Self.database()
    let a = try Node("a", on: conninfo)
    let b = try Node("b", on: conninfo)
    #expect(b.owned.isEmpty)
    try a.membership.round()
    try b.membership.round()
    #expect(a.owned.count == 4 && b.owned.count == 4)
    #expect(a.owned.isDisjoint(with: b.owned))
    let history = try PGConnection(conninfo: conninfo).execute(
      "SELECT count(*) FROM trialwatch.shard_history WHERE owner = 'b' AND reason LIKE 'handed over%'")
    #expect(history.int(0, 0) == 4)
  }

  @Test func killedNode_IsNoticedAtOnce_AndItsShardsClaimed() throws {
    let (a, b) = try Self.twoNodes(on: try Self.database())
    try Self.kill(b, noticedBy: a)
  }

  @Test func killedNode_IsNotKeptAlive_ByANodeOfAnotherFleetWithItsNumber() throws {
    // Two fleets on one server, each in its own database: their nodes are numbered alike.
    let (a, b) = try Self.twoNodes(on: try Self.database())
    let other = try Self.database()
    let otherA = try Node("other-a", on: other)
    let otherB = try Node("other-b", on: other)
    try otherA.membership.round()
    try otherB.membership.round()
    try Self.kill(b, noticedBy: a)
    try otherA.membership.round()
    #expect(otherA.membership.members.first { $0.name == "other-b" }?.alive == true)
  }

  @Test func leavingNode_HandsEveryShardToTheOthers() throws {
    let conninfo = try Self.database()
    let (a, b) = try Self.twoNodes(on: conninfo)
    b.membership.leave()
    #expect(try Self.owners(conninfo) == Array(repeating: "a", count: Self.shards))
    try a.membership.round()
    #expect(a.owned == Set(0..<Self.shards))
  }

  @Test func nodeName_InUseByARunningNode_IsRefused() throws {
    let conninfo = try Self.database()
    let a = try Node("a", on: conninfo)
    let error = try #require(throws: PostgresStoreError.self) { try Node("a", on: conninfo) }
    #expect(error == .nodeNameInUse("a"))
    #expect(a.owned.count == Self.shards)
  }

  @Test func staleOwner_AfterItsLeaseRanOut_CommitsNothingAndTheNewOwnerFiresOnce() throws {
    let conninfo = try Self.database()
    let a = try Node("a", on: conninfo)
    let started = try a.repository.startTrial(
      subject: "acme-1", endDate: Self.origin.addingTimeInterval(60), reminders: .none, now: Self.origin,
      ids: SequenceTrialIDGenerator([0x1234]))
    let expiry = DueEvent(
      event: started.trial.events[0], takenAt: Self.origin.addingTimeInterval(61), disposition: .fire,
      isLate: false)
    // a pauses: its lease runs out; b takes every shard; a has not noticed.
    let b = try Node("b", on: conninfo)
    try PGConnection(conninfo: conninfo).execute(
      "UPDATE trialwatch.node SET lease_until = clock_timestamp() - interval '1 second' WHERE name = 'a'")
    try b.membership.round()
    #expect(b.owned == Set(0..<Self.shards))
    #expect(a.owned == Set(0..<Self.shards))
    #expect(try a.repository.commit([expiry], now: expiry.takenAt).isEmpty)
    #expect(try b.repository.commit([expiry], now: expiry.takenAt).map(\.id) == [expiry.event.id])
    #expect(try b.repository.commit([expiry], now: expiry.takenAt).isEmpty)
    let ledger = try PGConnection(conninfo: conninfo).execute(
      "SELECT node, count(*) FROM trialwatch.ledger GROUP BY node")
    #expect(ledger.rows == 1 && ledger.string(0, 0) == "b" && ledger.int(0, 1) == 1)
    // a resumes: its round finds its shards gone, and the fleet balances again.
    try a.membership.round()
    #expect(a.owned.isEmpty)
    try b.membership.round()
    try a.membership.round()
    #expect(a.owned.count == 4 && b.owned.count == 4)
  }

  @Test func writeOnOneNode_WakesTheOtherWithTheTrialIDs() throws {
    let conninfo = try Self.database()
    let a = try Node("a", on: conninfo)
    let b = try Node("b", on: conninfo)
    let heard = Heard()
    a.membership.delegate = heard
    a.membership.start()
    defer { a.membership.leave() }
    let started = try b.repository.startTrial(
      subject: "acme-2", endDate: Self.origin.addingTimeInterval(60), reminders: .none, now: Self.origin,
      ids: SequenceTrialIDGenerator([0x99]))
    #expect(heard.arrived.wait(timeout: .now() + 10) == .success)
    #expect(heard.trials.withLock { $0 } == [started.trial.id])
  }
}

/// A delegate that records the wake-ups.
final class Heard: FleetMembershipDelegate {
  let trials = Mutex<[TrialID]>([])
  let arrived = DispatchSemaphore(value: 0)

  func fleetShardsChanged(gained: Set<Int>, lost: Set<Int>) {}
  func fleetTrialsChanged(_ ids: [TrialID]) {
    trials.withLock { $0 += ids }
    arrived.signal()
  }
  func fleetLogAdvanced() {}
  func fleetReconnected() {}
  func fleetRoundFailed(_ error: (any Error)?) {}
  func fleetNodesDied(_ names: Set<String>) {}
}
