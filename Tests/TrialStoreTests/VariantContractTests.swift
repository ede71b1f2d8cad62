import Foundation
import TestSupport
import Testing
import TrialCore
import TrialTesting

@testable import TrialStore

/// Plan variants on every store: a start that names its variant, and one that gets the
/// subject's, take the variant's length, reminders, grace and labels; the trial keeps its
/// variant (the attribute `variant`) across a reopen; an unknown variant changes nothing.
@Suite struct VariantContractTests {
  static let folding = SubjectFolding { $0.lowercased() }
  static let plan = TrialPlan(
    name: "pro", length: .days(14), reminders: try! ReminderSchedule([.days(3)]),
    labels: try! TrialLabels(["tier": "pro"]), subjectKey: .casefold,
    variants: [
      TrialVariant(name: "short", weight: 1),
      TrialVariant(
        name: "long", weight: 1, length: .days(30), reminders: try! ReminderSchedule([.days(7), .days(1)]),
        grace: .days(3), labels: try! TrialLabels(["offer": "long", "tier": "pro-long"])),
    ])
  static let defaults = TrialDefaults(length: .days(5), reminders: .none, plans: ["pro": plan])

  private func start(_ command: TrialCommand, on store: Subject, id: UInt64) throws -> Trial {
    try store.repository.write { txn in
      try TrialBook.apply(
        command, in: txn, now: origin, defaults: Self.defaults, ids: SequenceTrialIDGenerator([id]),
        folding: Self.folding
      ).trial
    }
  }

  @Test(arguments: StoreKind.allCases)
  func startsWithAndWithoutVariant_TakeItsValues_AcrossAReopen(kind: StoreKind) throws {
    let store = try Subject(kind)
    let named = try start(try .start(subject: "acme-1", plan: "pro", variant: "long"), on: store, id: 0x71)
    #expect(named.attributes.variant == "long" && named.grace == .days(3))
    #expect(named.period.endDate == origin.addingTimeInterval(30 * day))
    #expect(named.reminders.offsets == [.days(7), .days(1)])
    #expect(named.attributes.labels.dictionary == ["tier": "pro-long", "offer": "long"])

    // Without one, the subject's key (case folded, as SubjectKey= says) decides.
    let subject = (0..<100).map { "Subject-\($0)" }.first {
      Self.plan.variant(forKey: $0.lowercased())?.name == "short"
    }!
    let assigned = try start(try .start(subject: subject, plan: "pro"), on: store, id: 0x72)
    #expect(assigned.attributes.variant == "short" && assigned.grace == .zero)
    #expect(assigned.period.endDate == origin.addingTimeInterval(14 * day))
    #expect(assigned.attributes.labels.dictionary == ["tier": "pro"])

    let unknown = #expect(throws: TrialError.self) {
      try start(try .start(subject: "acme-3", plan: "pro", variant: "medium"), on: store, id: 0x73)
    }
    #expect(unknown?.description.contains("\"medium\" is no variant of plan \"pro\"") == true)

    try store.reopen()
    let kept = try #require(try store.repository.trial(named.id))
    #expect(kept.attributes.variant == "long" && kept.grace == .days(3) && kept == named)
    #expect(try store.repository.trial(assigned.id)?.attributes.variant == "short")
    #expect(try store.repository.trial(TrialID(0x73)) == nil)
  }
}
