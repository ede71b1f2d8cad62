import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting
import TrialStore
import TrialStoreTesting

#if canImport(Glibc)
  import Glibc
#endif

/// `trialwatchd --backup`, `--verify-store` and `--restore`, run as processes of the built
/// binary beside (or instead of) a running trialwatchd.
@Suite struct StoreMaintenanceTests {
  /// Runs the built trialwatchd with `arguments` to its end.
  private func trialwatchd(_ arguments: [String], as user: ChildProcess.User? = nil) throws
    -> ChildProcess.Completion
  {
    try ChildProcess.run(.product("trialwatchd"), arguments, as: user, timeout: 60)
  }

  /// Trials started one after another by a client of their own, each acknowledged (so
  /// committed) before the next; short trials, so that events fire all along.
  private final class Load: Sendable {
    let acknowledged = Mutex<[TrialID]>([])
    let failures = Mutex<[String]>([])
    let stopping = Atomic<Bool>(false)
    let done = DispatchSemaphore(value: 0)
    let progress = DispatchSemaphore(value: 0)

    init(socket: String) {
      Thread.detachNewThread { [self] in
        defer { done.signal() }
        do {
          let client = try VarlinkClient(path: socket)
          client.setReceiveTimeout(seconds: patience)
          var count = 0
          while !stopping.load(ordering: .relaxed) {
            count += 1
            let trial = try client.startTrial(
              StartTrialParameters(
                subject: "load-\(count)", duration: .seconds(1.5),
                reminders: try ReminderSchedule([.milliseconds(700)])))
            acknowledged.withLock { $0.append(trial.id) }
            progress.signal()
          }
          client.close()
        } catch {
          failures.withLock { $0.append("\(error)") }
        }
      }
    }

    var count: Int { acknowledged.withLock { $0.count } }

    /// Waits, at most `timeout` seconds, until `count` trials are acknowledged.
    func waitUntil(count wanted: Int, timeout: Double = patience) -> Bool {
      let deadline = DispatchTime.now() + timeout
      while count < wanted {
        if progress.wait(timeout: deadline) == .timedOut { return count >= wanted }
      }
      return true
    }

    func stop() -> [String] {
      stopping.store(true, ordering: .relaxed)
      done.wait()
      return failures.withLock { $0 }
    }
  }

  /// A backup taken from a separate process while the daemon starts trials and fires their
  /// events verifies clean, and restores to a store that holds everything committed before
  /// the backup began; a daemon starts on it.
  @Test func backupDuringLoad_RestoresEverythingCommittedBefore_AndVerifiesClean() throws {
    // No log line per event: nothing reads the daemon's standard error while it runs.
    let quiet = "[Daemon]\nLogLevel=warning\n"
    let daemon = try DaemonProcess(config: quiet)
    try daemon.start()
    try #require(daemon.notify.waitFor { $0.contains("READY=1") }.found != nil)
    // A watcher sees events as they are taken: the test waits for some to fire.
    let watcher = try VarlinkClient(path: daemon.socketPath)
    watcher.setReceiveTimeout(seconds: patience)
    try watcher.sendBytes(message("io.trialwatch.Trials.Watch", more: true))
    _ = try watcher.receive()
    let load = Load(socket: daemon.socketPath)
    for _ in 0..<5 { _ = try watcher.receive() }
    watcher.close()
    try #require(load.waitUntil(count: 300), "the client started 300 trials")
    // What is committed now: every trial acknowledged, and the events the daemon took.
    let committed = load.acknowledged.withLock { $0 }
    let client = try VarlinkClient(path: daemon.socketPath)
    var taken: Set<EventID> = []
    for id in committed.prefix(100) {
      for event in try client.getPlan(GetPlanParameters(id: id)) where event.state != .pending {
        taken.insert(event.id)
      }
    }
    client.close()
    #expect(!taken.isEmpty, "events fired before the backup")

    let file = daemon.directory.appending("trialwatch.backup")
    let state = daemon.directory.appending("state")
    let backup = try trialwatchd(["--config", daemon.configPath, "--state-dir", state, "--backup", file])
    let later = load.count
    let failures = load.stop()
    #expect(failures.isEmpty, "\(failures)")
    #expect(backup.status == .exited(0), "\(backup.errors)")
    #expect(backup.output.hasPrefix("backed up \(state)/data.mdb to \(file): "), "\(backup.output)")
    #expect(backup.output.contains(" trials ("))
    #expect(later > committed.count, "the daemon went on starting trials during the backup")
    daemon.signal(SIGTERM)
    #expect(daemon.waitForExit() == 0)
    #expect(
      try !FileManager.default.contentsOfDirectory(atPath: daemon.directory.path).contains {
        $0.contains(".tmp-")
      })

    let verified = try trialwatchd(["--verify-store", file])
    #expect(verified.status == .exited(0), "\(verified.output)\(verified.errors)")
    #expect(verified.output.hasSuffix("no problems\n"))

    let second = try DaemonProcess(config: quiet)
    let secondState = second.directory.appending("state")
    let restore = try trialwatchd([
      "--config", second.configPath, "--state-dir", secondState, "--restore", file,
    ])
    #expect(restore.status == .exited(0), "\(restore.errors)")
    #expect(restore.output.contains("there was no store to replace"))
    #expect(try trialwatchd(["--state-dir", secondState, "--verify-store"]).status == .exited(0))

    let reader = try LMDBStoreReader(directory: secondState)
    let (trials, ledger) = try reader.read { txn in
      let trials = try committed.map { try txn.trial($0) }
      let ledger = try committed.prefix(100).flatMap { try txn.ledgerEntries(trial: $0) }
      return (trials, Set(ledger.map(\.id)))
    }
    reader.close()
    #expect(trials.allSatisfy { $0 != nil }, "every trial acknowledged before the backup is in it")
    #expect(zip(committed, trials).allSatisfy { $0.1?.id == $0.0 })
    #expect(taken.isSubset(of: ledger), "every event taken before the backup is in its ledger")

    try second.start()
    let ready = try #require(second.notify.waitFor { $0.contains("READY=1") }.found)
    #expect(ready.contains("STATUS="))
    second.signal(SIGTERM)
    #expect(second.waitForExit() == 0)
  }

  @Test func restore_WhileTheDaemonRuns_IsRefusedAndTheDaemonServesOn() throws {
    let daemon = try DaemonProcess()
    try daemon.start()
    try #require(daemon.notify.waitFor { $0.contains("READY=1") }.found != nil)
    let state = daemon.directory.appending("state")
    let file = daemon.directory.appending("backup")
    #expect(try trialwatchd(["--state-dir", state, "--backup", file]).status == .exited(0))

    let restore = try trialwatchd(["--state-dir", state, "--restore", file])
    #expect(restore.status == .exited(1))
    #expect(restore.errors.contains("stop trialwatch.service first"), "\(restore.errors)")
    #expect(
      try FileManager.default.contentsOfDirectory(atPath: state).sorted() == [
        "data.mdb", "lock.mdb", "store.lock",
      ])
    let client = try VarlinkClient(path: daemon.socketPath)
    #expect(try client.startTrial(StartTrialParameters(subject: "still-here")).subject == "still-here")
    client.close()
    daemon.signal(SIGTERM)
    #expect(daemon.waitForExit() == 0)
  }

  /// Each kind of bad file is refused with status 2 and a message naming it, and the store
  /// stays exactly as it was.
  @Test func restore_BadFiles_AreRefusedWithStatus2AndLeaveTheStoreUntouched() throws {
    let scratch = try TemporaryDirectory("restore-bad")
    let state = scratch.appending("state")
    let store = try LMDBTrialRepository(directory: state)
    try StoreCorruption.makeFixture(store)
    store.close()
    let dataFile = state + "/data.mdb"
    let bytes = try Data(contentsOf: URL(fileURLWithPath: dataFile))
    let names = try FileManager.default.contentsOfDirectory(atPath: state).sorted()
    for bad in BadBackup.allCases {
      let work = scratch.appending("work-\(bad)")
      try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
      let file = scratch.appending("\(bad).backup")
      try bad.make(at: file, scratch: work)
      let restore = try trialwatchd(["--state-dir", state, "--restore", file])
      #expect(restore.status == .exited(2), "\(bad): \(restore.errors)")
      #expect(
        restore.errors.hasPrefix("trialwatchd: cannot restore \(file): \(file): "),
        "\(bad): \(restore.errors)")
      for word in bad.expectedWords { #expect(restore.errors.contains(word), "\(bad): \(restore.errors)") }
      #expect(!restore.errors.contains("Backtrac"), "\(bad): no crash report")
      #expect(try Data(contentsOf: URL(fileURLWithPath: dataFile)) == bytes, "\(bad)")
      #expect(try FileManager.default.contentsOfDirectory(atPath: state).sorted() == names, "\(bad)")

      let verify = try trialwatchd(["--verify-store", file])
      #expect(verify.status == .exited(2), "\(bad): \(verify.output)\(verify.errors)")
      #expect(verify.output.contains("problem: ") || verify.errors.contains("damaged"), "\(bad)")
    }
  }

  @Test func verify_AStoreWithProblems_ListsThemWithKeysAndExits2() throws {
    let scratch = try TemporaryDirectory("verify")
    let state = scratch.appending("state")
    let store = try LMDBTrialRepository(directory: state)
    try StoreCorruption.makeFixture(store)
    _ = try StoreCorruption.undeliveredEntryMissingFromOutbox.plant(in: store)
    _ = try StoreCorruption.subjectIndexNamesMissingTrial.plant(in: store)
    store.close()
    let verify = try trialwatchd(["--state-dir", state, "--verify-store"])
    #expect(verify.status == .exited(2))
    let lines = verify.output.split(separator: "\n")
    #expect(lines.count == 3, "\(verify.output)")
    #expect(
      lines.contains {
        $0.hasPrefix("problem: ledger/0000000000000001-r1-reminder-259200000ms (key 0000000000000001")
      })
    #expect(
      lines.contains {
        $0.hasPrefix("problem: subjects/\"ghost\" (key 67686f7374): names trial 0000000000000063")
      })
    let summary =
      "5 trials (3 active), 3 ledger entries, 0 undelivered, 3 logged events, 1 consumer: 2 problems"
    #expect(lines.last.map(String.init) == "\(state)/data.mdb: \(summary)")
  }

  @Test func storeCommands_MissingStoreOrUsage_ExitWith1Or64() throws {
    let scratch = try TemporaryDirectory("maintenance")
    let missing = scratch.appending("none")
    let verify = try trialwatchd(["--state-dir", missing, "--verify-store"])
    #expect(verify.status == .exited(1))
    #expect(verify.errors.contains("no store here"))
    #expect(!FileManager.default.fileExists(atPath: missing), "nothing created")
    let backup = try trialwatchd(["--state-dir", missing, "--backup", scratch.appending("b")])
    #expect(backup.status == .exited(1))
    #expect(try trialwatchd(["--backup", "x", "--restore", "y"]).status == .exited(64))
    #expect(try trialwatchd(["--state-dir", missing, "stray"]).status == .exited(64))
  }

  /// As root, backup, verify and restore of a store that belongs to another user (as
  /// /var/lib/trialwatch belongs to trialwatch) leave every file in the state directory to that
  /// user, and the daemon, run as that user, starts on the result.
  @Test(.enabled(if: getuid() == 0, "needs root to run as another user"))
  func maintenanceAsRoot_LeavesTheStoreToItsUser() throws {
    let scratch = try TemporaryDirectory("owner")
    let state = scratch.appending("state")
    let store = try LMDBTrialRepository(directory: state)
    try StoreCorruption.makeFixture(store)
    store.close()
    try FileManager.default.removeItem(atPath: state + "/lock.mdb")
    let sockets = scratch.appending("run")
    try FileManager.default.createDirectory(atPath: sockets, withIntermediateDirectories: true)
    // Its mode explicitly: other tests bind sockets in this process meanwhile, under a
    // narrower umask for a moment.
    #expect(chmod(sockets, 0o755) == 0)
    for path in [state, sockets] + ["data.mdb", "store.lock"].map({ state + "/" + $0 }) {
      #expect(chown(path, 65534, 65534) == 0)
    }
    let file = scratch.appending("backup")
    #expect(try trialwatchd(["--state-dir", state, "--backup", file]).status == .exited(0))
    #expect(try trialwatchd(["--state-dir", state, "--verify-store"]).status == .exited(0))
    let restore = try trialwatchd(["--state-dir", state, "--restore", file])
    #expect(restore.status == .exited(0), "\(restore.errors)")
    #expect(restore.output.contains("belongs to uid 65534, gid 65534"))
    for name in try FileManager.default.contentsOfDirectory(atPath: state) {
      var st = stat()
      #expect(stat(state + "/" + name, &st) == 0)
      #expect(st.st_uid == 65534 && st.st_gid == 65534, "\(name) belongs to \(st.st_uid):\(st.st_gid)")
    }

    let daemon = try ChildProcess(
      .product("trialwatchd"),
      ["--state-dir", state, "--socket", sockets + "/io.trialwatch", "--config", "/dev/null"],
      environment: ChildProcess.environment(removing: ["NOTIFY_SOCKET", "JOURNAL_STREAM", "WATCHDOG_USEC"]),
      as: .nobody)
    var ready = false
    var said: [String] = []
    while case .line(let line) = daemon.readLine(.errors, timeout: 30) {
      said.append(line)
      if line.contains("ready") {
        ready = true
        break
      }
    }
    #expect(ready, "the daemon, as the store's user, opened the restored store: \(said)")
    daemon.signal(SIGTERM)
    #expect(daemon.wait() == .exited(0))
  }
}
