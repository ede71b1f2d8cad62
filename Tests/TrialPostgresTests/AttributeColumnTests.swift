import Foundation
import TestSupport
import Testing
import TrialCore

@testable import TrialPostgres

/// The `attributes` column of trials and logged events (schema version 5): JSON written and
/// read back through PostgreSQL's `jsonb`, and rows that do not read refused by name.
@Suite struct AttributeColumnTests {
  /// Names and values with everything JSON escapes, and text beyond ASCII.
  static let tricky: [(name: String, value: String)] = [
    ("label.a", "quote \" backslash \\ slash /"),
    ("label.b", "é ✓ 😀 \u{7F}"),
    ("newer \"one\"", "line\nfeed\rtab\tbell\u{07}\u{08}\u{0C}\u{01}\u{1F}"),
    ("x", ""),
  ]

  @Test func object_EscapesQuotesBackslashesAndControlCharacters() {
    #expect(AttributeJSON.object([]) == "{}")
    #expect(
      AttributeJSON.object([("a", "x\"y\\z\n\u{01}"), ("b", "✓")]) == #"{"a":"x\"y\\z\n\u0001","b":"✓"}"#)
  }

  @Test func fields_OfWhatObjectWrote_AreTheFieldsInTheirOrder() throws {
    let read = try AttributeJSON.fields(AttributeJSON.object(Self.tricky))
    #expect(read.map(\.name) == Self.tricky.map(\.name) && read.map(\.value) == Self.tricky.map(\.value))
  }

  /// PostgreSQL prints `jsonb` its own way: keys by length then bytes, spaces after `:` and `,`,
  /// its own escapes.
  @Test func fields_OfJSONBAsPostgreSQLPrintsIt_AreTheFieldsWritten() throws {
    let connection = try PostgresSchemaTests.database()
    let printed = try #require(
      try connection.execute("SELECT $1::jsonb::text", [AttributeJSON.object(Self.tricky)]).string(0, 0))
    #expect(printed.hasPrefix(#"{"x": "", "label.a": "#))
    let read = try AttributeJSON.fields(printed)
    #expect(
      Dictionary(uniqueKeysWithValues: read.map { ($0.name, $0.value) })
        == Dictionary(uniqueKeysWithValues: Self.tricky.map { ($0.name, $0.value) }))
  }

  @Test func fields_WithEscapesPostgreSQLDoesNotPrint_ReadAsJSONMeansThem() throws {
    let read = try AttributeJSON.fields(#" { "a" : "\u00e9\ud83d\ude00\/\"" ,"b":"\u0041"} "#)
    #expect(read.map(\.name) == ["a", "b"] && read.map(\.value) == ["é😀/\"", "A"])
  }

  @Test(
    arguments: [
      ("[]", "expected {"), (#"{"a": 1}"#, "the value of a is not text"), (#"{"a": "x""#, "ends early"),
      (#"{"a": "x"} x"#, "text after the object"), (#"{"": "x"}"#, "an attribute name is empty"),
      (#"{"a": "x", "a": "y"}"#, "the attribute a is given twice"), (#"{"a": "\ud800"}"#, "lone surrogate"),
      (#"{"a": "\q"}"#, "unknown escape"), (#"{"a" "x"}"#, "expected :"),
      (#"{"a": "x";}"#, "expected , or }"),
      ("{\"a\": \"\t\"}", "unescaped control character"),
    ])
  func fields_OfTextThatIsNoObjectOfText_AreRefused(text: String, words: String) {
    let error = #expect(throws: AttributeJSON.Problem.self) { try AttributeJSON.fields(text) }
    #expect(error?.description.contains(words) == true, "\(text): \(String(describing: error))")
  }

  // MARK: Rows that do not read

  static let origin = Date(timeIntervalSinceReferenceDate: 800_000_000)

  /// A repository with one trial and one logged event, and a connection to change their rows.
  static func store() throws -> (repository: PostgresTrialRepository, connection: PGConnection, trial: Trial)
  {
    let conninfo = try PostgresSchemaTests.emptyDatabase()
    let connection = try PGConnection(conninfo: conninfo)
    try PostgresSchema.prepare(on: connection, shards: 4)
    let repository = try PostgresTrialRepository(
      conninfo: conninfo, node: "node", shards: ShardMap(count: 4), refusesEarlyFires: false)
    let trial = Trial(
      id: TrialID(0x40), subject: "s-1", labels: try TrialLabels(["tier": "pro"]),
      period: TrialPeriod(startDate: origin, endDate: origin + 86_400), reminders: .none)
    try repository.write { try $0.putTrial(trial) }
    let entry = LedgerEntry(event: trial.events[0], outcome: .fired, takenAt: origin + 86_400, isLate: false)
    _ = try repository.write { try $0.appendEvent(entry, attributes: trial.attributes) }
    return (repository, connection, trial)
  }

  /// Rows are read by column name: a statement may select the columns in any order, beside
  /// others.
  @Test func rows_OfColumnsInAnotherOrderAmongOthers_ReadTheSame() throws {
    let (repository, connection, trial) = try Self.store()
    let reversed = PostgresRecords.trialColumns.split(separator: ",").reversed().joined(separator: ",")
    let trials = try connection.execute("SELECT 1 AS one, \(reversed), 'x' AS two FROM trialwatch.trial")
    #expect(try PostgresRecords.trials(trials) == [trial])
    let events = try connection.execute(
      "SELECT late, 0 AS n, attributes, \(PostgresRecords.eventColumns) FROM trialwatch.event_log")
    #expect(try EventRows(events).event(0) == repository.loggedEvents(after: .origin, limit: 1).first)
    #expect(try EventRows(events).event(0)?.attributes == trial.attributes)
    let missing = try connection.execute("SELECT trial_id, subject FROM trialwatch.trial")
    #expect(throws: PostgresStoreError.damaged("a read of trialwatch.trial without its column state")) {
      try TrialRows(missing)
    }
  }

  @Test(
    arguments: [
      (#"{"label.tier": 1}"#, "unreadable attributes: the value of label.tier is not text"),
      (#"{"label.Tier": "pro"}"#, #"invalid attributes: label "Tier""#),
    ])
  func trialRow_WithAttributesThatDoNotRead_IsRefusedNamingTheTableAndTrial(json: String, words: String)
    throws
  {
    let (repository, connection, trial) = try Self.store()
    try connection.execute("UPDATE trialwatch.trial SET attributes = $1::jsonb", [json])
    let reads: [() throws -> Trial?] = [
      { try repository.trial(trial.id) }, { try repository.read { try $0.trial(trial.id) } },
    ]
    for read in reads {
      let error = try #require(throws: PostgresStoreError.self) { try read() }
      #expect(
        error.description.contains("the row of trialwatch.trial of trial 0000000000000040 has \(words)"),
        "\(error)")
    }
  }

  @Test func eventRow_WithAttributesThatDoNotRead_IsRefusedNamingTheTableAndCursor() throws {
    let (repository, connection, _) = try Self.store()
    try connection.execute(#"UPDATE trialwatch.event_log SET attributes = '{"label.": "x"}'"#)
    let reads: [() throws -> Void] = [
      { _ = try repository.loggedEvents(after: .origin, limit: 10) },
      { try repository.read { try $0.scanEvents(after: .origin) { _ in true } } },
    ]
    for read in reads {
      let error = try #require(throws: PostgresStoreError.self) { try read() }
      #expect(
        error.description.contains(
          "the row of trialwatch.event_log at cursor 0000000000000001 has invalid attributes: label"),
        "\(error)")
    }
  }
}
