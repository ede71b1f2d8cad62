import Foundation
import TestSupport
import Testing
import TrialCore
import TrialStoreTesting
import TrialTesting

@testable import TrialStore

#if canImport(Glibc)
  import Glibc
#endif

@Suite struct CrashTests {
  /// A child process (`trialwatch-crashtest`) runs numbered batches against a store on disk;
  /// the test kills it with SIGKILL at random moments, reopens the store and checks it
  /// against the same batches replayed in memory: every batch the child reported is there,
  /// whole, and nothing of a later one; no event is both pending and in the ledger.
  /// `TRIALWATCH_CRASH_KILLS` sets the number of kills (50 by default; `make soak`: 1,000),
  /// `TRIALWATCH_CRASH_SEED` repeats a run.
  @Test func sigkillAtRandomMoments_LosesNoCommittedBatch_AndHalfAppliesNone() throws {
    let environment = ProcessInfo.processInfo.environment
    let kills = environment["TRIALWATCH_CRASH_KILLS"].flatMap(Int.init) ?? 50
    let seed = environment["TRIALWATCH_CRASH_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...UInt64.max)
    var random = SeededGenerator(seed: seed)
    let tool = ChildProcess.Executable.product("trialwatch-crashtest")
    let directory = try TemporaryDirectory("crash")
    let path = directory.appending("store")

    let model = InMemoryTrialRepository()
    var modelPlanner = Planner()
    var modelBatch = 0
    var reported = 0
    var killedMidBatch = 0
    for round in 1...kills {
      let place = "seed \(seed), round \(round)"
      let context = Comment(rawValue: place)
      let child = try ChildProcess(tool, [path])
      // Let it commit a random number of batches, then kill it at a random moment of the
      // next few milliseconds (reading what it reports meanwhile).
      let wanted = Int.random(in: 1...4, using: &random)
      var seen = 0
      func take(_ read: ChildProcess.Read) throws {
        guard case .line(let line) = read else { return }
        let batch = try #require(
          Int(line.dropFirst("committed ".count)), "unexpected output \(line) (\(place))")
        try #require(
          line.hasPrefix("committed ") && batch == reported + 1, "out of order: \(line) (\(place))")
        reported = batch
        seen += 1
      }
      while seen < wanted {
        let read = child.readLine(timeout: 30)
        if case .line = read {
          try take(read)
        } else {
          child.kill()
          child.wait()
          Issue.record("the child stopped reporting (\(read)): \(child.readRest()) (\(place))")
          return
        }
      }
      let pause = Duration.microseconds(Int.random(in: 0...3_000, using: &random))
      let deadline = ContinuousClock.now.advanced(by: pause)
      while case .line(let line) = child.readLine(until: deadline) { try take(.line(line)) }
      child.kill()
      let status = child.wait()
      try #require(
        status == .signalled(SIGKILL), "\(String(describing: status)): \(child.readRest()) (\(place))")
      // Lines written before it died.
      while case .line(let line) = child.readLine(timeout: 0) { try take(.line(line)) }

      let store = try LMDBTrialRepository(directory: path, options: .init(createIfMissing: false))
      let last = try StoreCrashWorkload.lastBatch(in: store)
      try #require(
        last == reported || last == reported + 1,
        "store at batch \(last), child reported \(reported) (\(place))")
      if last == reported + 1 { killedMidBatch += 1 }
      reported = last
      while modelBatch < last {
        modelBatch += 1
        try StoreCrashWorkload.runBatch(modelBatch, repository: model, planner: &modelPlanner)
      }
      // Everything, in every round of `make test` and every tenth of a soak; otherwise the
      // trials a batch can still change (a batch touches trials of the last dozen batches
      // only) and the totals.
      let full = kills <= 100 || round % 10 == 0 || round == kills
      let expected = try full ? RepositorySnapshot(model) : RepositorySnapshot(model, fromBatch: last - 20)
      let found = try full ? RepositorySnapshot(store) : RepositorySnapshot(store, fromBatch: last - 20)
      let difference = found.normalizingLogOrder().difference(from: expected.normalizingLogOrder())
      try #require(difference == nil, "store differs from batches 1...\(last) (\(place))")
      let statistics = try store.statistics()
      try #require(statistics.trials == last * StoreCrashWorkload.trialsPerBatch, "\(statistics) (\(place))")
      if full {
        let active = found.trials.filter(\.isActive).count
        try #require(statistics.activeTrials == active, "\(statistics) (\(place))")
      }
      var restored = Planner()
      try store.restore(into: &restored)
      for entry in found.ledger {
        try #require(restored.pendingEvent(entry.id) == nil, "\(entry.id) both fired and pending (\(place))")
      }
      try #require(restored.pendingEventCount == modelPlanner.pendingEventCount, context)
      // Paused trials too: the resume of a pause that runs out is pending.
      for trial in found.trials where trial.isOpen {
        #expect(restored.pendingEvents(of: trial.id) == modelPlanner.pendingEvents(of: trial.id), context)
      }
      store.close()
    }
    #expect(reported >= kills, "seed \(seed): every round committed at least one batch")
    #expect(try RepositorySnapshot(model).ledger.count > 100, "the workload fired events")
    // Pauses, resumes asked for and pauses run out, each recorded once (the comparison above).
    let kinds = Set(try RepositorySnapshot(model).ledger.map(\.event.kind.name))
    #expect(kinds == ["reminder", "expiry", "paused", "resumed"], "seed \(seed)")
    // Trials of index 2 resume as their pause runs out, those of index 3 when a batch asks.
    let resumedIndices = Set(
      try RepositorySnapshot(model).ledger.filter { $0.event.kind.name == "resumed" }.map {
        $0.event.trialID.rawValue & 0xFF
      })
    #expect(resumedIndices == [2, 3], "seed \(seed)")
    let ledger = try RepositorySnapshot(model).ledger.count
    print(
      "crash test (seed \(seed)): \(kills) kills, \(reported) batches, \(ledger) ledger entries, "
        + "\(killedMidBatch) kills between a commit and its report")
  }
}

@Suite struct ProcessLockTests {
  @Test func storeOpenInAnotherProcess_IsRefusedAsInUse_UntilThatProcessDies() throws {
    let directory = try TemporaryDirectory("lock")
    let path = directory.appending("store")
    let child = try ChildProcess(.product("trialwatch-crashtest"), [path])
    guard case .line = child.readLine(timeout: 30) else {
      child.kill()
      child.wait()
      Issue.record("the child never reported: \(child.readRest())")
      return
    }
    let error = try #require(throws: StoreError.self) { try LMDBTrialRepository(directory: path) }
    #expect(error.kind == .inUse)
    #expect(error.description.contains(path))
    child.kill()
    child.wait()
    let store = try LMDBTrialRepository(directory: path)
    #expect(try StoreCrashWorkload.lastBatch(in: store) >= 1)
  }
}

@Suite struct DiskFullTests {
  /// On a 1 MiB tmpfs, commits fail once the file system is full, with an error naming the
  /// store and the lack of space; everything committed before reads back intact.
  @Test(.enabled(if: getuid() == 0, "needs root to mount a 1 MiB tmpfs"))
  func fullFileSystem_FailsTheCommitClearly_AndKeepsEverythingBefore() throws {
    let directory = try TemporaryDirectory("diskfull")
    let mountPoint = directory.appending("mnt")
    try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
    let mounted = try ChildProcess.run(
      .path("/bin/mount"), ["-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", mountPoint])
    if mounted.status != .exited(0) {
      try Test.cancel(
        "could not mount a tmpfs (is this a container without CAP_SYS_ADMIN?): \(mounted.errors)")
    }
    defer {
      let unmounted = try? ChildProcess.run(.path("/bin/umount"), [mountPoint])
      if unmounted?.status != .exited(0) {
        _ = try? ChildProcess.run(.path("/bin/umount"), ["-l", mountPoint])
        Issue.record("could not unmount \(mountPoint): \(unmounted?.errors ?? "")")
      }
      withExtendedLifetime(directory) {}
    }

    let path = (mountPoint as NSString).appendingPathComponent("store")
    let store = try LMDBTrialRepository(directory: path)
    var committed: [Trial] = []
    var failure: StoreError?
    for batch in 0..<1_000 {
      do {
        let ids = SequenceTrialIDGenerator(Array(UInt64(batch * 20 + 1)...UInt64(batch * 20 + 20)))
        committed += try store.write { txn in
          try (0..<20).map { index in
            try TrialBook.startTrial(
              in: txn, subject: "full-\(batch)-\(index)-" + String(repeating: "z", count: 150),
              endDate: origin.addingTimeInterval(day), reminders: .default, now: origin, ids: ids
            ).trial
          }
        }
      } catch let error as StoreError {
        failure = error
        break
      }
    }
    let error = try #require(failure, "the 1 MiB file system never filled")
    #expect(error.kind == .noSpace)
    #expect(error.description.contains(path))
    #expect(error.description.contains("no space"))
    #expect(committed.count > 100)
    store.close()

    let reopened = try LMDBTrialRepository(directory: path)
    let snapshot = try RepositorySnapshot(reopened)
    #expect(snapshot.trials == committed.sorted { $0.id < $1.id })
    var planner = Planner()
    #expect(try reopened.restore(into: &planner).trials == committed.count)
    reopened.close()
  }
}
