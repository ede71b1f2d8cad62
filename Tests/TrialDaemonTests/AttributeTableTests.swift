import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialCtl
import TrialPostgresTesting
import TrialStore
import TrialTesting

@testable import TrialDaemon

/// Every row of `TrialAttributes.named`, and a label, through every outlet a trial's attributes
/// reach, on every store: the store's trial and event records, the wire (Codable both ways, and
/// the fast path's bytes), the journal's fields, consume's environment, and an export imported
/// into another store. An attribute added to the table is checked here with no test of its own;
/// an outlet that left it out fails.
@Suite struct AttributeTableTests {
  static let now = Date(timeIntervalSince1970: 1_795_788_000)
  static let label = (key: "customer", value: "c-991", variable: "TRIAL_LABEL_CUSTOMER")

  /// A value of each row its own, with a quote and a character beyond ASCII to escape.
  static func value(_ row: TrialAttributes.Named) -> String {
    row.index == 0 ? "acme-42" : "\(row.name) \"x\" ✓"
  }

  /// Every row of the table set, and the label.
  static func attributes() throws -> TrialAttributes {
    var attributes = TrialAttributes(subject: "", labels: try TrialLabels([label.key: label.value]))
    for row in TrialAttributes.named { attributes[row] = value(row) }
    return attributes
  }

  static func repository(_ kind: StoreKind, in directory: TemporaryDirectory, _ name: String) throws
    -> any TrialRepository
  {
    switch kind {
    case .memory: InMemoryTrialRepository()
    case .lmdb: try LMDBTrialRepository(directory: directory.appending(name))
    case .postgres: try PostgresTestStore().repository
    }
  }

  @Test func table_HasTheSubjectFirst_AndNamesEachAttributeOnce() {
    let named = TrialAttributes.named
    #expect(named.first?.name == "subject" && named.first?.variable == "TRIAL_SUBJECT")
    #expect(named.map(\.index) == Array(named.indices))
    #expect(Set(named.map(\.name)).count == named.count && Set(named.map(\.variable)).count == named.count)
    for row in named {
      #expect(TrialAttributes.row(row.name) == row)
      #expect(!row.variable.hasPrefix(TrialAttributes.labelVariablePrefix), "\(row.name)")
      #expect(TrialAttributes.labelKey(storedName: row.name) == nil, "\(row.name)")
    }
  }

  @Test(arguments: StoreKind.allCases)
  func everyRowAndALabel_ReachEveryOutlet(store kind: StoreKind) throws {
    let attributes = try Self.attributes()
    for row in TrialAttributes.named { #expect(attributes[row] == Self.value(row), "\(row.name)") }

    // The store: the trial and the event it logged read back with every attribute.
    let directory = try TemporaryDirectory("attribute-table")
    let source = try Self.repository(kind, in: directory, "source")
    let started = try source.write { txn in
      try TrialBook.startTrial(
        in: txn, attributes: attributes, endDate: Self.now.addingTimeInterval(10 * 86_400),
        reminders: try ReminderSchedule([.days(5)]), now: Self.now, ids: SequenceTrialIDGenerator([7]))
    }
    let reminder = started.trial.events[0]
    _ = try source.commit(
      [DueEvent(event: reminder, takenAt: reminder.due, disposition: .fire, isLate: false)], now: reminder.due
    )
    let trial = try #require(try source.read { try $0.trial(started.trial.id) })
    #expect(trial.attributes == attributes)
    let logged = try #require(try source.loggedEvents(after: .origin, limit: 10).first)
    #expect(logged.attributes == attributes)

    try wire(trial, logged)
    journal(trial, logged)
    try environment(logged)
    try exportAndImport(trial, from: source, into: try Self.repository(kind, in: directory, "target"))
  }

  /// The Codable writer and reader of a trial and an event, and the fast path's reply.
  private func wire(_ trial: Trial, _ logged: LoggedEvent) throws {
    let object = TrialObject(trial, now: Self.now)
    let reply = TrialReply(trial: object)
    let encoded = WireCoding.makeEncoder().message(OutgoingReply(parameters: reply))
    #expect(
      String(decoding: FastPath.message(reply), as: UTF8.self) == String(decoding: encoded, as: UTF8.self))
    let replyJSON = try #require(
      try JSONSerialization.jsonObject(with: Data(encoded.dropLast())) as? [String: Any])
    let trialJSON = try #require((replyJSON["parameters"] as? [String: Any])?["trial"] as? [String: Any])
    let event = EventObject(logged)
    let eventJSON = try #require(
      try JSONSerialization.jsonObject(with: WireCoding.makeEncoder().encode(event)) as? [String: Any])
    for json in [trialJSON, eventJSON] {
      for row in TrialAttributes.named {
        #expect(json[row.name] as? String == Self.value(row), "\(row.name)")
      }
      #expect(json["labels"] as? [String: String] == [Self.label.key: Self.label.value])
    }

    let decodedTrial = try WireCoding.makeDecoder().decode(
      TrialObject.self, from: WireCoding.makeEncoder().encode(object))
    let decodedEvent = try WireCoding.makeDecoder().decode(
      EventObject.self, from: WireCoding.makeEncoder().encode(event))
    #expect(decodedTrial == object && decodedEvent == event)
    for row in TrialAttributes.besideSubject {
      #expect(decodedTrial.named[row] == Self.value(row) && decodedEvent.named[row] == Self.value(row))
    }

    // The interface declares each attribute beside the subject on a trial and an event.
    let interface = try #require(VarlinkInterfaces.descriptions[Trials.interface])
    for type in ["Trial", "Event"] {
      let start = try #require(interface.firstRange(of: "\ntype \(type) (\n"))
      let end = try #require(interface[start.upperBound...].firstRange(of: "\n)\n"))
      let fields = interface[start.upperBound..<end.lowerBound]
      for row in TrialAttributes.besideSubject {
        let field = "\n  \(row.name): ?string"
        #expect(fields.contains(field + ",") || fields.hasSuffix(field), "\(type).\(row.name)")
      }
    }
  }

  /// The journal entry of the event: each named attribute's field in the table's order, after
  /// it each label's.
  private func journal(_ trial: Trial, _ logged: LoggedEvent) {
    let fields = EventJournalEntry.fields(for: logged.entry, attributes: logged.attributes, trial: trial)
      .map { "\($0.name)=\($0.value)" }
    let expected =
      TrialAttributes.named.map { "\($0.variable)=\(Self.value($0))" } + [
        "\(Self.label.variable)=\(Self.label.value)"
      ]
    let first = fields.firstIndex(of: expected[0]) ?? fields.endIndex
    #expect(Array(fields[first...].prefix(expected.count)) == expected)
  }

  /// consume's environment for the event as Watch carries it: each named attribute under its
  /// variable and the label under its own; of an event without its trial's attributes, each
  /// named variable set empty, so that none is inherited.
  private func environment(_ logged: LoggedEvent) throws {
    let event = try WireCoding.makeDecoder().decode(
      EventObject.self, from: WireCoding.makeEncoder().encode(EventObject(logged)))
    let variables = EventEnvironment.variables(for: event, consumer: "mail", attempt: 1)
    let bare = EventEnvironment.variables(
      for: EventObject(logged.entry, attributes: nil), consumer: "mail", attempt: 1)
    for row in TrialAttributes.named {
      #expect(variables[row.variable] == Self.value(row), "\(row.variable)")
      #expect(bare[row.variable] == "", "\(row.variable)")
    }
    #expect(variables[Self.label.variable] == Self.label.value)
    #expect(bare[Self.label.variable] == nil)
  }

  /// An export of the trial, as trialwatchctl writes its lines, imported into another store.
  private func exportAndImport(
    _ trial: Trial, from source: any TrialRepository, into target: any TrialRepository
  )
    throws
  {
    let ledger = try source.read { try $0.ledgerEntries(trial: trial.id) }
    let lines = ExportRecord.records(of: trial, ledger: ledger).map(\.jsonLine)
    let exported = try #require(
      try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
    let exportedTrial = try #require(exported["trial"] as? [String: Any])
    #expect(exportedTrial["subject"] as? String == trial.subject)
    #expect(exportedTrial["labels"] as? [String: String] == [Self.label.key: Self.label.value])
    let others = try #require(exportedTrial["attributes"] as? [String: String])
    #expect(
      others
        == Dictionary(uniqueKeysWithValues: TrialAttributes.besideSubject.map { ($0.name, Self.value($0)) }))

    let records = try lines.enumerated().map {
      TrialTransfer.Line($0.offset + 1, try ExportRecord.read(line: Array($0.element.utf8)))
    }
    let summary = try TrialTransfer.run({ each in for record in records { try each(record) } }, into: target)
    #expect(summary.trials == 1)
    #expect(try target.read { try $0.trial(trial.id) }?.attributes == trial.attributes)
  }
}
