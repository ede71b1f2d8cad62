import Dispatch
import Foundation
import Synchronization
import TrialControl
import TrialCore

/// The handlers of `io.trialwatch.Trials`, carried out by the engine on its queue. Changes go
/// through the engine's group commit, so each is durable before it is answered; reads run on
/// the engine's queue on the caller's thread (`sync`), from the store and the planner.
public final class TrialsHandlers: @unchecked Sendable {
  // @unchecked: `engine` is only touched on `queue`; the hub and counters are thread-safe.
  private let engine: Engine
  private let queue: DispatchQueue
  private let startedAt: Date
  private let version: String
  private let storeBytes: @Sendable () -> Int?
  private let watchers: FeedHub
  /// Connections and watchers, shared with the control server.
  public let counters = ControlCounters()

  public init(
    engine: Engine, queue: DispatchQueue, startedAt: Date, version: String,
    storeBytes: @escaping @Sendable () -> Int? = { nil }
  ) {
    let bound = Bound(value: engine)
    self.engine = engine
    self.queue = queue
    self.startedAt = startedAt
    self.version = version
    self.storeBytes = storeBytes
    // Reads of the log for Watches happen on the engine's queue, like every read today.
    let read: @Sendable (EventCursor, Int) throws -> [LoggedEvent] = { after, limit in
      let result = queue.sync {
        Bound(
          value: Result {
            try bound.value.repository.read { try EventFeed.events(after: after, limit: limit, in: $0) }
          })
      }
      return try result.value.get()
    }
    // One step on the queue, so that no event is logged between reading `last` and observing.
    watchers = queue.sync {
      let hub = FeedHub(last: engine.publishedThrough, read: read)
      engine.addLogObserver(hub)
      return hub
    }
  }

  /// Every method of `io.trialwatch.Trials`, with its handler.
  public var routes: [Route] {
    [
      Route(Trials.startTrial) { p, done in
        self.change(
          .start(
            subject: p.subject, length: p.duration?.days, endsAt: p.endsAt, reminders: try? p.reminderSchedule
          ), done)
      },
      Route(Trials.extendTrial) { p, done in
        switch p.change {
        case .by(let span): self.change(.extend(p.id, by: span, endsAt: nil), done)
        case .to(let date): self.change(.extend(p.id, by: nil, endsAt: date), done)
        }
      },
      Route(Trials.endTrial) { p, done in self.change(.end(p.id, p.outcome), done) },
      Route(Trials.getTrial) { p, done in
        self.read(done) { engine in
          let trial = try p.id.map(engine.trial(id:)) ?? engine.trial(subject: p.subject ?? "")
          return TrialReply(trial: TrialObject(trial, now: engine.clock.now()))
        }
      },
      Route(Trials.listTrials) { p, done in
        self.read(done) { engine in
          let now = engine.clock.now()
          let page = try engine.listTrials(limit: p.pageSize, after: p.after) { p.matches($0, now: now) }
          return ListTrialsReply(trials: page.trials.map { TrialObject($0, now: now) }, next: page.next)
        }
      },
      Route(Trials.getPlan) { p, done in
        self.read(done) { engine in
          let (trial, ledger) = try engine.trialWithLedger(id: p.id)
          return EventsReply(events: EventObject.plan(of: trial, ledger: ledger))
        }
      },
      Route(Trials.simulate) { p, done in
        self.read(done) { engine in
          let due = engine.simulate(through: p.at.resolve(now: engine.clock.now()))
          let subjects = try engine.subjects(of: due.map(\.event.trialID))
          return EventsReply(events: due.map { EventObject($0, subject: subjects[$0.event.trialID]) })
        }
      },
      Route(Trials.getStatus) { _, done in
        self.read(done) { engine in
          let status = engine.status()
          return GetStatusReply(
            version: self.version, startedAt: self.startedAt,
            uptime: engine.clock.now().duration(since: self.startedAt),
            trials: TrialCounts(status.counts), pendingEvents: status.pendingEvents,
            nextEvent: status.nextEvent.map { EventObject(pending: $0, subject: status.nextSubject) },
            storeBytes: self.storeBytes(), connections: self.counters.connections,
            watchers: self.counters.watchers)
        }
      },
      Route(stream: Trials.watch) { p, sink in self.watchers.watch(after: p.after, sink) },
      Route(Trials.getEventLog) { _, done in
        self.read(done) { engine in
          GetEventLogReply(
            log: EventLogObject(try engine.eventLogBounds(), retention: engine.settings.retention))
        }
      },
      Route(Trials.getConsumer) { p, done in
        self.read(done) { engine in
          let (consumer, last) = try engine.consumer(named: p.name)
          return ConsumerReply(consumer: ConsumerObject(consumer, last: last))
        }
      },
      Route(Trials.listConsumers) { _, done in
        self.read(done) { engine in
          let (consumers, last) = try engine.consumers()
          return ListConsumersReply(consumers: consumers.map { ConsumerObject($0, last: last) })
        }
      },
      Route(Trials.createConsumer) { p, done in
        self.write(done) { engine in
          let (consumer, last) = try engine.createConsumer(named: p.name, after: p.after)
          return ConsumerReply(consumer: ConsumerObject(consumer, last: last))
        }
      },
      Route(Trials.acknowledgeEvent) { p, done in
        self.write(done) { engine in
          let (consumer, last) = try engine.acknowledge(consumer: p.consumer, through: p.cursor)
          return ConsumerReply(consumer: ConsumerObject(consumer, last: last))
        }
      },
      Route(Trials.removeConsumer) { p, done in
        self.write(done) { engine in
          try engine.removeConsumer(named: p.name)
          return EmptyReply()
        }
      },
    ]
  }

  /// Ends every Watch (the daemon is stopping).
  public func finishWatchers() {
    watchers.finishAll()
  }

  /// Carries a non-Sendable value across to the engine queue.
  private struct Bound<T>: @unchecked Sendable { let value: T }

  /// A read on the engine's queue, on the caller's thread, so that the answer needs no
  /// thread hop either way. One that arrives while the engine commits waits for that commit.
  private func read<R>(_ done: Completion<R>, _ body: @escaping (Engine) throws -> R) {
    let bound = Bound(value: body)
    let result = queue.sync { [engine] in Bound(value: Self.result { try bound.value(engine) }) }
    done(result.value)
  }

  /// A change outside the trials' group commit (consumers), on the engine's queue.
  private func write<R>(_ done: @escaping Completion<R>, _ body: @escaping (Engine) throws -> R) {
    let bound = Bound(value: (engine, body))
    queue.async { done(Self.result { try bound.value.1(bound.value.0) }) }
  }

  private func change(_ command: TrialCommand, _ done: @escaping Completion<TrialReply>) {
    let engine = Bound(value: engine)
    queue.async {
      let clock = engine.value.clock
      engine.value.submit(command) { result in
        done(Self.result { TrialReply(trial: TrialObject(try result.get().trial, now: clock.now())) })
      }
    }
  }

  private static func result<T>(_ body: () throws -> T) -> Result<T, ControlError> {
    do {
      return .success(try body())
    } catch {
      return .failure(ControlError(answering: error))
    }
  }
}

extension ControlError {
  /// Any error as the one a client receives: a `ControlError` as it is, a `TrialError` as its
  /// reply, anything else as an internal error whose message is `context` and the error.
  init(answering error: any Error, context: String = "") {
    switch error {
    case let error as ControlError: self = error
    case let error as TrialError: self.init(error)
    default: self = .internalError("\(context)\(error)")
    }
  }
}

extension ListTrialsParameters {
  /// Whether a trial passes the filters, as of `now`.
  func matches(_ trial: Trial, now: Date) -> Bool {
    if let state, trial.state != state { return false }
    if let expiringWithin {
      return trial.isActive && trial.period.endDate <= now.addingTimeInterval(expiringWithin.timeInterval)
    }
    return true
  }
}

extension EventObject {
  /// Every event of a trial, past and future, in due order: the ledger's entries over all
  /// revisions, then the current revision's events not in the ledger, pending while the
  /// trial is active and skipped (reason `trial-<state>`) once it has ended.
  static func plan(of trial: Trial, ledger: [LedgerEntry]) -> [EventObject] {
    var events = ledger.map { EventObject($0, subject: trial.subject) }
    let taken = Set(ledger.map(\.id))
    for event in trial.events where !taken.contains(event.id) {
      if trial.isActive {
        events.append(EventObject(pending: event, subject: trial.subject))
      } else {
        events.append(
          EventObject(
            id: event.id, subject: trial.subject, state: .skipped, due: event.due,
            reason: "trial-\(trial.state.rawValue)",
            detail: "the trial was \(trial.state.rawValue) before it fell due", takenAt: trial.endedAt))
      }
    }
    return events.sorted { $0.due != $1.due ? $0.due < $1.due : $0.id < $1.id }
  }
}
