import Foundation
import Testing
import TrialControl
import TrialDaemonTesting

#if canImport(Glibc)
  import Glibc
#endif

/// The daemon releases its program's and libraries' pages once start-up is over
/// (`ProgramPages`, tested alone in ProcessMemoryTests).
@Suite struct ProgramPagesTests {
  @Test func daemon_ReleasesItsProgramAndLibraryPagesOnceStartUpIsOver_AndServesAfterwards() throws {
    let daemon = try DaemonProcess(config: "[Daemon]\nLogLevel=debug\n")
    try daemon.start()
    #expect(daemon.notify.waitFor { $0.contains("READY=1") }.found != nil)
    // Start-up counts as a spell of work: released a second after it, with no request.
    let line = waitForLine(of: daemon, timeout: 30) { $0.contains("memory released") }
    func bytes(_ field: String) -> Int {
      line.flatMap { $0.split(separator: "\(field)=").last }.flatMap { Int($0.prefix { $0.isNumber }) } ?? 0
    }
    #expect(bytes("program_mapping_bytes") > 0, "released: \(line ?? "no line")")
    #expect(bytes("library_mapping_bytes") > 0, "released: \(line ?? "no line")")

    let client = try VarlinkClient(path: daemon.socketPath, timeout: 10)
    let started = try client.call(Trials.startTrial, StartTrialParameters(subject: "after-release"))
    #expect(
      try client.call(Trials.getTrial, GetTrialParameters(id: started.trial.id)).trial.subject
        == "after-release")
    daemon.signal(SIGTERM)
    #expect(daemon.waitForExit() == 0)
  }

  /// The first line of the daemon's standard error that `match` accepts, read as it comes,
  /// for at most `timeout` seconds.
  private func waitForLine(of daemon: DaemonProcess, timeout: TimeInterval, _ match: (String) -> Bool)
    -> String?
  {
    let deadline = ContinuousClock.now.advanced(by: .seconds(timeout))
    while let line = daemon.child?.readLine(.errors, until: deadline).line {
      if match(line) { return line }
    }
    return nil
  }
}
