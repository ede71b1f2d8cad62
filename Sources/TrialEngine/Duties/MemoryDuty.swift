import FoundationEssentials
import TrialCore

/// The release of memory writes leave resident (`Engine.releaseMemory`): once no write has been
/// done for `EngineSettings.memoryQuiet`, the host's release runs once. One wake per quiet
/// spell; while writes go on, it moves later.
final class MemoryDuty: EngineDuty {
  private unowned let engine: Engine
  private var wake = DutyWake()
  /// When the last write was done (the scheduler's monotonic time).
  private var lastWrite: TimeInterval?
  /// What lets the memory go, on the engine's context; nil: nothing to do, no wake for it.
  var release: (() -> Void)?

  init(engine: Engine) {
    self.engine = engine
  }

  func configure(_ settings: EngineSettings, was old: EngineSettings?) {}

  func stop() { wake.cancel() }

  /// A write was done (and start-up counts as one).
  func wrote() {
    lastWrite = engine.scheduler.monotonicNow
    guard !wake.isArmed, release != nil, !engine.stopped else { return }
    arm(after: engine.settings.memoryQuiet.timeInterval)
  }

  private func arm(after delay: TimeInterval) {
    wake.arm(after: delay, on: engine.scheduler, label: "memory") { [weak self] in
      guard let self else { return }
      self.wake.fired()
      let quiet = self.engine.settings.memoryQuiet.timeInterval
      let since = self.engine.scheduler.monotonicNow - (self.lastWrite ?? -.infinity)
      if since >= quiet {
        self.release?()
      } else {
        self.arm(after: quiet - since)
      }
    }
  }
}
