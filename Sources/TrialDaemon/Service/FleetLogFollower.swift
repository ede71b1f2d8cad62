import Dispatch
import FoundationEssentials
import Logging
import TrialCore
import TrialEngine

/// Reads a fleet's shared event log as it grows, on a queue of its own, and hands what it
/// reads to the engine's log observers on the engine's queue: the Watches of every node see
/// every node's events, in cursor order, and no engine waits for the read. Woken by the
/// engine's own commits and by the other nodes' (`NOTIFY`); the wake-ups of `interval` fold
/// into one read, of one statement. It reads only while a Watch runs on this node
/// (`LogDemand`): when the first starts, it skips to the log's newest event (the Watch reads
/// what it needs before that from the log itself).
final class FleetLogFollower: @unchecked Sendable {
  // @unchecked: `through`, `skipped` and `scheduled` are touched only on `queue`.
  private let queue = DispatchQueue(label: "trialwatch.fleet.log")
  private let repository: any TrialRepository
  private let engineQueue: DispatchQueue
  private let logger: Logger
  private let demand: LogDemand
  private weak var engine: Engine?
  private var through: EventCursor
  /// Wake-ups were let go while nobody watched: `through` is behind the log.
  private var skipped = false
  /// The most events handed over at once.
  static let page = 2_000

  init(engine: Engine, demand: LogDemand, engineQueue: DispatchQueue, logger: Logger) {
    self.engine = engine
    self.repository = engine.repository
    self.engineQueue = engineQueue
    self.logger = logger
    self.demand = demand
    through = engineQueue.sync { engine.publishedThrough }
    demand.whenWanted { [weak self] in self?.wake() }
  }

  /// Reads at most this often: under a steady stream of commits on several nodes, one read
  /// takes many of them, at the cost of this much more delay for the Watches.
  static let interval: DispatchTimeInterval = .milliseconds(25)
  private var scheduled = false

  func wake() {
    queue.async { [self] in
      guard !scheduled else { return }
      guard demand.isWanted else {
        skipped = true
        return
      }
      scheduled = true
      queue.asyncAfter(deadline: .now() + Self.interval) { [self] in
        scheduled = false
        readTail()
      }
    }
  }

  private func readTail() {
    var skippedTo: EventCursor?
    if skipped {
      do {
        skippedTo = try repository.read { try $0.eventLogBounds().last }
      } catch {
        logger.error("could not read the shared event log", metadata: ["error": "\(error)"])
        return
      }
      skipped = false
    }
    if let skippedTo, skippedTo > through { through = skippedTo }
    while true {
      let events: [LoggedEvent]
      do {
        events = try repository.loggedEvents(after: through, limit: Self.page)
      } catch let error as TrialError {
        if case .cursorPruned(_, let resumeAfter, _) = error.code {
          // Pruned before it was read: the Watches find the gap when they read the log.
          through = resumeAfter
          continue
        }
        if case .cursorGeneration(_, let generation, _) = error.code {
          // An import started a new generation: the log itself is as it was.
          through = through.of(generation: generation)
          continue
        }
        logger.error("could not read the shared event log", metadata: ["error": "\(error)"])
        return
      } catch {
        logger.error("could not read the shared event log", metadata: ["error": "\(error)"])
        return
      }
      let last = events.last?.cursor
      if let last { through = last }
      if last != nil || skippedTo != nil {
        let handed = skippedTo
        engineQueue.async { [self] in engine?.handOverFollowed(events, skippedTo: handed) }
        skippedTo = nil
      }
      if events.count < Self.page { return }
    }
  }
}
