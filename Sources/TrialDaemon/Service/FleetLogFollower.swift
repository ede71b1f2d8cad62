import Dispatch
import Foundation
import Logging
import TrialCore

/// Reads a fleet's shared event log as it grows, on a queue of its own, and hands what it
/// reads to the engine's log observers on the engine's queue: the Watches of every node see
/// every node's events, in cursor order, and no engine waits for the read. Woken by the
/// engine's own commits and by the other nodes' (`NOTIFY`); the wake-ups of `interval` fold
/// into one read.
final class FleetLogFollower: @unchecked Sendable {
  // @unchecked: `through` and `scheduled` are touched only on `queue`.
  private let queue = DispatchQueue(label: "trialwatch.fleet.log")
  private let repository: any TrialRepository
  private let engineQueue: DispatchQueue
  private let logger: Logger
  private weak var engine: Engine?
  private var through: EventCursor
  /// The most events handed over at once.
  static let page = 2_000

  init(engine: Engine, engineQueue: DispatchQueue, logger: Logger) {
    self.engine = engine
    self.repository = engine.repository
    self.engineQueue = engineQueue
    self.logger = logger
    through = engineQueue.sync { engine.publishedThrough }
  }

  /// Reads at most this often: under a steady stream of commits on several nodes, one read
  /// takes many of them, at the cost of this much more delay for the Watches.
  static let interval: DispatchTimeInterval = .milliseconds(25)
  private var scheduled = false

  func wake() {
    queue.async { [self] in
      guard !scheduled else { return }
      scheduled = true
      queue.asyncAfter(deadline: .now() + Self.interval) { [self] in
        scheduled = false
        readTail()
      }
    }
  }

  private func readTail() {
    while true {
      let events: [LoggedEvent]
      do {
        events = try repository.read { txn in
          try EventFeed.events(after: through, limit: Self.page, in: txn)
        }
      } catch let error as TrialError {
        if case .cursorPruned(_, let resumeAfter, _) = error.code {
          // Pruned before it was read: the Watches find the gap when they read the log.
          through = resumeAfter
          continue
        }
        logger.error("could not read the shared event log", metadata: ["error": "\(error)"])
        return
      } catch {
        logger.error("could not read the shared event log", metadata: ["error": "\(error)"])
        return
      }
      guard let last = events.last else { return }
      through = last.cursor
      engineQueue.async { [self] in engine?.handOverFollowed(events) }
      if events.count < Self.page { return }
    }
  }
}
