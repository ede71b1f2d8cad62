import Logging
import ProcessMemory
import Synchronization
import Systemd
import TrialControl
import TrialCore

/// What the sender is told on its command line.
public struct SenderOptions: Sendable {
  /// The daemon's control socket.
  public var socketPath: String
  /// The most attempts made at once.
  public var workers: Int
  /// A CA bundle to trust instead of the system's.
  public var caFile: String?
  /// `trialwatch/VERSION`.
  public var userAgent: String

  public init(socketPath: String, workers: Int, caFile: String?, userAgent: String) {
    self.socketPath = socketPath
    self.workers = workers
    self.caFile = caFile
    self.userAgent = userAgent
  }
}

/// trialwatch-webhooks: attaches to the daemon with `ServeWebhooks` and holds the call open,
/// queueing the attempts each reply carries for the workers (`WorkerPool`), whose outcomes go
/// back with `ReportWebhooks` on a second connection (`OutcomeReporter`). When the call ends
/// (the daemon stopped or restarted) it connects again after a delay doubling from 0.1 s to
/// 5 s, logging once for the outage. A stop takes no more requests, lets the attempts being
/// made finish (each within its timeout), reports them, and only then ends the call, so that
/// the daemon does not make them again.
///
/// Every wait blocks: on the stream's socket, on the stop pipe, on the workers' and the
/// reporter's condition variables; an idle sender never wakes.
public final class WebhookSender: Sendable {
  public static let initialDelay = Duration.milliseconds(100)
  public static let maximumDelay = Duration.seconds(5)

  private let options: SenderOptions
  private let logger: Logger
  private let notifier: NotifyRelay
  private let stop: StopRequest
  private let pool: WorkerPool
  private let reporter: OutcomeReporter
  /// Lets go of memory once the sender has stayed quiet a while.
  private let quietRelease: QuietRelease
  /// The number of the last session (attachment) begun.
  private let sessions = Atomic<UInt64>(0)
  /// Whether the sender is attached; held while a status line is made and sent.
  private let attached = Mutex<Bool>(false)

  init(
    options: SenderOptions, clock: any WallClock, notifier: any NotifySink, stop: StopRequest, logger: Logger
  ) {
    self.options = options
    self.logger = logger
    self.notifier = NotifyRelay(sink: notifier)
    self.stop = stop
    let reporter = OutcomeReporter(socketPath: options.socketPath, logger: logger)
    self.reporter = reporter
    quietRelease = QuietRelease { Self.releaseMemory(logger: logger) }
    pool = WorkerPool(
      workers: options.workers,
      settings: AttemptSettings(userAgent: options.userAgent, caFile: options.caFile, clock: clock),
      secrets: SecretCache(logger: logger),
      report: { session, outcome in reporter.add(outcome, session: session) })
    reporter.onReport { [weak self] in
      self?.refreshStatus()
      self?.releaseMemoryIfQuiet()
    }
  }

  /// Runs until a stop is requested and the attempts being made are reported.
  func run() {
    notifier.start()
    reporter.start()
    quietRelease.start()
    var delay = Backoff(initial: Self.initialDelay, maximum: Self.maximumDelay)
    var outage = false
    var retries = 0
    var waiting: String?
    while true {
      var client: VarlinkClient?
      var session: UInt64 = 0
      let lost = serve(&client, &session) {
        logger.notice(
          "attached to the daemon",
          metadata: ["socket": "\(options.socketPath)", "tries": "\(retries + 1)"])
        (outage, retries, waiting) = (false, 0, nil)
        delay.reset()
      }
      guard let lost else {
        finish(session: session)
        client?.close()
        return
      }
      client?.close()
      if session != 0 {
        let out = pool.count + reporter.count
        pool.drop(session: session)
        reporter.end(session: session)
        attached.withLock { $0 = false }
        logger.warning(
          "lost the daemon; its attempts out are made again later",
          metadata: ["reason": "\(lost)", "attempts_out": "\(out)"])
      } else if !outage {
        logger.warning(
          "waiting for the daemon", metadata: ["reason": "\(lost)", "socket": "\(options.socketPath)"])
      } else {
        logger.debug("still waiting for the daemon", metadata: ["reason": "\(lost)"])
      }
      outage = true
      retries += 1
      if waiting != lost {
        waiting = lost
        notifier.send(status: "waiting for the daemon: \(lost)")
      }
      guard stop.wait(delay.next()) else { return finish(session: 0) }
    }
  }

  /// One attachment: connects, calls `ServeWebhooks`, and queues what each reply carries until
  /// the call ends (the reason is returned) or a stop is requested (nil). `session` is set once
  /// the daemon attached the sender, `client` once connected.
  private func serve(_ client: inout VarlinkClient?, _ session: inout UInt64, attachedNow: () -> Void)
    -> String?
  {
    do throws(VarlinkClientError) {
      let connected = try VarlinkClient(path: options.socketPath)
      client = connected
      try connected.send(
        OutgoingCall(method: Trials.serveWebhooks.qualifiedName, parameters: NoParameters(), more: true))
      while true {
        guard let reply = try connected.receive(interruptedBy: stop.descriptor) else { return nil }
        let served = try connected.decode(reply, as: ServeWebhooksReply.self)
        if session == 0 {
          session = sessions.add(1, ordering: .relaxed).newValue
          reporter.begin(session: session)
          attachedNow()
          attach()
        }
        if !served.requests.isEmpty {
          quietRelease.activity()
          pool.put(served.requests, session: session)
          refreshStatus()
        }
        if !reply.continues { return "the daemon ended the call" }
      }
    } catch {
      if stop.requested { return nil }
      return error.description
    }
  }

  private func attach() {
    let first = sessions.load(ordering: .relaxed) == 1
    // Start-up is over: what it ran (the command line, the first connection) runs no more, and
    // is released before READY=1. What the first attempt needs, libcurl and libcrypto included,
    // is mapped when it comes.
    if first { releaseMemory() }
    attached.withLock { attached in
      attached = true
      // The first time, with READY=1: `systemctl start` returns with the status in place.
      notifier.send(ready: first, status: statusLine())
    }
  }

  /// Once the last outcome of a spell of attempts is reported and nothing else is out, and it
  /// stays so for `QuietRelease.delay`: the code they ran (libcurl, OpenSSL and what they link,
  /// mapped by then), and the heap's free memory.
  private func releaseMemoryIfQuiet() {
    guard pool.count == 0, reporter.count == 0 else { return }
    quietRelease.quiet()
  }

  /// Unmaps the pages of the program and its libraries that are still their files' bytes, and
  /// trims the heap: the process keeps resident what runs while it is idle, which is nothing.
  private func releaseMemory() {
    Self.releaseMemory(logger: logger)
  }

  private static func releaseMemory(logger: Logger) {
    let released = ProgramPages.releaseIdle()
    logger.debug("memory released", metadata: released.fields.mapValues { "\($0)" })
  }

  /// The stop: no more requests; the attempts being made finish and are reported, then the
  /// call ends (the caller closes it) and the daemon takes back what was not reported.
  private func finish(session: UInt64) {
    attached.withLock { _ in
      notifier.send(stopping: true, status: "stopping; \(pool.count + reporter.count) attempts out")
    }
    logger.notice("stopping", metadata: ["attempts_being_made": "\(pool.count)"])
    pool.stop()
    if session != 0 {
      pool.waitIdle()
      reporter.drain()
    }
    notifier.flush()
  }

  /// `STATUS=attached; N attempts out` while attached.
  private func refreshStatus() {
    attached.withLock { attached in
      guard attached, !stop.requested else { return }
      notifier.send(status: statusLine())
    }
  }

  /// `attached; N attempts out`: handed over by the daemon and not yet reported.
  private func statusLine() -> String {
    let out = pool.count + reporter.count
    return "attached; \(out) attempt\(out == 1 ? "" : "s") out"
  }
}
