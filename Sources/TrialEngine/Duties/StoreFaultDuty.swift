import FoundationEssentials
import Logging
import TrialCore

/// A fault of the storage as the engine sees it: since when writes are refused, why, how many.
public struct StoreFaultStatus: Hashable, Sendable {
  public var reason: StoreFaultReason
  /// The last refusal's error, in words.
  public var message: String
  /// When the first write of this spell was refused (wall clock).
  public var since: Date
  /// Writes refused in this spell.
  public var refused: Int
}

/// Writes the store refused for a fault of the storage (`StoreFaultError`: a full disk, a
/// failing one, a fleet's database unreachable). A client retrying in a loop must not flood the
/// journal, so the log gets one line as a spell of refusals begins, then at most one a
/// `summaryInterval` (count, first and last refusal) while refusals go on, and one as the store
/// takes a write again, never two within an interval. The status line and `GetStatus` name the
/// spell while it lasts; the metrics count refused writes by reason since start.
final class StoreFaultDuty: EngineDuty {
  /// At most one line a minute after a spell's first.
  static let summaryInterval: TimeInterval = 60

  private unowned let engine: Engine
  /// The spell of refusals now; nil while the store takes writes.
  private(set) var current: StoreFaultStatus?
  /// Writes refused since start, by reason.
  private(set) var refusedByReason: [StoreFaultReason: Int] = [:]
  /// Refusals not yet in a log line, the first and last of them, and their reason.
  private var unlogged: (count: Int, first: Date, last: Date, reason: StoreFaultReason, message: String)?
  /// The store took a write again after refusals not yet said in the log.
  private var recoveredUnlogged = false
  /// When (monotonic) the last line about the store's faults was logged.
  private var lastLine: TimeInterval?
  private var wake = DutyWake()

  init(engine: Engine) {
    self.engine = engine
  }

  func configure(_ settings: EngineSettings, was old: EngineSettings?) {}

  func stop() {
    wake.cancel()
    flush()
  }

  /// A transaction of `writes` writes failed with `error`: counted and logged when a storage
  /// fault, ignored otherwise (the writes' own completions report any other failure).
  func refused(_ error: any Error, writes: Int) {
    guard let reason = (error as? any StoreFaultError)?.storeFault else { return }
    let now = engine.clock.now()
    let message = "\(error)"
    refusedByReason[reason, default: 0] += writes
    let began = current?.reason != reason
    if began {
      current = StoreFaultStatus(reason: reason, message: message, since: now, refused: writes)
    } else {
      current?.refused += writes
      current?.message = message
    }
    if var pending = unlogged, pending.reason == reason {
      pending.count += writes
      pending.last = now
      pending.message = message
      unlogged = pending
    } else {
      flush()
      unlogged = (writes, now, now, reason, message)
    }
    if began && mayLogNow {
      logBeginning()
    } else {
      armSummary()
    }
    if began { engine.duties.status.publish(force: true) }
  }

  /// A transaction was durable: a spell of refusals, if any, is over.
  func committed() {
    guard current != nil else { return }
    current = nil
    recoveredUnlogged = true
    if mayLogNow { flush() } else { armSummary() }
    engine.duties.status.publish(force: true)
  }

  private var mayLogNow: Bool {
    guard let lastLine else { return true }
    return engine.scheduler.monotonicNow - lastLine >= Self.summaryInterval
  }

  private func logBeginning() {
    guard let pending = unlogged else { return }
    unlogged = nil
    lastLine = engine.scheduler.monotonicNow
    let text = "the store refuses writes: \(pending.reason.summary); calls are answered StoreUnavailable, "
    engine.logger.error(
      "\(text)and further refusals are summarised at most once a minute",
      metadata: ["reason": "\(pending.reason.rawValue)", "error": "\(pending.message)"])
  }

  /// Logs what the log has not said yet: the refusals since the last line (count, first and
  /// last), then the end of the spell.
  private func flush() {
    if let pending = unlogged {
      unlogged = nil
      lastLine = engine.scheduler.monotonicNow
      engine.logger.error(
        "the store refused \(pending.count) write\(pending.count == 1 ? "" : "s"): \(pending.reason.summary)",
        metadata: [
          "reason": "\(pending.reason.rawValue)", "refused": "\(pending.count)",
          "first": "\(RFC3339.format(pending.first))", "last": "\(RFC3339.format(pending.last))",
          "error": "\(pending.message)",
        ])
    }
    if recoveredUnlogged, current == nil {
      recoveredUnlogged = false
      lastLine = engine.scheduler.monotonicNow
      engine.logger.notice("the store takes writes again")
    }
  }

  private func armSummary() {
    guard !wake.isArmed, !engine.stopped else { return }
    let delay = Self.summaryInterval - (engine.scheduler.monotonicNow - (lastLine ?? -.infinity))
    wake.arm(after: max(0, delay), on: engine.scheduler, label: "store-faults") { [weak self] in
      guard let self else { return }
      self.wake.fired()
      self.flush()
    }
  }
}

extension Error {
  /// A fault of the storage (a full disk, an unreachable database): `StoreFaultDuty` logs the
  /// writes it refuses once, then summarised, so the places that retry a write do not log it
  /// again at each retry.
  var isStoreFault: Bool { (self as? any StoreFaultError)?.storeFault != nil }
}
