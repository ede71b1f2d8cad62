import FoundationEssentials
import Logging
import TrialCore

/// The engine's face to its host: the status line (`STATUS=`), at most once per
/// `EngineSettings.statusInterval`; the snapshot for reads off the engine's queue
/// (`EngineSnapshots`), after every change; and the watchdog ping (`WATCHDOG=1`), withheld while
/// a write is stuck.
final class StatusDuty: EngineDuty {
  private unowned let engine: Engine
  private var statusWake = DutyWake()
  private var lastStatusUptime: TimeInterval?
  private var lastStatus: String?
  /// The subject of the trial the status line names, read once for each trial it names.
  private var subject: (id: TrialID, subject: String)?
  /// Where the snapshot is published; nil until asked for (`Engine.snapshots()`).
  var snapshots: EngineSnapshots?
  private var watchdogWake = DutyWake()
  /// The watchdog ping is withheld while a write is stuck (see `watchdogTick`).
  private var watchdogWithheld = false

  init(engine: Engine) {
    self.engine = engine
  }

  func configure(_ settings: EngineSettings, was old: EngineSettings?) {
    if old?.watchdogInterval != settings.watchdogInterval || old == nil { scheduleWatchdog() }
    publish(force: true)
  }

  func stop() {
    statusWake.cancel()
    watchdogWake.cancel()
  }

  // MARK: Watchdog

  private func scheduleWatchdog() {
    watchdogWake.cancel()
    guard let interval = engine.settings.watchdogInterval, interval > .zero, !engine.stopped else { return }
    watchdogWake.arm(after: interval.timeInterval, on: engine.scheduler, label: "watchdog") { [weak self] in
      guard let self else { return }
      self.watchdogWake.fired()
      self.watchdogTick(interval: interval)
      self.publish()
      self.scheduleWatchdog()
    }
  }

  /// `WATCHDOG=1`, unless a write has been in progress for longer than the interval: the
  /// engine's queue answers, but nothing it takes becomes durable, and systemd should restart
  /// the daemon as it would a stuck queue.
  private func watchdogTick(interval: Duration) {
    let now = engine.scheduler.monotonicNow
    if let since = engine.commits.busySince, now - since > interval.timeInterval {
      if !watchdogWithheld {
        engine.logger.critical(
          "a commit has been in progress too long; withholding the watchdog ping",
          metadata: ["since_s": "\(now - since)"])
      }
      watchdogWithheld = true
      return
    }
    watchdogWithheld = false
    engine.observer?.engineWatchdogPing()
  }

  // MARK: Status

  /// Publishes the snapshot, then the status at most once per `statusInterval` (monotonic
  /// time). The engine calls this after every change.
  func publish(force: Bool = false) {
    if let snapshots { snapshots.publish(makeSnapshot(previous: snapshots.current)) }
    guard !engine.stopped, engine.observer != nil else { return }
    let uptime = engine.scheduler.monotonicNow
    let interval = engine.settings.statusInterval.timeInterval
    if !force, let last = lastStatusUptime, uptime - last < interval {
      guard !statusWake.isArmed else { return }
      statusWake.arm(after: interval - (uptime - last), on: engine.scheduler, label: "status") {
        [weak self] in
        self?.statusWake.fired()
        self?.publish(force: true)
      }
      return
    }
    statusWake.cancel()
    lastStatusUptime = uptime
    let line = self.line()
    guard line != lastStatus else { return }
    lastStatus = line
    engine.observer?.engineStatusChanged(line)
  }

  /// The status line: `3 active trials; next: acme-42 expires in 2h 13min` (the time to go
  /// in `TimeSpan.Style.brief`), and events held back from the journal when there are:
  /// `3 active trials; next: ...; 1200 events held back (at most 9000 entries per 30s to the journal)`;
  /// first, while the store refuses writes:
  /// `the store refuses writes: the disk is full (since 2026-12-03T03:41:07Z); 3 active trials; ...`.
  func line() -> String {
    var line = trialsLine()
    let held = engine.delivery.heldCount
    if held > 0 {
      line +=
        "; \(held) event\(held == 1 ? "" : "s") held back (" + (engine.delivery.heldReason ?? "delivery held")
        + ")"
    }
    guard let fault = engine.duties.storeFaults.current else { return line }
    return "the store refuses writes: \(fault.reason.summary) (since \(RFC3339.format(fault.since))); " + line
  }

  private func trialsLine() -> String {
    let active = engine.counts[.active, default: 0]
    var line = "\(active) active trial\(active == 1 ? "" : "s")"
    if let grace = engine.counts[.grace], grace > 0 { line += ", \(grace) in grace" }
    guard let (next, trial) = engine.duties.lookahead.nextPendingEvent() else {
      return line + "; nothing scheduled"
    }
    // Read once per trial that comes next (a statement on a fleet's shared database).
    if subject?.id != next.trialID {
      subject = (trial ?? (try? engine.repository.trial(next.trialID)) ?? nil).map { ($0.id, $0.subject) }
    }
    let name = subject.map(\.subject) ?? "\(next.trialID)"
    let left = next.due.duration(since: engine.clock.now())
    let when = left <= .zero ? "now" : "in " + TimeSpan.format(left, style: .brief)
    switch next.kind {
    case .expiry: line += "; next: \(name) expires \(when)"
    case .reminder: line += "; next: \(name) reminder \(when)"
    case .graceStarted: line += "; next: \(name) grace starts \(when)"
    case .followUp: line += "; next: \(name) follow-up \(when)"
    case .milestone: line += "; next: \(name) milestone \(when)"
    case .paused, .resumed: line += "; next: \(name) resumes \(when)"
    }
    return line
  }

  /// The snapshot of now; the next event's trial's attributes are read from the store only when
  /// the next event belongs to another trial than in `previous`, and never in a fleet, where
  /// that read crosses the network (`GetStatus` reads it when asked).
  func makeSnapshot(previous: EngineSnapshot?) -> EngineSnapshot {
    let pending = engine.duties.lookahead.nextPendingEvent()
    let next = pending?.event
    var attributes: TrialAttributes? = pending?.trial?.attributes
    if let next, attributes == nil {
      if let previous, previous.nextEvent?.trialID == next.trialID, let known = previous.nextAttributes {
        attributes = known
      } else if engine.fleet == nil {
        attributes = (try? engine.repository.read { try $0.trial(next.trialID) })??.attributes
      }
    }
    return EngineSnapshot(
      counts: engine.counts, pendingEvents: engine.planner.pendingEventCount, nextEvent: next,
      nextAttributes: attributes, settings: engine.settings, tally: engine.tally,
      openByPlan: engine.trials.openByPlan, heldEvents: engine.delivery.heldCount,
      heldReason: engine.delivery.heldReason, storeFault: engine.duties.storeFaults.current,
      refusedWrites: engine.duties.storeFaults.refusedByReason)
  }
}
