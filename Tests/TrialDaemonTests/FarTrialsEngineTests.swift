import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemon
import TrialDaemonTesting
import TrialEngine
import TrialStore

/// Far trials on the daemon's engine over LMDB, in virtual time: trials whose events fall due
/// more than two lookaheads (an hour each, the default) ahead are held by id and due time alone,
/// and read back from the store as they come near. Their events fire once each, on time, as
/// every other trial's; changes made while they are far hold.
@Suite struct FarTrialsEngineTests {
  static let day: TimeInterval = 86_400

  static func at(_ days: Double) -> Date { ControlFixture.start.addingTimeInterval(days * day) }

  static func start(
    _ parts: EngineParts, _ subject: String, endingOn end: Double, reminders: [Double] = []
  ) throws -> Trial {
    try parts.queue.sync {
      try parts.engine.perform(
        .start(subject: subject, end: .at(at(end)), reminders: reminders.map { .seconds($0 * day) }))
    }.trial
  }

  static func far(_ parts: EngineParts) -> (trials: Int, pending: Int) {
    parts.queue.sync { (parts.engine.planner.farTrialCount, parts.engine.planner.pendingEventCount) }
  }

  @Test func farTrials_ExtendedEndedOrPaused_FireOnceOnTimeOrNever() throws {
    let scratch = try TemporaryDirectory("far-engine")
    let parts = try EngineParts(
      repository: LMDBTrialRepository(directory: scratch.appending("store")), ids: [1, 2, 3, 4, 5],
      start: Self.at(0))
    defer { parts.close() }
    // A: day 10, a reminder 3 days before; B: day 5, extended to day 8; C: ended; D: paused;
    // E: ends within the hour, held in full from the start.
    let a = try Self.start(parts, "A", endingOn: 10, reminders: [3])
    let b = try Self.start(parts, "B", endingOn: 5)
    let c = try Self.start(parts, "C", endingOn: 6)
    let d = try Self.start(parts, "D", endingOn: 7)
    let e = try Self.start(parts, "E", endingOn: 0.02)
    // Far: A, B, C and D, with five events; E's expiry is held in full.
    #expect(Self.far(parts) == (4, 6))
    let extended = try parts.queue.sync {
      let extended = try parts.engine.perform(.extend(b.id, .to(Self.at(8)))).trial
      _ = try parts.engine.perform(.end(c.id, .converted))
      _ = try parts.engine.perform(.pause(.id(d.id)))
      return extended
    }
    #expect(Self.far(parts).trials == 2)
    // E's expiry, A's reminder, B's expiry, A's expiry; D's resume is not planned (no end to
    // its pause).
    #expect(Self.far(parts).pending == 4)
    let status = parts.queue.sync { parts.engine.status() }
    #expect(status.nextEvent?.id == e.events[0].id)

    parts.advance(by: 0.02 * Self.day)
    // D's pause was delivered when it paused.
    #expect(
      parts.fireDue().map(\.id) == [
        EventID(trialID: d.id, revision: 1, kind: .paused(left: .seconds(7 * Self.day))), e.events[0].id,
      ])
    // A's reminder comes next, and A is far: read from the store for the status.
    let next = parts.queue.sync { parts.engine.status() }
    #expect(next.nextEvent?.id == a.events[0].id)
    #expect(next.nextEvent?.due == Self.at(7))
    #expect(next.nextAttributes?.subject == "A")
    #expect(next.pendingEvents == 3)

    var fired: [EventObject] = []
    for _ in 0..<(12 * 24) {
      parts.advance(by: 3_600)
      fired += parts.fireDue()
    }
    #expect(fired.map(\.id) == [a.events[0].id, extended.events[0].id, a.events[1].id])
    for event in fired {
      #expect(event.lateness == nil, "\(event.id) fired late")
    }
    #expect(fired.map(\.takenAt) == [Self.at(7), Self.at(8), Self.at(10)])
    #expect(Self.far(parts) == (0, 0))
    #expect(try parts.storedTrials().map(\.state) == [.expired, .expired, .converted, .paused, .expired])
  }

  @Test func restartedOnFarTrials_TheyFireOnTime_OverdueOnesLateAtStart() throws {
    let scratch = try TemporaryDirectory("far-restart")
    let directory = scratch.appending("store")
    var parts = try EngineParts(
      repository: LMDBTrialRepository(directory: directory), ids: [1, 2, 3], start: Self.at(0))
    let a = try Self.start(parts, "A", endingOn: 2, reminders: [1])
    let b = try Self.start(parts, "B", endingOn: 4)
    let c = try Self.start(parts, "C", endingOn: 9, reminders: [2])
    parts.close()

    // Down from day 0 to day 3: A's reminder and expiry fall due meanwhile.
    parts = try EngineParts(repository: LMDBTrialRepository(directory: directory), ids: [], start: Self.at(3))
    defer { parts.close() }
    let atStart = parts.fireDue()
    #expect(Set(atStart.map(\.id)) == [a.events[0].id, a.events[1].id])
    #expect(atStart.allSatisfy { $0.takenAt == Self.at(3) })
    #expect(Self.far(parts) == (2, 3))
    var fired: [EventObject] = []
    for _ in 0..<(7 * 24) {
      parts.advance(by: 3_600)
      fired += parts.fireDue()
    }
    #expect(fired.map(\.id) == [b.events[0].id, c.events[0].id, c.events[1].id])
    #expect(fired.map(\.takenAt) == [Self.at(4), Self.at(7), Self.at(9)])
    #expect(fired.allSatisfy { $0.lateness == nil })
  }

  @Test func suspendedPastAFarTrialsEnd_ItFiresOnceAtResume() throws {
    let scratch = try TemporaryDirectory("far-suspend")
    let parts = try EngineParts(
      repository: LMDBTrialRepository(directory: scratch.appending("store")), ids: [1, 2], start: Self.at(0))
    defer { parts.close() }
    let a = try Self.start(parts, "A", endingOn: 3, reminders: [1])
    let b = try Self.start(parts, "B", endingOn: 30)
    #expect(Self.far(parts) == (2, 3))
    // Asleep from day 0 to day 5: no timer ran meanwhile.
    parts.jump(by: 5 * Self.day)
    let atResume = parts.fireDue()
    #expect(atResume.map(\.id) == [a.events[0].id, a.events[1].id])
    #expect(atResume.allSatisfy { $0.takenAt == Self.at(5) && $0.lateness != nil })
    #expect(Self.far(parts) == (1, 1))
    parts.jump(by: 25 * Self.day)
    #expect(parts.fireDue().map(\.id) == [b.events[0].id])
    parts.advance(by: 30 * Self.day)
    #expect(parts.fireDue().isEmpty)
  }

  /// The status names the far trial that comes first, read from the store once; extending it,
  /// even within the same second, or starting one that comes earlier, is seen at once.
  @Test func statusOfFarTrials_FollowsTheirChanges() throws {
    let scratch = try TemporaryDirectory("far-engine-status")
    let parts = try EngineParts(
      repository: LMDBTrialRepository(directory: scratch.appending("store")), ids: [1, 2, 3],
      start: Self.at(0))
    defer { parts.close() }
    let a = try Self.start(parts, "A", endingOn: 10)
    _ = try Self.start(parts, "B", endingOn: 12)
    func next() -> TrialEvent? { parts.queue.sync { parts.engine.status().nextEvent } }
    #expect(next() == a.events.last)
    let within = Self.at(10).addingTimeInterval(0.25)
    let extended = try parts.queue.sync { try parts.engine.perform(.extend(a.id, .to(within))).trial }
    #expect(next()?.id == extended.events.last?.id)
    #expect(next()?.due == within)
    let c = try Self.start(parts, "C", endingOn: 9)
    #expect(next() == c.events.last)
    #expect(Self.far(parts).trials == 3)
  }
}
