import Logging
import TrialCore
import TrialDaemon
import TrialEngine
import TrialTesting

/// The one way tests build an `Engine`. Unless told otherwise: an in-memory store, the
/// default settings, random ids, no sinks, writes carried out at once, no observer.
///
/// `ids` are handed out in the order given, then counting up from `idFallbackStart`; nil
/// for random ids, as the daemon takes them. The engine keeps `observer` weakly: the caller
/// holds it.
public func makeEngine(
  repository: any TrialRepository = InMemoryTrialRepository(), scheduler: any WakeScheduler,
  settings: EngineSettings = EngineSettings(), ids: [UInt64]? = nil, idFallbackStart: UInt64 = 0x1000,
  sinks: [any EventSink] = [], commits: (any CommitLane)? = nil, observer: (any EngineObserver)? = nil,
  logger: Logger = Logger(label: "trialwatch.engine")
) -> Engine {
  let generator: any TrialIDGenerator =
    ids.map { SequenceTrialIDGenerator($0, fallbackStart: idFallbackStart) } ?? RandomTrialIDGenerator()
  let engine = Engine(
    repository: repository, scheduler: scheduler, settings: settings, ids: generator, sinks: sinks,
    commits: commits, logger: logger)
  engine.observer = observer
  return engine
}
