import Foundation
import TestSupport
import Testing
import TrialCore
import TrialDaemon
import TrialDaemonTesting
import TrialStore

#if canImport(Glibc)
  import Glibc
#endif

/// The real daemon under a real cgroup memory limit (`MemoryMax=`): at the need the documented
/// figures give for its store (`MemoryNeed`) it starts, fires what is due and answers; at half
/// of it, it fails its start with a message naming the limit, the need and the fix, and leaves
/// the store as it was. Root only: the test makes cgroups (v1's memory controller, or v2's).
@Suite(.serialized) struct MemoryLimitTests {
  /// Enough trials that the part per trial outweighs the base, few enough to write quickly.
  static let trials = 200_000

  @Test(.enabled(if: getuid() == 0, "making a cgroup needs root"))
  func cgroupLimit_BelowNeed_FailsStart() throws {
    let daemon = try DaemonProcess()
    try Self.populate(daemon)
    let file = daemon.directory.appending("state/data.mdb")
    let before = try Data(contentsOf: URL(fileURLWithPath: file))
    let need = try Self.need(daemon)
    let cgroup = try Self.cgroup(limit: need.bytes / 2, label: "below")

    try daemon.start(in: cgroup)
    let failure = try #require(daemon.notify.waitFor { $0.contains("ERRNO=") }.found)
    #expect(failure.contains("ERRNO=\(ENOMEM)"))
    #expect(daemon.waitForExit() == 1)
    let errors = daemon.standardError
    #expect(errors.contains("cannot start: the memory limit of its cgroup"), "\(errors)")
    #expect(errors.contains(cgroup.path), "names the file of the limit: \(errors)")
    #expect(errors.contains("\(Self.trials + 1) active trials"), "\(errors)")
    #expect(errors.contains("raise MemoryMax= to at least \(need.recommendedMegabytes)M"), "\(errors)")
    #expect(!errors.contains("store loaded"), "refused before loading the store: \(errors)")
    #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == before, "the store file is untouched")
    let store = try LMDBTrialRepository(directory: daemon.directory.appending("state"))
    #expect(try store.statistics().activeTrials == Self.trials + 1)
    store.close()
  }

  @Test(.enabled(if: getuid() == 0, "making a cgroup needs root"))
  func cgroupLimit_AtNeed_StartsFiresAnswers() throws {
    let daemon = try DaemonProcess()
    try Self.populate(daemon)
    // The kernel takes a limit down to whole pages.
    let need = try Self.need(daemon)
    let cgroup = try Self.cgroup(limit: (need.bytes + 4095) / 4096 * 4096, label: "at")

    // As at a boot: the store's pages not in the page cache, so that the daemon's cgroup is
    // charged for those its start reads (else they stay charged to the test that wrote them).
    let fd = open(daemon.directory.appending("state/data.mdb"), O_RDONLY)
    try #require(fd >= 0)
    #expect(fsync(fd) == 0 && posix_fadvise(fd, 0, 0, Int32(POSIX_FADV_DONTNEED)) == 0)
    close(fd)
    // Standard error to a file: the daemon logs each event it fires there.
    let log = daemon.directory.appending("trialwatchd.log")
    try daemon.start(errors: .file(log), in: cgroup)
    let ready = daemon.notify.waitFor { $0.contains("READY=1") || $0.contains("ERRNO=") }
    let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
    try #require(ready.found?.contains("READY=1") == true, "not ready under \(cgroup.limit) bytes: \(text)")

    // The trial due before the start fired at the start (its expiry, late), and the daemon
    // answers trialwatchctl about it.
    let status = try ChildProcess.run(
      .path(Self.trialwatchctl), ["status", "--socket", daemon.socketPath, "--json", "due-at-start"])
    #expect(status.status == .exited(0), "\(status.errors)")
    #expect(
      status.output.contains("\"state\" : \"expired\"") || status.output.contains("\"state\":\"expired\""))
    let summary = try ChildProcess.run(
      .path(Self.trialwatchctl), ["daemon-status", "--socket", daemon.socketPath])
    #expect(summary.status == .exited(0), "\(summary.errors)")
    #expect(summary.output.contains("\(Self.trials)"), "\(summary.output)")

    daemon.signal(SIGTERM)
    #expect(daemon.waitForExit() == 0)
    let logged = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
    #expect(logged.contains("memory limit checked"), "\(logged)")
    print("memory limit test: \(cgroup.limit) bytes, peak charged \(cgroup.peakUsage.map { "\($0)" } ?? "?")")
  }

  /// What the documented figures give for the store of `daemon`, as the daemon reckons it.
  static func need(_ daemon: DaemonProcess) throws -> MemoryNeed {
    let store = try LMDBTrialRepository(directory: daemon.directory.appending("state"))
    defer { store.close() }
    let space = try #require(store.space())
    return MemoryNeed(trials: Self.trials + 1, storeBytes: space.fileBytes - space.freeBytes)
  }

  /// The cgroup, or the test skipped with the reason there is none.
  static func cgroup(limit: Int, label: String) throws -> MemoryCgroup {
    do {
      return try MemoryCgroup(limit: limit, label: label)
    } catch let unavailable as MemoryCgroup.Unavailable {
      try Test.cancel("no cgroup memory controller to write to: \(unavailable)")
    }
  }

  /// `trials` active trials ending 10 to 40 days from now, with the default reminders, and one
  /// more, `due-at-start`, whose end has passed: the daemon fires its expiry as it starts.
  static func populate(_ daemon: DaemonProcess) throws {
    let repository = try LMDBTrialRepository(directory: daemon.directory.appending("state"))
    defer { repository.close() }
    let now = SystemWallClock().now()
    var generator = SeededGenerator(seed: 7)
    var written = 0
    while written < trials {
      let batch = written..<min(written + 50_000, trials)
      try repository.write { txn in
        for index in batch {
          let end = now.addingTimeInterval(Double.random(in: 10...40, using: &generator) * 86_400)
          try txn.putTrial(
            Trial(
              id: TrialID(UInt64(index) * 2 + 3), subject: "memory-\(index)",
              period: TrialPeriod(startDate: now, endDate: end)))
        }
      }
      written = batch.upperBound
    }
    try repository.write { txn in
      try txn.putTrial(
        Trial(
          id: TrialID(1), subject: "due-at-start",
          period: TrialPeriod(
            startDate: now.addingTimeInterval(-7_200), endDate: now.addingTimeInterval(-3_600)),
          reminders: .none))
    }
  }

  /// trialwatchctl as installed: a link of that name to the trialwatchd built beside the tests.
  static let trialwatchctl: String = {
    let folder = BuiltProducts.path("trialwatchctl-memory")
    let link = folder + "/trialwatchctl"
    try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    if (try? FileManager.default.destinationOfSymbolicLink(atPath: link)) == nil {
      try? FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "../trialwatchd")
    }
    return link
  }()
}
