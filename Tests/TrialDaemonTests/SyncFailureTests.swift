import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemon
import TrialDaemonTesting

#if canImport(Glibc)
  import Glibc
#endif

/// What the clients of one round saw: each start acknowledged (its subject and id), and each
/// refused, by client, in the order asked.
private final class ClientLog: @unchecked Sendable {
  // @unchecked: every field is behind `lock`.
  enum Outcome {
    case acknowledged(String, TrialID)
    case refused(String, ControlError)
  }

  private let lock = NSLock()
  private var outcomes: [Int: [Outcome]] = [:]
  private var ends: [Int: String] = [:]

  func record(_ client: Int, _ outcome: Outcome) {
    lock.withLock { outcomes[client, default: []].append(outcome) }
  }
  func end(_ client: Int, _ why: String) { lock.withLock { ends[client] = why } }
  var byClient: [Int: [Outcome]] { lock.withLock { outcomes } }
  var endings: [Int: String] { lock.withLock { ends } }
}

/// A client's connection, used by one thread at a time: the one that made it, then the one
/// that starts trials on it, then the first again once that one ended.
private final class Connection: @unchecked Sendable {
  let client: VarlinkClient
  init(_ client: VarlinkClient) { self.client = client }
}

/// A failed `fdatasync` (or write) of the store is fatal: the real trialwatchd, its LMDB store
/// on disk and its socket, with `Tests/faults/sync_fault.c` loaded (`LD_PRELOAD`) to fail the
/// Nth write or sync of the store's data file with EIO while clients start trials at once.
/// The daemon must write nothing more, say why in the journal entry the catalog explains, and
/// exit with status 3 by itself; started again without the fault, it must hold every start a
/// client was told is done. Each round picks N at random (`TRIALWATCH_SYNC_FAULT_SEED` repeats a
/// run, `TRIALWATCH_SYNC_FAULT_ROUNDS` sets the number of rounds, 5 by default), on the store
/// the rounds before left.
@Suite struct SyncFailureTests {
  static let clients = 4

  /// The shim, compiled now from its source with the system's C compiler.
  static func buildShim(in directory: TemporaryDirectory) throws -> String {
    let compiler = try #require(
      ["/usr/bin/cc", "/usr/local/bin/cc"].first { FileManager.default.isExecutableFile(atPath: $0) },
      "no C compiler (cc): make deps installs gcc")
    let library = directory.appending("sync_fault.so")
    let built = try ChildProcess.run(
      .path(compiler),
      ["-shared", "-fPIC", "-Wall", "-o", library, RepositoryFile.path("Tests/faults/sync_fault.c"), "-ldl"])
    try #require(built.status.code == 0, "cc failed: \(built.errors)")
    return library
  }

  @Test func failedSync_StopsTheDaemon_AndLosesNothingAcknowledged() throws {
    let environment = ProcessInfo.processInfo.environment
    let rounds = environment["TRIALWATCH_SYNC_FAULT_ROUNDS"].flatMap(Int.init) ?? 5
    let seed =
      environment["TRIALWATCH_SYNC_FAULT_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...UInt64.max)
    print("sync failure test: seed \(seed) (TRIALWATCH_SYNC_FAULT_SEED=\(seed) repeats it)")
    var random = SeededGenerator(seed: seed)
    let directory = try TemporaryDirectory("sync-fault")
    let shim = try Self.buildShim(in: directory)
    // One store for every round: each starts from what the rounds before left on disk.
    let shared = try TemporaryDirectory("trialwatchd")
    let dataFile = shared.appending("state/data.mdb")
    var acknowledged: [(subject: String, id: TrialID)] = []
    for round in 1...rounds {
      let at = Int.random(in: 1...40, using: &random)
      let place = "seed \(seed), round \(round), call \(at)"
      let armed = directory.appending("armed-\(round)")
      let faults = directory.appending("faults-\(round).log")
      let daemon = try DaemonProcess(
        environment: [
          "LD_PRELOAD": shim, "TRIALWATCH_FAULT_AT": "\(at)", "TRIALWATCH_FAULT_ARMED": armed,
          "TRIALWATCH_FAULT_LOG": faults, "TRIALWATCH_FAULT_FILE": dataFile,
        ], directory: shared)
      let errors = directory.appending("faulted-\(round).log")
      try daemon.start(errors: .file(errors))
      try #require(daemon.notify.waitFor { $0.contains("READY=1") }.found != nil, "\(place)")

      let log = try Self.startTrials(socket: daemon.socketPath, round: round, arm: armed)
      let status = daemon.waitForExit()
      let stderr = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
      try #require(
        status == StoreFailureEntry.exitStatus,
        "exit status \(String(describing: status)) (\(place)): \(stderr)")
      #expect(
        stderr.contains("message-id=\(EventJournalEntry.MessageID.storeFailed.rawValue)")
          && stderr.contains("store-fault=io-error"), "the journal entry (\(place)): \(stderr)")
      let notified = daemon.notify.waitFor(timeout: 0) { $0.contains("ERRNO=\(EIO)") }
      #expect(notified.found?.contains("STATUS=the store failed to write or sync") == true, "\(place)")
      try Self.checkNothingWrittenAfter(faultLog: faults, place: place)

      var roundAcknowledged = 0
      var refused: [String] = []
      for (client, outcomes) in log.byClient {
        var failed = false
        for outcome in outcomes {
          switch outcome {
          case .acknowledged(let subject, let id):
            #expect(!failed, "client \(client) was told \(subject) is done after a refusal (\(place))")
            acknowledged.append((subject, id))
            roundAcknowledged += 1
          case .refused(let subject, let error):
            failed = true
            refused.append(subject)
            #expect(
              error.name == ControlError.Name.storeUnavailable && error.parameters.reason == "io-error",
              "\(subject): \(error) (\(place))")
          }
        }
      }

      // Started again without the fault, from what is on disk.
      let again = try DaemonProcess(directory: daemon.directory)
      try again.start(errors: .file(directory.appending("restarted-\(round).log")))
      try #require(again.notify.waitFor { $0.contains("READY=1") }.found != nil, "restart (\(place))")
      let client = try VarlinkClient(path: again.socketPath, timeout: patience)
      for (subject, id) in acknowledged {
        let trial = try? client.getTrial(GetTrialParameters(id: id))
        #expect(trial?.subject == subject, "acknowledged start of \(subject) (\(id)) lost (\(place))")
      }
      let kept = refused.filter { (try? client.getTrial(GetTrialParameters(subject: $0))) != nil }
      client.close()
      again.signal(SIGTERM)
      #expect(again.waitForExit() == 0, "\(place)")
      #expect(
        !log.endings.values.contains { $0.hasPrefix("still answered") }, "answered after the fault (\(place))"
      )
      print(
        "sync failure round \(round) (\(place)): \(roundAcknowledged) starts acknowledged, \(refused.count) "
          + "refused (\(kept.count) of them in the store after the restart)")
    }
  }

  /// Starts trials from `clients` connections at once, each until its connection ends (the
  /// daemon stopped) or `patience` passed; the fault is armed once every client is connected.
  private static func startTrials(socket: String, round: Int, arm: String) throws -> ClientLog {
    let log = ClientLog()
    let connections = try (0..<clients).map { _ in
      Connection(try VarlinkClient(path: socket, timeout: patience))
    }
    try #require(FileManager.default.createFile(atPath: arm, contents: nil))
    let deadline = Date.now.addingTimeInterval(patience)
    let group = DispatchGroup()
    for (index, connection) in connections.enumerated() {
      group.enter()
      let thread = Thread {
        defer { group.leave() }
        var number = 0
        while Date.now < deadline {
          number += 1
          let subject = "round\(round)-client\(index)-\(number)"
          do {
            let trial = try connection.client.startTrial(StartTrialParameters(subject: subject))
            log.record(index, .acknowledged(subject, trial.id))
          } catch let error as VarlinkClientError where error.kind == .remote {
            log.record(index, .refused(subject, error.remoteError ?? .internalError("?")))
          } catch {
            return log.end(index, "\(error)")
          }
        }
        log.end(index, "still answered after \(patience) s")
      }
      thread.start()
    }
    #expect(group.wait(timeout: .now() + patience * 2) == .success)
    for connection in connections { connection.client.close() }
    return log
  }

  /// The shim's log: the fault came, and after it nothing was written to or synced on the
  /// data file but LMDB's write-back of the old meta page when the meta page's write failed.
  private static func checkNothingWrittenAfter(faultLog: String, place: String) throws {
    let lines = try String(contentsOfFile: faultLog, encoding: .utf8).split(separator: "\n")
    let fault = try #require(lines.firstIndex { $0.hasSuffix(" EIO") }, "no fault injected (\(place))")
    let after = lines[(fault + 1)...]
    #expect(
      after.allSatisfy { $0 == "after pwrite" } && after.count <= 1,
      "written after the fault: \(after) (\(place))")
  }
}
