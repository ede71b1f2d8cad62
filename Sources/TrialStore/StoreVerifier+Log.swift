import FoundationEssentials
import TrialCore

// The verification of the event log and its consumers (since schema 2).

extension StoreVerifier {
  /// Reads `meta/events-last` or `meta/events-pruned-through` into the report.
  func checkLogBound(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
    let name = String(decoding: key, as: UTF8.self)
    var reader = ByteReader(value)
    guard let number = try? reader.u64(), (try? reader.expectEnd()) != nil else {
      report.add("meta", key, "the event log's \(Self.boundName(name)) is unreadable (\(value.count) bytes)")
      return
    }
    if name == LMDBTrialRepository.MetaKey.logLast {
      report.logLast = EventCursor(number)
    } else {
      report.logPrunedThrough = EventCursor(number)
    }
  }

  private static func boundName(_ key: String) -> String {
    key == LMDBTrialRepository.MetaKey.logLast ? "last cursor" : "pruned-through cursor"
  }

  /// The log holds the events after `events-pruned-through` up to `events-last`, under
  /// consecutive cursors; each record decodes, and each event is in the ledger, taken the
  /// same way (`TrialConsistency.problems(ofLogged:ledger:)`).
  func checkEventLog() throws {
    guard let events = databases.events else { return }
    let last = report.logLast
    let pruned = report.logPrunedThrough
    let lastKey = Array(LMDBTrialRepository.MetaKey.logLast.utf8)
    if pruned > last {
      report.add(
        "meta", Array(LMDBTrialRepository.MetaKey.logPrunedThrough.utf8),
        "the event log is pruned through \(pruned), after its last cursor \(last)")
    }
    var expected = pruned.next
    var newest: EventCursor?
    try txn.forEach(events) { key, value in
      report.loggedEvents += 1
      guard let cursor = try? StoreKeys.eventCursor(key) else {
        report.add("events", key, "an event key has \(key.count) bytes, not 8")
        return
      }
      if cursor <= pruned {
        report.add(
          "events", key,
          "the event is at or before the log's pruned-through cursor \(pruned): it should be gone")
      } else if cursor > last {
        report.add(
          "events", key,
          "the event is after the log's last cursor \(last) (meta/\"events-last\"): the next event would "
            + "not be appended after it")
      } else {
        if cursor != expected {
          report.add(
            "events", key,
            "the log goes from \(EventCursor(expected.sequence - 1)) to \(cursor): the events from \(expected) "
              + "to \(EventCursor(cursor.sequence - 1)) are missing")
        }
        expected = cursor.next
        newest = cursor
      }
      guard let event = try readable("events", key, { try codec.decodeEvent(value, cursor: cursor) })
      else { return }
      let entry = try StoreKeys.withLedgerKey(event.id) { ledgerKey in
        try txn.get(databases.ledger, ledgerKey).map { value in
          try? codec.decodeLedgerEntry(value, key: try StoreKeys.ledgerKey(ledgerKey))
        }
      }
      // An unreadable ledger entry is reported by the pass over the ledger.
      if case .some(.none) = entry { return }
      // The event of a trial removed by its retention outlives the trial and its ledger.
      if entry == nil,
        try StoreKeys.withTrialKey(event.event.trialID, { try txn.get(databases.trials, $0) }) == nil
      {
        return
      }
      for problem in TrialConsistency.problems(ofLogged: event, ledger: entry ?? nil) {
        report.add("events", key, problem.message)
      }
    }
    if last > pruned, newest != last {
      report.add(
        "meta", lastKey,
        "the event log's last cursor is \(last), but "
          + (newest.map { "its newest event is \($0)" } ?? "it holds no event after \(pruned)"))
    }
  }

  /// Each consumer has a valid name, a record that decodes, and a position within the log.
  func checkConsumers() throws {
    guard let consumers = databases.consumers else { return }
    try txn.forEach(consumers) { key, value in
      report.consumers += 1
      guard let name = try? StoreKeys.consumerName(key) else {
        report.add("consumers", key, "the consumer's name is not valid UTF-8")
        return
      }
      if let problem = ConsumerRecord.validateName(name) {
        report.add("consumers", key, "invalid consumer name: it \(problem)")
      }
      guard let consumer = try readable("consumers", key, { try codec.decodeConsumer(value, name: name) })
      else { return }
      if consumer.acknowledged > report.logLast {
        report.add(
          "consumers", key,
          "its position \(consumer.acknowledged) is after the event log's last cursor \(report.logLast)")
      }
    }
  }

  /// Each record of a subject granted a trial once decodes. (Its first trial may be gone: the
  /// record outlives the trial.)
  func checkUses() throws {
    guard let uses = databases.uses else { return }
    try txn.forEach(uses) { key, value in
      _ = try readable("uses", key) { try UseRecords.decode(key: key, value: value) }
    }
  }

  /// Each cohort's figures decode and add up (none below zero, no more ended than started, the
  /// conversions' hours as many as the conversions), and count the open trials of the cohort
  /// the store holds. Retention may have removed the ended trials they count: those are not
  /// counted again.
  func checkCohorts() throws {
    guard let cohorts = databases.cohorts else { return }
    var open = openByCohort
    try txn.forEach(cohorts) { key, value in
      guard
        let (cohort, counts) = try readable(
          "cohorts", key,
          {
            (try CohortRecords.cohort(key), try CohortRecords.decode(value))
          })
      else { return }
      let held = open.removeValue(forKey: cohort) ?? (0, 0)
      if counts.active != held.active || counts.paused != held.paused {
        report.add(
          "cohorts", key,
          "the figures count \(counts.active) active and \(counts.paused) paused trials, but the store holds "
            + "\(held.active) and \(held.paused) of this cohort")
      }
    }
    for (cohort, held) in open.sorted(by: { $0.key < $1.key }) {
      report.add(
        "cohorts", CohortRecords.key(cohort),
        "no figures for the \(held.active) active and \(held.paused) paused trials of this cohort")
    }
  }
}
