import FoundationEssentials
import TrialCore

extension Engine {
  // MARK: Watchdog and status

  func scheduleWatchdog() {
    watchdogWake?.cancel()
    watchdogWake = nil
    guard let interval = settings.watchdogInterval, interval > .zero, !stopped else { return }
    watchdogWake = scheduler.schedule(after: interval.timeInterval, label: "watchdog") { [weak self] in
      guard let self else { return }
      self.watchdogTick(interval: interval)
      self.publishStatus()
      self.scheduleWatchdog()
    }
  }

  /// `WATCHDOG=1`, unless a write has been in progress for longer than the interval: the
  /// engine's queue answers, but nothing it takes becomes durable, and systemd should restart
  /// the daemon as it would a stuck queue.
  private func watchdogTick(interval: Duration) {
    if let since = commits.busySince, scheduler.monotonicNow - since > interval.timeInterval {
      if !watchdogWithheld {
        logger.critical(
          "a commit has been in progress too long; withholding the watchdog ping",
          metadata: ["since_s": "\(scheduler.monotonicNow - since)"])
      }
      watchdogWithheld = true
      return
    }
    watchdogWithheld = false
    observer?.engineWatchdogPing()
  }

  /// The status line: `3 active trials; next: acme-42 expires in 2h 13min` (the time to go
  /// in `TimeSpan.Style.brief`), and events held back from the journal when there are:
  /// `3 active trials; next: ...; 1200 events held back (at most 9000 entries per 30s to the journal)`.
  public func statusLine() -> String {
    let held = delivery.heldCount
    guard held > 0 else { return trialsLine() }
    return trialsLine() + "; \(held) event\(held == 1 ? "" : "s") held back ("
      + (delivery.heldReason ?? "delivery held") + ")"
  }

  private func trialsLine() -> String {
    let active = counts[.active, default: 0]
    var line = "\(active) active trial\(active == 1 ? "" : "s")"
    guard let (next, trial) = nextPendingEvent() else { return line + "; nothing scheduled" }
    // Read once per trial that comes next (a statement on a fleet's shared database).
    if statusSubject?.id != next.trialID {
      statusSubject = (trial ?? (try? repository.trial(next.trialID)) ?? nil).map { ($0.id, $0.subject) }
    }
    let subject = statusSubject.map(\.subject) ?? "\(next.trialID)"
    let left = next.due.duration(since: clock.now())
    let when = left <= .zero ? "now" : "in " + TimeSpan.format(left, style: .brief)
    switch next.kind {
    case .expiry: line += "; next: \(subject) expires \(when)"
    case .reminder: line += "; next: \(subject) reminder \(when)"
    case .paused, .resumed: line += "; next: \(subject) resumes \(when)"
    }
    return line
  }

  /// The earliest pending event; a far trial's is read from the store, with its trial (see
  /// `Planner+Far.swift`), once for as long as the planner's earliest far trial stays the same.
  func nextPendingEvent() -> (event: TrialEvent, trial: Trial?)? {
    if let next = planner.nextEvent { return (next, nil) }
    let held = planner.nextHeldEvent
    guard let far = nextFarEvent() else { return held.map { ($0, nil) } }
    // The planner knows the far trial's second only: the event held in full may still be first.
    if let held, held.due <= far.event.due { return (held, nil) }
    return (far.event, far.trial)
  }

  private func nextFarEvent() -> (event: TrialEvent, trial: Trial)? {
    let stamp = planner.nextFarTrialStamp
    if let farNext, farNext.stamp == stamp, planner.nextFarTrial == farNext.trial.id {
      return (farNext.event, farNext.trial)
    }
    farNext = nil
    guard let id = planner.nextFarTrial, let trial = (try? repository.read({ try $0.trial(id) })) ?? nil,
      let event = planner.farEvent(of: trial)
    else { return nil }
    farNext = (stamp, event, trial)
    return (event, trial)
  }

  /// Publishes the snapshot (see `EngineSnapshots`), then the status at most once per
  /// `statusInterval` (monotonic time). The engine calls this after every change.
  func publishStatus(force: Bool = false) {
    publishSnapshot()
    guard !stopped, observer != nil else { return }
    let uptime = scheduler.monotonicNow
    let statusInterval = settings.statusInterval.timeInterval
    if !force, let last = lastStatusUptime, uptime - last < statusInterval {
      guard statusWake == nil else { return }
      statusWake = scheduler.schedule(after: statusInterval - (uptime - last), label: "status") {
        [weak self] in
        self?.statusWake = nil
        self?.publishStatus(force: true)
      }
      return
    }
    statusWake?.cancel()
    statusWake = nil
    lastStatusUptime = uptime
    let line = statusLine()
    guard line != lastStatus else { return }
    lastStatus = line
    observer?.engineStatusChanged(line)
  }

  /// Events held back from the sinks (journald's rate limit, a failing sink), from any thread.
  public var heldGauge: SharedCount { delivery.held }

  // MARK: Memory

  /// After every write, and after start-up, on the engine's context: `releaseMemory` runs once
  /// no write has been done for `memoryQuiet`. One wake per quiet spell; while writes go on, it moves later.
  func wrote() {
    lastWrite = scheduler.monotonicNow
    guard memoryWake == nil, releaseMemory != nil, !stopped else { return }
    scheduleMemoryRelease(after: settings.memoryQuiet.timeInterval)
  }

  private func scheduleMemoryRelease(after delay: TimeInterval) {
    memoryWake = scheduler.schedule(after: delay, label: "memory") { [weak self] in
      guard let self else { return }
      self.memoryWake = nil
      let quiet = self.settings.memoryQuiet.timeInterval
      let since = self.scheduler.monotonicNow - (self.lastWrite ?? -.infinity)
      if since >= quiet {
        self.releaseMemory?()
      } else {
        self.scheduleMemoryRelease(after: quiet - since)
      }
    }
  }
}
