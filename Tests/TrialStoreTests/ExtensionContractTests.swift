import Foundation
import TestSupport
import Testing
import TrialCore
import TrialTesting

@testable import TrialStore

/// Extension limits on every store: the count a trial keeps (written, read back after a
/// reopen, as a restarted daemon reads it), each limit refusing with the numbers a caller
/// needs and nothing changed, and a store that verifies clean throughout.
@Suite struct ExtensionContractTests {
  /// The Unraid programme: 15 days, extended at most twice, 60 days in all.
  static let defaults = TrialDefaults(
    length: .days(5), reminders: .none,
    plans: [
      "unraid": TrialPlan(
        name: "unraid", length: .days(15), reminders: try! ReminderSchedule([.days(3)]), maxExtensions: 2,
        maxLength: .days(60)),
      "open": TrialPlan(name: "open", length: .days(15), reminders: .none),
    ])

  @discardableResult
  private func apply(
    _ command: TrialCommand, on store: Subject, at days: Double, id: UInt64 = 0x80,
    defaults: TrialDefaults = Self.defaults
  ) throws -> Trial {
    try store.repository.write { txn in
      try TrialBook.apply(
        command, in: txn, now: origin.addingTimeInterval(days * day), defaults: defaults,
        ids: SequenceTrialIDGenerator([id]), folding: SubjectFolding { $0 })
    }.trial
  }

  private func refusal(_ body: () throws -> Void) -> ExtensionRefusal? {
    let error = #expect(throws: TrialError.self) { try body() }
    guard case .extensionRefused(let refusal)? = error?.code else { return nil }
    return refusal
  }

  /// With the wall clock stepped back before a trial's start, a new end in the future may still
  /// lie before the start: refused, as a trial never ends before it starts.
  @Test func newEndBeforeTheStart_IsRefused() throws {
    let store = try Subject(.memory)
    let started = try apply(try .start(subject: "acme-81", plan: "open"), on: store, at: 10)
    let error = #expect(throws: TrialError.self) {
      try apply(try .extend(started.id, .to(origin + 9 * day)), on: store, at: 8)
    }
    #expect(
      error?.code
        == .invalidParameter(
          .end, problem: "the new end must lie after the trial's start (\(RFC3339.format(origin + 10 * day)))"
        ))
    #expect(try store.repository.read { try $0.trial(started.id) } == started)
  }

  @Test(arguments: StoreKind.allCases)
  func extensions_AreCounted_AndKeptAcrossAReopen(kind: StoreKind) throws {
    let store = try Subject(kind)
    let started = try apply(try .start(subject: "acme-80", plan: "unraid"), on: store, at: 0)
    #expect(started.extensions == 0)
    let once = try apply(try .extend(started.id, .by(.days(15))), on: store, at: 1)
    #expect(once.extensions == 1 && once.period.endDate == origin + 30 * day && once.revision == 2)
    // A move earlier is no extension: neither counted nor refused.
    let earlier = try apply(try .extend(started.id, .to(origin + 29 * day)), on: store, at: 2)
    #expect(earlier.extensions == 1 && earlier.revision == 3)
    let report = try store.reopen()
    #expect(report?.isClean != false, "\(report?.problems.prefix(3) ?? [])")
    #expect(try store.repository.trial(started.id) == earlier)

    let twice = try apply(try .extend(started.id, .by(.days(1))), on: store, at: 3)
    #expect(twice.extensions == 2)
    // Pausing and resuming keep the count, and a resume is not an extension.
    _ = try apply(try .pause(.id(started.id)), on: store, at: 4)
    let resumed = try apply(try .resume(.id(started.id)), on: store, at: 6)
    #expect(resumed.extensions == 2 && resumed.period.endDate == origin + 32 * day)
    let ended = try apply(.end(started.id, .converted), on: store, at: 7)
    #expect(ended.extensions == 2)
    #expect(try store.reopen()?.isClean != false)
    #expect(try store.repository.trial(started.id) == ended)
  }

  @Test(arguments: StoreKind.allCases)
  func maxExtensions_RefusesAThird_ChangingNothing(kind: StoreKind) throws {
    let store = try Subject(kind)
    let started = try apply(try .start(subject: "acme-81", plan: "unraid"), on: store, at: 0, id: 0x81)
    _ = try apply(try .extend(started.id, .by(.days(15))), on: store, at: 1)
    let twice = try apply(try .extend(started.id, .by(.days(15))), on: store, at: 2)
    #expect(twice.extensions == 2 && twice.period.endDate == origin + 45 * day)

    let refused = refusal {
      try apply(try .extend(started.id, .by(.days(1)), labels: ["note": "third"]), on: store, at: 3)
    }
    #expect(
      refused
        == ExtensionRefusal(
          limit: .maxExtensions, trial: started.id, plan: "unraid", extensions: 2, maxExtensions: 2,
          maxLength: .days(60), latestEnd: origin + 60 * day, requestedEnd: origin + 46 * day))
    #expect(try store.repository.trial(started.id) == twice)
    #expect(try store.reopen()?.isClean != false)
    #expect(try store.repository.trial(started.id) == twice)
    // A move earlier is still allowed, and not counted.
    let earlier = try apply(try .extend(started.id, .to(origin + 40 * day)), on: store, at: 3)
    #expect(earlier.extensions == 2 && earlier.period.endDate == origin + 40 * day)
  }

  @Test(arguments: StoreKind.allCases)
  func maxLength_RefusesAnEndBeyondIt_PausedTimeIncluded(kind: StoreKind) throws {
    let store = try Subject(kind)
    let started = try apply(try .start(subject: "acme-82", plan: "unraid"), on: store, at: 0, id: 0x82)
    let refused = refusal {
      try apply(try .extend(started.id, .to(origin + 61 * day), labels: ["note": "x"]), on: store, at: 1)
    }
    #expect(refused?.limit == .maxLength && refused?.extensions == 0)
    #expect(refused?.latestEnd == origin + 60 * day && refused?.requestedEnd == origin + 61 * day)
    #expect(try store.repository.trial(started.id) == started)
    // To the latest end allowed, exactly: one extension.
    let full = try apply(try .extend(started.id, .to(origin + 60 * day)), on: store, at: 1)
    #expect(full.extensions == 1)
    // A pause of 10 days, then a resume: the end moves beyond MaxLength= (not refused) ...
    _ = try apply(try .pause(.id(started.id)), on: store, at: 2)
    let resumed = try apply(try .resume(.id(started.id)), on: store, at: 12)
    #expect(resumed.period.endDate == origin + 70 * day && resumed.extensions == 1)
    // ... and any extension after is refused, the paused time counting in the length.
    let after = refusal { try apply(try .extend(started.id, .by(.seconds(1))), on: store, at: 13) }
    #expect(after?.limit == .maxLength && after?.latestEnd == origin + 60 * day)
    #expect(try store.repository.trial(started.id) == resumed)
  }

  @Test(arguments: StoreKind.allCases)
  func limits_AreThePlansAsLoadedNow(kind: StoreKind) throws {
    let store = try Subject(kind)
    let started = try apply(try .start(subject: "acme-83", plan: "open"), on: store, at: 0, id: 0x83)
    _ = try apply(try .extend(started.id, .by(.days(30))), on: store, at: 1)
    let tightened = TrialDefaults(
      length: .days(5), reminders: .none,
      plans: ["open": TrialPlan(name: "open", length: .days(15), reminders: .none, maxExtensions: 1)])
    let refused = refusal {
      try apply(try .extend(started.id, .by(.days(1))), on: store, at: 2, defaults: tightened)
    }
    #expect(refused?.limit == .maxExtensions && refused?.plan == "open" && refused?.maxLength == nil)
    // Without the plan's limits (or without the plan), it is extended as before.
    let third = try apply(try .extend(started.id, .by(.days(1))), on: store, at: 2)
    #expect(third.extensions == 2)
  }

  @Test func start_BeyondMaxLength_IsRefusedNamingItsField() throws {
    let store = try Subject(.memory)
    let byDuration = #expect(throws: TrialError.self) {
      try apply(try .start(subject: "acme-84", plan: "unraid", end: .after(.days(61))), on: store, at: 0)
    }
    guard case .invalidParameter(let field, let problem)? = byDuration?.code else {
      Issue.record("not InvalidParameter: \(String(describing: byDuration))")
      return
    }
    #expect(field == .length, "\(problem)")
    #expect(problem.contains("MaxLength=\(TimeSpan.format(.days(60))) of plan \"unraid\""), "\(problem)")
    let byEnd = #expect(throws: TrialError.self) {
      try apply(try .start(subject: "acme-84", plan: "unraid", end: .at(origin + 61 * day)), on: store, at: 0)
    }
    guard case .invalidParameter(let endField, _)? = byEnd?.code else { return }
    #expect(endField == .end)
    let within = try apply(
      try .start(subject: "acme-84", plan: "unraid", end: .after(.days(60))), on: store, at: 0)
    #expect(within.period.endDate == origin + 60 * day)
  }
}
