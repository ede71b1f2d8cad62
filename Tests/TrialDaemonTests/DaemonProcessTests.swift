import Foundation
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting

#if canImport(Glibc)
  import Glibc
#endif

@Suite struct DaemonProcessTests {
  @Test func lifeCycle_ReadyReloadStop_InOrder() throws {
    let daemon = try DaemonProcess()
    try daemon.start()
    let ready = daemon.notify.waitFor { $0.contains("READY=1") }
    #expect(ready.found?.contains("STATUS=0 active trials; nothing scheduled") == true)
    #expect(ready.seen.first?.contains("EXTEND_TIMEOUT_USEC=") == true, "asks for time while loading")
    let libraries = daemon.mappedLibraries
    #expect(libraries.contains("libc.so.6"))
    #expect(!libraries.contains { $0.hasPrefix("libpq.") }, "libpq is loaded only in fleet mode")

    daemon.signal(SIGHUP)
    let reloading = daemon.notify.waitFor { $0.contains("RELOADING=1") }
    let reloadMessage = try #require(reloading.found)
    #expect(reloadMessage.contains("MONOTONIC_USEC="))
    let monotonic = reloadMessage.split(separator: "\n").first { $0.hasPrefix("MONOTONIC_USEC=") }
      .flatMap { UInt64($0.dropFirst("MONOTONIC_USEC=".count)) }
    #expect((monotonic ?? 0) > 0)
    #expect(daemon.notify.waitFor { $0.contains("READY=1") }.found != nil, "READY=1 again after reloading")

    daemon.signal(SIGTERM)
    #expect(daemon.notify.waitFor { $0.contains("STOPPING=1") }.found != nil)
    #expect(daemon.waitForExit() == 0)
  }

  @Test func watchdog_IsPingedAtHalfTheInterval() throws {
    // WATCHDOG_PID is not set: sd_watchdog_enabled then accepts WATCHDOG_USEC for any process.
    let daemon = try DaemonProcess(environment: ["WATCHDOG_USEC": "200000"])
    try daemon.start()
    #expect(daemon.notify.waitFor { $0.contains("READY=1") }.found != nil)
    let first = daemon.notify.waitFor(timeout: 5) { $0.contains("WATCHDOG=1") }
    #expect(first.found != nil)
    #expect(daemon.notify.waitFor(timeout: 5) { $0.contains("WATCHDOG=1") }.found != nil)
    daemon.signal(SIGINT)
    #expect(daemon.waitForExit() == 0)
  }

  @Test func invalidConfiguration_FailsWithStatusAndErrno() throws {
    let daemon = try DaemonProcess(config: "[Trials]\nDefaultLength=forever\n")
    try daemon.start()
    let failure = daemon.notify.waitFor { $0.contains("ERRNO=") }
    let message = try #require(failure.found)
    #expect(message.contains("STATUS=failed to start: invalid configuration"))
    #expect(message.contains("ERRNO=\(EINVAL)"))
    #expect(daemon.waitForExit() == 1)
    #expect(daemon.standardError.contains("DefaultLength"))
  }

  @Test func damagedStore_FailsToStart_AndIsLeftUntouched() throws {
    let daemon = try DaemonProcess()
    let state = daemon.directory.url.appendingPathComponent("state")
    try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
    let garbage = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31) })
    let file = state.appendingPathComponent("data.mdb")
    try garbage.write(to: file)
    try daemon.start()
    let failure = try #require(daemon.notify.waitFor { $0.contains("ERRNO=") }.found)
    #expect(failure.contains("cannot open the store"))
    #expect(daemon.waitForExit() == 1)
    #expect(try Data(contentsOf: file) == garbage)
  }

  @Test func checkConfig_ReportsProblemsWithFileAndLine() throws {
    let daemon = try DaemonProcess(
      config: "[Trials]\nDefaultLength=5d\nColour=blue\n", arguments: ["--check-config"])
    let (status, text) = try daemon.run()
    #expect(status == 0)
    #expect(text.contains("trialwatch.conf:3: warning:"))
    #expect(text.contains("configuration OK"))
  }

  @Test func boundSocket_HasModeFromTheStandardAndTheConfiguredSocketGroup() throws {
    let nogroup = try #require(getgrnam("nogroup")).pointee.gr_gid
    let daemon = try DaemonProcess(config: "[Daemon]\nSocketGroup=\(nogroup)\n")
    try daemon.start()
    #expect(daemon.notify.waitFor { $0.contains("READY=1") }.found != nil)
    var info = stat()
    #expect(stat(daemon.socketPath, &info) == 0)
    #expect(info.st_mode & 0o777 == 0o660)
    if getuid() == 0 { #expect(info.st_gid == nogroup) }
    daemon.signal(SIGTERM)
    #expect(daemon.waitForExit() == 0)
  }

  @Test func signalsBlockedByTheParent_StillStopTheDaemon() throws {
    // A parent may hand down a mask with SIGTERM blocked (a mask survives exec); the daemon
    // must start from an empty mask, or SIGTERM would never reach it.
    let daemon = try DaemonProcess(arguments: [])
    var blocked = sigset_t()
    var previous = sigset_t()
    sigemptyset(&blocked)
    sigaddset(&blocked, SIGTERM)
    sigaddset(&blocked, SIGHUP)
    pthread_sigmask(SIG_BLOCK, &blocked, &previous)
    defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
    try daemon.start()
    #expect(daemon.notify.waitFor { $0.contains("READY=1") }.found != nil)
    daemon.signal(SIGHUP)
    #expect(daemon.notify.waitFor { $0.contains("RELOADING=1") }.found != nil)
    daemon.signal(SIGTERM)
    #expect(daemon.waitForExit() == 0)
  }

  @Test func help_IsPrinted_AndExitsZero() throws {
    let daemon = try DaemonProcess(arguments: ["--help"])
    try daemon.start()
    let text = daemon.standardOutput
    #expect(daemon.waitForExit() == 0)
    #expect(text.contains("--check-config"))
    #expect(text.contains("EXIT STATUS"))
  }

  @Test func sighup_AppliesAChangedConfiguration_AndKeepsTheRunningOneWhenInvalid() throws {
    let daemon = try DaemonProcess(config: "[Trials]\nDefaultLength=5d\n")
    try daemon.start()
    #expect(daemon.notify.waitFor { $0.contains("READY=1") }.found != nil)
    let client = try VarlinkClient(path: daemon.socketPath)
    func defaultLength(_ subject: String) throws -> TimeInterval {
      let trial = try client.startTrial(StartTrialParameters(subject: subject))
      return trial.endsAt.timeIntervalSince(trial.startedAt)
    }
    #expect(try defaultLength("before") == 5 * 86_400)

    let config = daemon.configPath
    try "[Trials]\nDefaultLength=2d\n".write(toFile: config, atomically: true, encoding: .utf8)
    daemon.signal(SIGHUP)
    #expect(daemon.notify.waitFor { $0.contains("RELOADING=1") }.found != nil)
    #expect(daemon.notify.waitFor { $0.contains("READY=1") }.found != nil)
    #expect(try defaultLength("after") == 2 * 86_400)

    // An invalid configuration is not applied: the running one stays.
    try "[Trials]\nDefaultLength=forever\n".write(toFile: config, atomically: true, encoding: .utf8)
    daemon.signal(SIGHUP)
    #expect(daemon.notify.waitFor { $0.contains("READY=1") }.found != nil)
    #expect(try defaultLength("kept") == 2 * 86_400)
    client.close()
    daemon.signal(SIGTERM)
    #expect(daemon.waitForExit() == 0)
    #expect(daemon.standardError.contains("configuration not reloaded"))
  }
}

/// The event log through the real daemon: a store of the version before the log upgraded at
/// start, and Watch with a cursor resuming across a kill.
@Suite struct DaemonEventLogTests {
  /// Every event a Watch after `after` replays, until `count` came.
  private func replay(_ socket: String, after: String, count: Int) throws -> [EventObject] {
    let client = try VarlinkClient(path: socket, timeout: 10)
    try client.sendBytes(message("io.trialwatch.Trials.Watch", #"{"after":"\#(after)"}"#, more: true))
    var events: [EventObject] = []
    while events.count < count {
      if let event = try client.receive().parameters(as: WatchReply.self).event { events.append(event) }
    }
    return events
  }

  @Test func storeOfTheVersionBefore_IsUpgradedAtStart_AndItsEventsReplayAfterAKill() throws {
    // The old store's events were taken months ago: a long retention keeps them.
    let daemon = try DaemonProcess(config: "[Events]\nRetention=3650d\n")
    let state = daemon.directory.url.appendingPathComponent("state")
    try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
    try FileManager.default.copyItem(
      atPath: RepositoryFile.path("Tests/TrialStoreTests/Fixtures/schema1/data.mdb"),
      toPath: state.appendingPathComponent("data.mdb").path)
    try daemon.start()
    #expect(daemon.notify.waitFor { $0.contains("READY=1") }.found != nil)
    let kept = try FileManager.default.contentsOfDirectory(atPath: state.path)
    #expect(kept.contains { $0.hasPrefix("data.mdb.schema1-") })

    // The 13 ledger entries of the old store come first, then what fired at start.
    let client = try VarlinkClient(path: daemon.socketPath, timeout: 10)
    let log = try client.call(Trials.getEventLog).log
    #expect(log.events >= 13 && log.start == .origin)
    let all = try replay(daemon.socketPath, after: "0000000000000000", count: log.events)
    #expect(all.map(\.cursor) == (1...UInt64(log.events)).map { EventCursor($0) })
    #expect(Set(all.prefix(13).compactMap(\.subject)).isSuperset(of: ["expired-2", "extended-6", "late-7"]))

    // Killed, started again: the log is as it was, and a Watch resumes after any cursor.
    daemon.child?.kill()
    _ = daemon.waitForExit()
    #expect(daemon.standardError.contains("store upgraded"))
    let again = try DaemonProcess(config: "[Events]\nRetention=3650d\n", directory: daemon.directory)
    try again.start()
    #expect(again.notify.waitFor { $0.contains("READY=1") }.found != nil)
    let resumed = try replay(again.socketPath, after: "0000000000000005", count: log.events - 5)
    #expect(resumed == Array(all.dropFirst(5)))
    again.signal(SIGTERM)
    #expect(again.waitForExit() == 0)
    #expect(!again.standardError.contains("store upgraded"), "upgraded once")
  }
}
