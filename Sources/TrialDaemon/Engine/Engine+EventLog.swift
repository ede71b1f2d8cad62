import FoundationEssentials
import Logging
import TrialCore

/// The event log: handing logged events to the observers, pruning by retention, consumers.
extension Engine {
  public func addLogObserver(_ observer: any EventLogObserver) {
    logObservers.append(observer)
  }

  /// Where the log stands.
  public func eventLogBounds() throws -> EventLogBounds { try queries.eventLogBounds() }

  /// Hands events just committed to the observers; the first must follow the last handed.
  /// In a fleet, where other nodes log too, the follower reads the shared log instead.
  func published(_ events: [LoggedEvent]) {
    guard let last = events.last else { return }
    tally.logged(events.lazy.map(\.entry))
    if let followLog = fleet?.followLog {
      // What this node logged comes of age like the rest, whether or not it is read back.
      schedulePrune(at: clock.now().adding(settings.retention.age))
      followLog()
      return
    }
    if events[0].cursor.sequence != publishedThrough.next.sequence {
      // Something was logged that the engine did not see commit: read the log instead.
      publishLogTail()
      return
    }
    handOver(events, through: last.cursor)
  }

  /// Hands the observers events a log follower read (a fleet's shared log), in cursor order;
  /// those handed already are passed over. `skippedTo`: the follower did not read the log up
  /// to there, while nobody watched (the Watches read what they need of it themselves).
  public func handOverFollowed(_ events: [LoggedEvent], skippedTo: EventCursor? = nil) {
    if let skippedTo, skippedTo > publishedThrough {
      publishedThrough = skippedTo
      for observer in logObservers { observer.logSkipped(to: skippedTo) }
    }
    let new = events.drop { $0.cursor <= publishedThrough }
    guard let last = new.last else { return }
    handOver(Array(new), through: last.cursor)
  }

  private func handOver(_ events: [LoggedEvent], through last: EventCursor) {
    publishedThrough = last
    for observer in logObservers { observer.eventsLogged(events) }
    schedulePrune(at: clock.now().adding(settings.retention.age))
  }

  /// Hands the observers whatever the log holds beyond what they were given.
  func publishLogTail() {
    do {
      let events = try repository.read { txn in
        try EventFeed.events(after: publishedThrough, limit: Int.max, in: txn)
      }
      guard let last = events.last else { return }
      handOver(events, through: last.cursor)
    } catch {
      logger.error("could not read the event log", metadata: ["error": "\(error)"])
    }
  }

  // MARK: Pruning

  /// Arms the pruning wake at `date`, unless one is armed earlier.
  func schedulePrune(at date: Date) {
    guard !stopped else { return }
    if pruneWake != nil, let armed = pruneAt, armed <= date { return }
    pruneWake?.cancel()
    pruneAt = date
    pruneWake = scheduler.schedule(at: date, label: "prune") { [weak self] in
      guard let self else { return }
      self.pruneWake = nil
      self.pruneAt = nil
      self.pruneStep()
    }
  }

  /// One step: at most `pruneBatch` events, in one short transaction of the commit lane; the
  /// next step is armed at once when there is more, else when the oldest event left comes of
  /// age.
  func pruneStep() {
    let now = clock.now()
    let settings = self.settings
    commits.submit({ txn in
      try EventFeed.prune(now: now, retention: settings.retention, limit: settings.pruneBatch, in: txn)
    }) { [weak self] result in self?.pruned(result, now: now) }
  }

  private func pruned(_ result: Result<EventFeed.PruneStep, any Error>, now: Date) {
    let step: EventFeed.PruneStep
    switch result {
    case .success(let value): step = value
    case .failure(let error):
      logger.error("could not prune the event log; will retry", metadata: ["error": "\(error)"])
      schedulePrune(at: now.adding(settings.retryDelay))
      return
    }
    for (name, count) in step.lost.sorted(by: { $0.key < $1.key }) {
      logger.warning(
        "events pruned before the consumer acknowledged them (MaxRetention reached)",
        metadata: ["consumer": "\(name)", "events": "\(count)"])
    }
    if step.pruned > 0 { logger.debug("pruned the event log", metadata: ["events": "\(step.pruned)"]) }
    if step.more {
      // After the wakes already due: a step never holds up a fire for long.
      schedulePrune(at: now)
    } else if let next = step.nextAt {
      schedulePrune(at: next)
    }
  }

  // MARK: Consumers

  /// Creates a consumer, durably.
  public func createConsumer(named name: String, after: EventCursor?) throws -> (ConsumerRecord, EventCursor)
  {
    let now = clock.now()
    return try write { txn in
      (
        try EventFeed.createConsumer(named: name, after: after, now: now, in: txn),
        try txn.eventLogBounds().last
      )
    }
  }

  /// Moves a consumer's position forward, durably; then pruning may go on.
  public func acknowledge(consumer name: String, through cursor: EventCursor) throws -> (
    ConsumerRecord, EventCursor
  ) {
    let now = clock.now()
    let result = try write { txn in
      (
        try EventFeed.acknowledge(consumer: name, through: cursor, now: now, in: txn),
        try txn.eventLogBounds().last
      )
    }
    // Acknowledgements come one per event: one step a second at most follows them.
    schedulePrune(at: now.adding(.seconds(1)))
    return result
  }

  public func removeConsumer(named name: String) throws {
    guard try write({ try $0.removeConsumer(named: name) }) else {
      throw TrialError(.consumerNotFound(name: name))
    }
    schedulePrune(at: clock.now())
  }

  public func consumer(named name: String) throws -> (ConsumerRecord, EventCursor) {
    try queries.consumer(named: name)
  }

  public func consumers() throws -> ([ConsumerRecord], EventCursor) { try queries.consumers() }
}
