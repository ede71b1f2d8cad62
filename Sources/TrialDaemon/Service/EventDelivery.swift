import FoundationEssentials
import Logging
import Systemd
import TrialCore
import TrialEngine

/// Delivers each taken event as one structured journal entry (`EventJournalEntry`), or,
/// when the daemon logs to a terminal, as one readable log line.
///
/// Paced under journald's rate limit (`JournalPace`): an entry beyond the limit is not sent
/// but deferred (`DeliveryDeferred`) until the window allows it; it waits in the store's
/// outbox meanwhile. A failed send throws, sending nothing, and the entry waits the same way.
/// Runs on the engine's context.
public final class JournalEventSink: EventSink {
  private let destination: JournalDestination
  private let journal: any JournalSink
  private let logger: Logger
  private let monotonicNow: () -> TimeInterval
  private let journalNow: () -> TimeInterval
  private var pace: JournalPace

  /// `monotonicNow` is the engine's monotonic time (`WakeScheduler.monotonicNow`, which runs
  /// on while the system is suspended); `journalNow` the clock journald counts its rate limit on
  /// (CLOCK_MONOTONIC, which stops while suspended: `DispatchWakeScheduler.journalNow`); nil:
  /// the engine's. `limit`, when given, paces the entries.
  public init(
    destination: JournalDestination, journal: any JournalSink = SystemdJournal(),
    limit: JournalPace.Limit? = nil, monotonicNow: @escaping () -> TimeInterval,
    journalNow: (() -> TimeInterval)? = nil, logger: Logger
  ) {
    self.destination = destination
    self.journal = journal
    self.monotonicNow = monotonicNow
    self.journalNow = journalNow ?? monotonicNow
    self.pace = JournalPace(limit)
    self.logger = logger
  }

  /// Paces from now on with `limit` (nil: no pacing), counting what was already sent.
  public func setLimit(_ limit: JournalPace.Limit?) {
    guard limit != pace.limit else { return }
    pace.reconfigure(limit)
  }

  /// Counts a whole burst as sent just now. For a start after a run that left events
  /// undelivered: it may have stopped in the middle of a burst, in a window journald still
  /// counts, so the first entries wait for the next window.
  public func assumeFullWindow() {
    pace.fill(at: journalNow())
  }

  /// Paced on journald's clock, so that the windows are journald's windows: a suspend, which
  /// stops that clock and not the engine's, never makes a window look over that journald still
  /// counts. The time to wait is handed to the engine on its own clock.
  public func deliver(_ event: LoggedEvent, trial: Trial?) throws {
    let entry = event.entry
    let now = journalNow()
    if let next = pace.nextSlot(at: now), let limit = pace.limit {
      throw DeliveryDeferred(until: monotonicNow() + (next - now), reason: "at most \(limit) to the journal")
    }
    let fields = EventJournalEntry.fields(for: entry, attributes: event.attributes, trial: trial)
    switch destination {
    case .journal:
      try journal.send(fields)
    case .standardError:
      let message = fields.first { $0.name == "MESSAGE" }?.value ?? "\(entry.id)"
      logger.notice(
        "\(message)",
        metadata: ["event": "\(entry.id)", "kind": "\(entry.event.kind.name)", "late": "\(entry.isLate)"])
    }
    pace.record(at: now)
  }

  /// Reports a wall-clock step the same way. Never held back (one entry per step), but counted.
  public func clockStepped(from: Date, to: Date) {
    let fields = EventJournalEntry.clockStep(from: from, to: to)
    switch destination {
    case .journal:
      do { try journal.send(fields) } catch { logger.error("could not write to the journal: \(error)") }
    case .standardError:
      logger.notice("\(fields.first { $0.name == "MESSAGE" }?.value ?? "wall clock stepped")")
    }
    pace.record(at: journalNow())
  }
}
