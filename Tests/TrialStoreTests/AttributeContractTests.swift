import Foundation
import TestSupport
import Testing
import TrialCore
import TrialTesting

@testable @_spi(StoreTesting) import TrialStore

/// A trial's attributes (subject, labels, and ones a newer version wrote) on every store: read
/// back as written, and each logged event keeps those of the moment it was taken.
@Suite struct AttributeContractTests {
  static let labels: [String: String] = [
    "customer": "c-991", "email": "ada+trials@example.com", "tier": "pro ✓",
    "note": String(repeating: "x", count: 512),
  ]

  @Test(arguments: StoreKind.allCases)
  func attributes_ReadBackAsWritten_AndEachEventKeepsThoseOfItsTime(kind: StoreKind) throws {
    let subject = try Subject(kind)
    var trial = try subject.start("labelled-1", days: 10, id: 0x40).trial
    trial.attributes.labels = try TrialLabels(Self.labels)
    trial.attributes.unknown = ["zeta": "written by a newer version"]
    try subject.repository.write { try $0.putTrial(trial) }
    let first = LedgerEntry(
      event: trial.events[0], outcome: .fired, takenAt: origin.addingTimeInterval(7 * day), isLate: false)
    let logged = try subject.repository.write { try $0.appendEvent(first, attributes: trial.attributes) }
    #expect(logged.attributes == trial.attributes)

    // The labels change; the event logged before keeps the earlier ones.
    let before = trial.attributes
    trial.attributes.labels = try trial.labels.applying([
      "tier": "enterprise", "email": nil, "region": "eu-west",
    ])
    try subject.repository.write { try $0.putTrial(trial) }
    let second = LedgerEntry(
      event: trial.events[1], outcome: .fired, takenAt: origin.addingTimeInterval(9 * day), isLate: false)
    _ = try subject.repository.write { try $0.appendEvent(second, attributes: trial.attributes) }

    try subject.reopen()
    #expect(try subject.repository.read { try $0.trial(trial.id) } == trial)
    let log = try loggedEvents(subject.repository)
    #expect(log.map(\.attributes) == [before, trial.attributes])
    #expect(log.last?.labels["tier"] == "enterprise" && log.last?.labels["email"] == nil)
    #expect(try subject.repository.read { try $0.activeTrialID(subject: "labelled-1") } == trial.id)
  }

  @Test(arguments: StoreKind.allCases)
  func trialWithoutLabels_ReadsBackWithNone(kind: StoreKind) throws {
    let subject = try Subject(kind)
    let trial = try subject.start("plain-1", days: 10, id: 0x41).trial
    try subject.reopen()
    let read = try #require(try subject.repository.read { try $0.trial(trial.id) })
    #expect(read.labels.isEmpty && read.attributes.unknown.isEmpty && read == trial)
  }

  /// The count `ListPlans` shows: active trials only, by plan, over the whole store.
  @Test(arguments: StoreKind.allCases)
  func activeTrialsByPlan_CountsActiveTrialsOfEachPlan(kind: StoreKind) throws {
    let subject = try Subject(kind)
    #expect(try subject.repository.activeTrialsByPlan() == [:])
    let plans: [String?] = ["pro", "pro", "basic", nil, "pro"]
    var trials: [Trial] = []
    for (index, plan) in plans.enumerated() {
      var trial = try subject.start("plan-\(index)", days: 10, id: 0x50 + UInt64(index)).trial
      trial.attributes.plan = plan
      try subject.repository.write { try $0.putTrial(trial) }
      trials.append(trial)
    }
    _ = try subject.repository.endTrial(trials[1].id, outcome: .converted, now: origin)
    try subject.reopen()
    #expect(try subject.repository.activeTrialsByPlan() == ["pro": 2, "basic": 1])
    #expect(try subject.repository.read { try $0.trial(trials[0].id) }?.attributes.plan == "pro")
  }
}

/// The attribute section of the file store's records.
@Suite struct AttributeRecordTests {
  let directory: TemporaryDirectory
  let store: LMDBTrialRepository

  init() throws {
    directory = try TemporaryDirectory("attributes")
    store = try LMDBTrialRepository(directory: directory.appending("store"))
  }

  private func trialKey(_ id: UInt64) -> [UInt8] { withUnsafeBytes(of: id.bigEndian) { Array($0) } }

  /// A trial record as schema 3 wrote it: version 1, no attribute section.
  @Test func trialRecordOfVersion1_ReadsWithTheSubjectAlone() throws {
    var bytes: [UInt8] = [1, 0, 0, 0]  // version 1, active, no flags, no reminders
    bytes += withUnsafeBytes(of: UInt32(1).littleEndian) { Array($0) }
    bytes += withUnsafeBytes(of: origin.timeIntervalSinceReferenceDate.bitPattern.littleEndian) { Array($0) }
    bytes += withUnsafeBytes(of: (origin.timeIntervalSinceReferenceDate + day).bitPattern.littleEndian) {
      Array($0)
    }
    bytes += [5] + Array("old-1".utf8)
    try store.withRawRecords { try $0.put("trials", trialKey(7), bytes) }
    let trial = try #require(try store.read { try $0.trial(TrialID(7)) })
    #expect(trial.attributes == TrialAttributes(subject: "old-1") && trial.reminders == .none)
  }

  @Test func trialRecord_IsVersion2_WithItsLabelsInNameOrder() throws {
    var trial = Trial(
      id: TrialID(8), subject: "s", period: TrialPeriod(startDate: origin, endDate: origin + day),
      reminders: .none)
    trial.attributes.labels = try TrialLabels(["b": "2", "a": "1"])
    try store.write { try $0.putTrial(trial) }
    let record = try #require(try store.withRawRecords { try $0.get("trials", trialKey(8)) })
    #expect(record.first == 2)
    // … u8 subject length, "s", u16 2 fields, "label.a" = "1", "label.b" = "2".
    let section: [UInt8] =
      [1] + Array("s".utf8) + [2, 0] + [7] + Array("label.a".utf8) + [1, 0] + Array("1".utf8)
      + [7] + Array("label.b".utf8) + [1, 0] + Array("2".utf8)
    #expect(Array(record.suffix(section.count)) == section)
  }

  @Test(
    arguments: [
      ("out of order", [2, 0, 1, 0x62, 0, 0, 1, 0x61, 0, 0], "out of order or repeated"),
      ("a label key refused", [1, 0, 7] + Array("label.A".utf8) + [1, 0, 0x78], "label \"A\" must start"),
      ("cut short", [1, 0, 9, 0x61], "ends early"),
    ] as [(String, [UInt8], String)])
  func trialRecord_WithADamagedSection_IsRefusedNamingTheRecord(
    damage: String, section: [UInt8], words: String
  ) throws {
    let trial = Trial(
      id: TrialID(9), subject: "s", period: TrialPeriod(startDate: origin, endDate: origin + day),
      reminders: .none)
    try store.write { try $0.putTrial(trial) }
    try store.withRawRecords { records in
      var record = try #require(try records.get("trials", trialKey(9)))
      record.removeLast(2)  // the empty section's count
      try records.put("trials", trialKey(9), record + section)
    }
    let error = try #require(throws: StoreError.self, "\(damage)") {
      try store.read { try $0.trial(TrialID(9)) }
    }
    #expect(error.kind == .corruptRecord)
    #expect(
      error.description.contains("trials/0000000000000009") && error.description.contains(words), "\(error)")
  }
}
