import FoundationEssentials
import Logging
import TrialCore

/// The event log: handing logged events to the observers, consumers.
extension Engine {
  public func addLogObserver(_ observer: any EventLogObserver) {
    logObservers.append(observer)
  }

  /// Hands events just committed to the observers; the first must follow the last handed.
  /// In a fleet, where other nodes log too, the follower reads the shared log instead.
  func published(_ events: [LoggedEvent]) {
    guard let last = events.last else { return }
    tally.logged(events.lazy.map(\.entry))
    if let followLog = fleet?.followLog {
      // What this node logged comes of age like the rest, whether or not it is read back.
      duties.pruning.schedule(at: clock.now().adding(settings.retention.age))
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
    duties.pruning.schedule(at: clock.now().adding(settings.retention.age))
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

  // MARK: Consumers

  /// Creates a consumer, durably; `completion` gets it with the log's newest cursor.
  public func createConsumer(
    named name: String, after: EventCursor?,
    completion: @escaping (Result<(ConsumerRecord, EventCursor), any Error>) -> Void
  ) {
    let now = clock.now()
    change(
      { txn in
        (
          try EventFeed.createConsumer(named: name, after: after, now: now, in: txn),
          try txn.eventLogBounds().last
        )
      }, completion: completion)
  }

  /// Moves a consumer's position forward, durably; then pruning may go on.
  public func acknowledge(
    consumer name: String, through cursor: EventCursor,
    completion: @escaping (Result<(ConsumerRecord, EventCursor), any Error>) -> Void
  ) {
    let now = clock.now()
    change({ txn in
      (
        try EventFeed.acknowledge(consumer: name, through: cursor, now: now, in: txn),
        try txn.eventLogBounds().last
      )
    }) { [weak self] result in
      // Acknowledgements come one per event: one step a second at most follows them.
      if case .success = result { self?.duties.pruning.schedule(at: now.adding(.seconds(1))) }
      completion(result)
    }
  }

  public func removeConsumer(named name: String, completion: @escaping (Result<Void, any Error>) -> Void) {
    change({ txn in
      guard try txn.removeConsumer(named: name) else { throw TrialError(.consumerNotFound(name: name)) }
    }) { [weak self] result in
      if case .success = result, let self { self.duties.pruning.schedule(at: self.clock.now()) }
      completion(result)
    }
  }
}
