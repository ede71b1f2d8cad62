import Foundation
import TrialCore
@_spi(StoreTesting) import TrialStore

/// Damage planted in a store, one invariant broken at a time, through LMDB (raw records, or
/// the repository's own transaction without `TrialBook`'s rules): for the tests of the store's
/// verification, which must find each and name its keys.
///
/// Each case is planted in the store `StoreCorruption.makeFixture(_:)` fills:
///
/// | id | subject | state |
/// | --- | --- | --- |
/// | 1 | `alpha` | active; its 3-day reminder fired, not yet delivered (in the outbox) |
/// | 2 | `beta` | active; its 3-day reminder fired and delivered |
/// | 3 | `gamma` | expired: its expiry fired and delivered |
/// | 4 | `delta` | cancelled |
/// | 5 | `epsilon` | active, nothing taken yet |
///
/// Its event log holds the three reminders fired (cursors 1 to 3, in trial order), and one
/// consumer, `mailer`, has acknowledged the first. One webhook endpoint, `hooks`, has the second
/// pending: its one attempt failed (a 503 asking for a wait of 30 s), the next is due a minute
/// later.
public enum StoreCorruption: String, CaseIterable, Sendable, CustomStringConvertible {
  case activeTrialMissingFromSubjectIndex
  case subjectIndexNamesMissingTrial
  case subjectIndexNamesTrialOfAnotherSubject
  case undeliveredEntryMissingFromOutbox
  case outboxEntryWithoutLedgerEntry
  case deliveredEntryStillInOutbox
  case ledgerEntryWithoutTrial
  case activeTrialWithExpiryInLedger
  case ledgerGapBeforeLaterEvent
  case expiredTrialWithoutExpiry
  case cancelledTrialWithFiredExpiry
  case ledgerEntryOfFutureRevision
  case ledgerEntryNotOfTheTrial
  case unreadableTrialRecord
  case unreadableLedgerRecord
  case wrongActiveCount
  case unknownMetaRecord
  case foreignDatabase
  case unreadableEventRecord
  case loggedEventNotInLedger
  case loggedEventDiffersFromLedger
  case eventLogGap
  case eventAfterLastCursor
  case eventAtOrBeforePrunedThrough
  case eventLogLastCursorAhead
  case unreadableLogBound
  case unreadableConsumerRecord
  case invalidConsumerName
  case consumerAheadOfLog
  case unreadableWebhookState
  case invalidWebhookEndpointName
  case webhookEventAfterLastCursor

  public var description: String { rawValue }

  /// A problem the verification must report: the record's database and key, and words of
  /// its message.
  public struct Expected: Hashable, Sendable, CustomStringConvertible {
    public var database: String
    public var key: [UInt8]
    public var words: [String]

    public var description: String {
      "\(database) key \(key.map { String(format: "%02x", $0) }.joined()) \(words)"
    }
  }

  /// The instant the fixture's trials start.
  public static let origin = Date(timeIntervalSinceReferenceDate: 790_000_000)
  private static let day: TimeInterval = 86_400

  /// Fills an empty store with the five trials above; returns them.
  @discardableResult
  public static func makeFixture(_ repository: any TrialRepository) throws -> [Trial] {
    let ids = OfferedIDs((1...5).map(TrialID.init))
    func start(
      _ txn: any TrialWriteTransaction, _ subject: String, days: Double, _ reminders: ReminderSchedule
    )
      throws -> Trial
    {
      try TrialBook.startTrial(
        in: txn, subject: subject, endDate: origin.addingTimeInterval(days * day), reminders: reminders,
        now: origin, ids: ids
      ).trial
    }
    let trials = try repository.write { txn in
      try [
        ("alpha", 5.0, ReminderSchedule.default), ("beta", 5, .default), ("gamma", 1, .none),
        ("delta", 5, .default), ("epsilon", 9, .default),
      ].map { try start(txn, $0.0, days: $0.1, $0.2) }
    }
    _ = try repository.write { txn in
      try TrialBook.endTrial(
        in: txn, TrialID(4), outcome: .cancelled, now: origin.addingTimeInterval(day / 2))
    }
    let taken = origin.addingTimeInterval(2.5 * day)
    let due = [trials[0].events[0], trials[1].events[0], trials[2].events[0]].map {
      DueEvent(event: $0, takenAt: taken, disposition: .fire, isLate: true)
    }
    let entries = try repository.write { txn in try TrialBook.commit(in: txn, due, now: taken) }
    try repository.write { txn in
      try TrialBook.markDelivered(in: txn, entries.dropFirst().map { (id: $0.id, at: taken) })
    }
    try repository.write { txn in
      _ = try EventFeed.createConsumer(named: "mailer", after: EventCursor(0), now: taken, in: txn)
      _ = try EventFeed.acknowledge(consumer: "mailer", through: EventCursor(1), now: taken, in: txn)
    }
    try repository.write { txn in
      let answer = WebhookAttempt.answered(status: 503, retryAfter: .seconds(30))
      var hooks = WebhookEndpointState(name: "hooks")
      hooks.health.record(answer, at: taken, disableAfter: .days(5))
      hooks.keep(
        WebhookAttemptRecord(
          at: taken, cursor: EventCursor(2), messageID: entries[1].id.description, number: 1, outcome: answer,
          duration: .milliseconds(40)))
      try txn.putWebhookEndpoint(hooks)
      try txn.putWebhookEvent(
        WebhookPendingEvent(
          endpoint: "hooks", cursor: EventCursor(2), attempts: 1, nextAttemptAt: taken.addingTimeInterval(60))
      )
    }
    return try repository.read { txn in try (1...5).map { try txn.trial(TrialID($0))! } }
  }

  /// Plants the damage in `repository` (holding the fixture); returns every problem the
  /// verification must report, and no other.
  public func plant(in repository: LMDBTrialRepository) throws -> [Expected] {
    let trials = try repository.read { txn in try (1...5).map { try txn.trial(TrialID($0))! } }
    let (alpha, beta, gamma, epsilon) = (trials[0], trials[1], trials[2], trials[4])
    let later = Self.origin.addingTimeInterval(3 * Self.day)
    func entry(_ event: TrialEvent, delivered: Bool = true) -> LedgerEntry {
      LedgerEntry(
        event: event, outcome: .fired, takenAt: later, isLate: false, deliveredAt: delivered ? later : nil)
    }
    func write(_ body: (any TrialWriteTransaction) throws -> Void) throws {
      try repository.write { try body($0) }
    }
    func raw(_ body: (RawStoreRecords) throws -> Void) throws {
      try repository.withRawRecords { try body($0) }
    }
    switch self {
    case .activeTrialMissingFromSubjectIndex:
      try raw { try $0.delete("subjects", Self.subjectKey("epsilon")) }
      return [Expected(database: "trials", key: Self.trialKey(5), words: ["no entry", "\"epsilon\""])]
    case .subjectIndexNamesMissingTrial:
      try raw { try $0.put("subjects", Self.subjectKey("ghost"), Self.trialKey(99)) }
      return [
        Expected(
          database: "subjects", key: Self.subjectKey("ghost"), words: ["0000000000000063", "does not exist"])
      ]
    case .subjectIndexNamesTrialOfAnotherSubject:
      try raw { try $0.put("subjects", Self.subjectKey("alpha"), Self.trialKey(2)) }
      return [
        Expected(
          database: "subjects", key: Self.subjectKey("alpha"), words: ["0000000000000002", "\"beta\""]),
        Expected(
          database: "trials", key: Self.trialKey(1), words: ["names trial 0000000000000002", "\"alpha\""]),
      ]
    case .undeliveredEntryMissingFromOutbox:
      let key = Self.ledgerKey(alpha.events[0].id)
      try raw { try $0.delete("outbox", key) }
      return [Expected(database: "ledger", key: key, words: ["not in the outbox"])]
    case .outboxEntryWithoutLedgerEntry:
      let key = Self.ledgerKey(epsilon.events[0].id)
      try raw { try $0.put("outbox", key, []) }
      return [Expected(database: "outbox", key: key, words: ["no ledger entry", "\(epsilon.events[0].id)"])]
    case .deliveredEntryStillInOutbox:
      let key = Self.ledgerKey(beta.events[0].id)
      try raw { try $0.put("outbox", key, []) }
      return [Expected(database: "outbox", key: key, words: ["delivered", "still in the outbox"])]
    case .ledgerEntryWithoutTrial:
      let key = Self.ledgerKey(EventID(trialID: TrialID(99), revision: 1, kind: .expiry))
      try raw { records in
        try records.put("ledger", key, try records.get("ledger", Self.ledgerKey(gamma.events[0].id))!)
      }
      return [Expected(database: "ledger", key: key, words: ["no trial 0000000000000063"])]
    case .activeTrialWithExpiryInLedger:
      // An active record whose revision's expiry is in the ledger reads expired (schema 3):
      // the expiry put with the active count left counting the trial.
      try write { try $0.putLedgerEntry(entry(epsilon.events[2])) }
      let key = Array("active-trials".utf8)
      try raw { try $0.put("meta", key, withUnsafeBytes(of: UInt64(3).littleEndian) { Array($0) }) }
      return [
        Expected(database: "meta", key: key, words: ["is 3", "2 trials are active"]),
        Expected(database: "cohorts", key: Self.fixtureCohortKey, words: ["count 3 active", "holds 2"]),
      ]
    case .ledgerGapBeforeLaterEvent:
      let second = epsilon.events[1]
      try write { try $0.putLedgerEntry(entry(second)) }
      return [
        Expected(
          database: "ledger", key: Self.ledgerKey(second.id), words: ["earlier \(epsilon.events[0].id)"])
      ]
    case .expiredTrialWithoutExpiry:
      var expired = epsilon
      expired.state = .expired
      expired.endedAt = later
      try write { try $0.putTrial(expired) }
      return [
        Expected(database: "trials", key: Self.trialKey(5), words: ["expired", "not in the ledger"]),
        Expected(database: "cohorts", key: Self.fixtureCohortKey, words: ["count 3 active", "holds 2"]),
      ]
    case .cancelledTrialWithFiredExpiry:
      let trial = trials[3]
      try write { try $0.putLedgerEntry(entry(trial.events[2])) }
      return [
        Expected(database: "ledger", key: Self.ledgerKey(trial.events[2].id), words: ["cancelled", "expiry"])
      ]
    case .ledgerEntryOfFutureRevision:
      let event = TrialEvent(trialID: epsilon.id, revision: 2, kind: .expiry, endDate: later)
      try write { try $0.putLedgerEntry(entry(event)) }
      return [
        Expected(
          database: "ledger", key: Self.ledgerKey(event.id), words: ["revision 2", "current revision 1"])
      ]
    case .ledgerEntryNotOfTheTrial:
      let event = TrialEvent(
        trialID: epsilon.id, revision: 1, kind: .reminder(before: .seconds(2 * Self.day)),
        endDate: epsilon.period.endDate)
      try write { try $0.putLedgerEntry(entry(event)) }
      return [Expected(database: "ledger", key: Self.ledgerKey(event.id), words: ["not an event"])]
    case .unreadableTrialRecord:
      try raw { try $0.put("trials", Self.trialKey(4), [9, 0, 0, 0]) }
      return [Expected(database: "trials", key: Self.trialKey(4), words: ["unreadable", "record version 9"])]
    case .unreadableLedgerRecord:
      let key = Self.ledgerKey(beta.events[0].id)
      try raw { try $0.put("ledger", key, [1, 7, 0, 2]) }
      return [Expected(database: "ledger", key: key, words: ["unreadable", "unknown event kind 7"])]
    case .wrongActiveCount:
      let key = Array("active-trials".utf8)
      try raw { try $0.put("meta", key, withUnsafeBytes(of: UInt64(42).littleEndian) { Array($0) }) }
      return [Expected(database: "meta", key: key, words: ["is 42", "3 trials are active"])]
    case .unknownMetaRecord:
      try raw { try $0.put("meta", Array("colour".utf8), [1]) }
      return [Expected(database: "meta", key: Array("colour".utf8), words: ["does not know"])]
    case .foreignDatabase:
      try raw { try $0.put("main", Array("other".utf8), [1]) }
      return [Expected(database: "main", key: Array("other".utf8), words: ["not trialwatch's"])]
    default:
      return try plantInLog(in: repository, epsilon: epsilon)
    }
  }

  /// Damage to the event log, its bounds, its consumers and the webhook endpoints' records.
  private func plantInLog(in repository: LMDBTrialRepository, epsilon: Trial) throws -> [Expected] {
    func raw(_ body: (RawStoreRecords) throws -> Void) throws {
      try repository.withRawRecords { try body($0) }
    }
    let lastKey = Array("events-last".utf8)
    let prunedKey = Array("events-pruned-through".utf8)
    let mailer = Self.consumerKey("mailer")
    let hooks = Self.consumerKey("hooks")
    switch self {
    case .unreadableEventRecord:
      try raw { try $0.put("events", Self.eventKey(2), [9, 0, 0, 0]) }
      return [Expected(database: "events", key: Self.eventKey(2), words: ["unreadable", "record version 9"])]
    case .loggedEventNotInLedger:
      let event = epsilon.events[0]
      try repository.write { txn in
        _ = try txn.appendEvent(
          LedgerEntry(event: event, outcome: .fired, takenAt: event.due, isLate: false),
          attributes: TrialAttributes(subject: "epsilon"))
      }
      return [
        Expected(database: "events", key: Self.eventKey(4), words: ["\(event.id)", "not in the ledger"])
      ]
    case .loggedEventDiffersFromLedger:
      // Event record, version 1: byte 2 is the outcome, byte 3 the flags (bit 0: late).
      try raw { records in
        var record = try records.get("events", Self.eventKey(1))!
        record[2] = 4  // skipped, superseded by the expiry
        record[3] ^= 1
        try records.put("events", Self.eventKey(1), record)
      }
      return [
        Expected(
          database: "events", key: Self.eventKey(1), words: ["is skipped", "ledger entry is fired", "late"])
      ]
    case .eventLogGap:
      try raw { try $0.delete("events", Self.eventKey(2)) }
      return [
        Expected(
          database: "events", key: Self.eventKey(3),
          words: ["from 0000000000000001 to 0000000000000003", "0000000000000002", "missing"])
      ]
    case .eventAfterLastCursor:
      try raw { records in
        try records.put("events", Self.eventKey(9), try records.get("events", Self.eventKey(3))!)
      }
      return [Expected(database: "events", key: Self.eventKey(9), words: ["after the log's last cursor"])]
    case .eventAtOrBeforePrunedThrough:
      try raw { try $0.put("meta", prunedKey, Self.number(1)) }
      return [
        Expected(database: "events", key: Self.eventKey(1), words: ["pruned-through", "should be gone"])
      ]
    case .eventLogLastCursorAhead:
      try raw { try $0.put("meta", lastKey, Self.number(5)) }
      return [
        Expected(
          database: "meta", key: lastKey, words: ["0000000000000005", "newest event is 0000000000000003"])
      ]
    case .unreadableLogBound:
      try raw { try $0.put("meta", prunedKey, [1, 2, 3]) }
      return [Expected(database: "meta", key: prunedKey, words: ["pruned-through", "unreadable (3 bytes)"])]
    case .unreadableConsumerRecord:
      try raw { try $0.put("consumers", mailer, [1, 4]) }
      return [Expected(database: "consumers", key: mailer, words: ["unreadable", "unknown flags 4"])]
    case .invalidConsumerName:
      let key = Self.consumerKey("-not a name")
      try raw { records in try records.put("consumers", key, try records.get("consumers", mailer)!) }
      return [Expected(database: "consumers", key: key, words: ["invalid consumer name", "letters"])]
    case .consumerAheadOfLog:
      try repository.write { txn in
        var consumer = try txn.consumer(named: "mailer")!
        consumer.acknowledged = EventCursor(7)
        try txn.putConsumer(consumer)
      }
      return [
        Expected(
          database: "consumers", key: mailer,
          words: ["0000000000000007", "after the event log's last cursor"])
      ]
    case .unreadableWebhookState:
      try raw { try $0.put("webhooks", hooks, [1, 16, 0, 0, 0, 0, 0, 0]) }
      return [Expected(database: "webhooks", key: hooks, words: ["unreadable", "unknown flags 16"])]
    case .invalidWebhookEndpointName:
      let key = Self.webhookEventKey("Hooks", 2)
      try raw { records in
        try records.put("webhooks", key, try records.get("webhooks", Self.webhookEventKey("hooks", 2))!)
      }
      return [
        Expected(database: "webhooks", key: key, words: ["invalid webhook endpoint name", "lower-case"])
      ]
    case .webhookEventAfterLastCursor:
      try repository.write { txn in
        try txn.putWebhookEvent(
          WebhookPendingEvent(endpoint: "hooks", cursor: EventCursor(9), attempts: 1, nextAttemptAt: nil))
      }
      return [
        Expected(
          database: "webhooks", key: Self.webhookEventKey("hooks", 9),
          words: ["0000000000000009", "after the event log's last cursor"])
      ]
    default:
      preconditionFailure("\(self) is not damage to the event log")
    }
  }

  /// Keys as the store lays them out (docs/store-format.md, "Key layout").
  public static func trialKey(_ id: UInt64) -> [UInt8] {
    withUnsafeBytes(of: id.bigEndian) { Array($0) }
  }

  public static func subjectKey(_ subject: String) -> [UInt8] { Array(subject.utf8) }

  public static func eventKey(_ cursor: UInt64) -> [UInt8] { trialKey(cursor) }

  public static func consumerKey(_ name: String) -> [UInt8] { Array(name.utf8) }

  /// A webhook endpoint's pending event: its name, a 0 byte, the cursor.
  public static func webhookEventKey(_ endpoint: String, _ cursor: UInt64) -> [UInt8] {
    Array(endpoint.utf8) + [0] + eventKey(cursor)
  }

  /// The cohort of the fixture's trials (started at `origin`, without a plan).
  public static var fixtureCohortKey: [UInt8] {
    withUnsafeBytes(of: (UInt32(bitPattern: CohortKey.day(of: origin)) ^ 0x8000_0000).bigEndian) { Array($0) }
  }

  /// A u64 meta value, little-endian.
  public static func number(_ value: UInt64) -> [UInt8] {
    withUnsafeBytes(of: value.littleEndian) { Array($0) }
  }

  public static func ledgerKey(_ id: EventID) -> [UInt8] {
    let order = id.order
    return trialKey(id.trialID.rawValue) + withUnsafeBytes(of: id.revision.bigEndian) { Array($0) }
      + withUnsafeBytes(of: order.bigEndian) { Array($0) }
  }
}

/// Damage to a store file's bytes, as a disk or a careless copy may do it.
public enum StoreFileDamage {
  /// Keeps the first `count` bytes.
  public static func truncate(_ file: String, to count: Int) throws {
    try Data(contentsOf: URL(fileURLWithPath: file)).prefix(count).write(to: URL(fileURLWithPath: file))
  }

  /// Inverts every bit of page `page` (4096 bytes a page).
  public static func flipPage(_ file: String, page: Int) throws {
    var data = try Data(contentsOf: URL(fileURLWithPath: file))
    for index in page * 4096..<min((page + 1) * 4096, data.count) { data[index] ^= 0xFF }
    try data.write(to: URL(fileURLWithPath: file))
  }

  /// Writes `count` bytes of noise from a seeded generator.
  public static func writeNoise(_ file: String, count: Int, seed: UInt64) throws {
    var state = seed
    let bytes = (0..<count).map { _ -> UInt8 in
      // SplitMix64: the same noise for the same seed.
      state &+= 0x9E37_79B9_7F4A_7C15
      var z = state
      z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
      z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
      return UInt8(truncatingIfNeeded: z ^ (z >> 31))
    }
    try Data(bytes).write(to: URL(fileURLWithPath: file))
  }

  /// Makes the store at `file`'s directory (a store directory) claim a schema newer than this
  /// version reads.
  public static func raiseSchema(of repository: LMDBTrialRepository) throws {
    try repository.withRawRecords { records in
      try records.put(
        "meta", Array("schema".utf8),
        withUnsafeBytes(of: (LMDBTrialRepository.schemaVersion + 1).littleEndian) { Array($0) })
    }
  }
}
