import Foundation
import TrialCore

extension Engine {
  // MARK: Watchdog and status

  func scheduleWatchdog() {
    watchdogWake?.cancel()
    watchdogWake = nil
    guard let interval = settings.watchdogInterval, interval > .zero, !stopped else { return }
    watchdogWake = scheduler.schedule(after: interval.timeInterval, label: "watchdog") { [weak self] in
      guard let self else { return }
      self.observer?.engineWatchdogPing()
      self.publishStatus()
      self.scheduleWatchdog()
    }
  }

  /// The status line: `3 active trials; next: acme-42 expires in 2h 13min` (the time to go
  /// in `TimeSpan.Style.brief`).
  public func statusLine() -> String {
    let next = planner.nextEvent
    let subject = next.flatMap { next in (try? repository.read { try $0.trial(next.trialID) })??.subject }
    return Self.statusLine(
      active: counts[.active, default: 0], next: next, subject: subject, now: clock.now())
  }

  /// The status line for `active` trials and the next event (of the trial `subject`; its id
  /// when nil), as of `now`.
  static func statusLine(active: Int, next: TrialEvent?, subject: String?, now: Date) -> String {
    var line = "\(active) active trial\(active == 1 ? "" : "s")"
    guard let next else { return line + "; nothing scheduled" }
    let subject = subject ?? "\(next.trialID)"
    let left = next.due.duration(since: now)
    let when = left <= .zero ? "now" : "in " + TimeSpan.format(left, style: .brief)
    switch next.kind {
    case .expiry: line += "; next: \(subject) expires \(when)"
    case .reminder: line += "; next: \(subject) reminder \(when)"
    }
    return line
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
}
