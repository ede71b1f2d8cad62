import Foundation
import Logging
import Systemd
import TrialCore

/// Delivers each taken event as one structured journal entry (`EventJournalEntry`), or,
/// when the daemon logs to a terminal, as one readable log line.
public final class JournalEventSink: EventSink {
  private let destination: JournalDestination
  private let journal: any JournalSink
  private let logger: Logger

  public init(destination: JournalDestination, journal: any JournalSink = SystemdJournal(), logger: Logger) {
    self.destination = destination
    self.journal = journal
    self.logger = logger
  }

  public func deliver(_ entry: LedgerEntry, trial: Trial) throws {
    let fields = EventJournalEntry.fields(for: entry, trial: trial)
    switch destination {
    case .journal:
      try journal.send(fields)
    case .standardError:
      let message = fields.first { $0.name == "MESSAGE" }?.value ?? "\(entry.id)"
      logger.notice(
        "\(message)",
        metadata: ["event": "\(entry.id)", "kind": "\(entry.event.kind.name)", "late": "\(entry.isLate)"])
    }
  }

  /// Reports a wall-clock step the same way.
  public func clockStepped(from: Date, to: Date) {
    let fields = EventJournalEntry.clockStep(from: from, to: to)
    switch destination {
    case .journal:
      do { try journal.send(fields) } catch { logger.error("could not write to the journal: \(error)") }
    case .standardError:
      logger.notice("\(fields.first { $0.name == "MESSAGE" }?.value ?? "wall clock stepped")")
    }
  }
}
