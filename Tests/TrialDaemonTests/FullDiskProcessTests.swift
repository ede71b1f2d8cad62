import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting

#if canImport(Glibc)
  import Glibc
#endif

/// The real daemon with its state directory on a small tmpfs, started trials until the disk
/// fills, as an operator would meet it: every refused start is `StoreUnavailable(disk-full)`,
/// the log says so once (not once a refusal), `STATUS=` and GetStatus name it, and once space
/// returns writes are taken again with nothing acknowledged lost. Mounting needs root (as the
/// test suite runs in CI); elsewhere the test is skipped.
@Suite struct FullDiskProcessTests {
  private static let mountable = geteuid() == 0

  @Test(.enabled(if: mountable, "mounting a tmpfs needs root"))
  func fullDisk_RefusesStartsAsStoreUnavailableLoggedOnce_AndRecovers() throws {
    let daemon = try DaemonProcess()
    let state = daemon.directory.appending("state")
    try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
    let mount = try ChildProcess.run(.path("/bin/mount"), ["-t", "tmpfs", "-o", "size=1m", "tmpfs", state])
    try #require(mount.status.code == 0, "mount: \(mount.errors)")
    defer {
      daemon.signal(SIGKILL)
      _ = daemon.waitForExit()
      _ = try? ChildProcess.run(.path("/bin/umount"), [state])
    }
    // Room to give back once the disk is full.
    let filler = state + "/filler"
    try Data(count: 192 * 1024).write(to: URL(fileURLWithPath: filler))

    let log = daemon.directory.appending("daemon.log")
    try daemon.start(errors: .file(log))
    #expect(daemon.notify.waitFor { $0.contains("READY=1") }.found != nil)
    let client = try VarlinkClient(path: daemon.socketPath, timeout: 30)
    let padding = String(repeating: "x", count: 200)
    var acknowledged: [String] = []
    var refusals: [ControlError] = []
    // Starts until 50 are refused; the tmpfs holds a few hundred trials with these labels.
    var n = 0
    while refusals.count < 50 {
      n += 1
      try #require(n < 20_000, "the disk never filled")
      let subject = "subject-\(n)"
      do {
        _ = try client.startTrial(
          StartTrialParameters(
            subject: subject, duration: .seconds(30 * 86_400),
            labels: ["a": padding, "b": padding, "c": padding]))
        acknowledged.append(subject)
      } catch {
        refusals.append(try #require(error.remoteError, "\(error)"))
      }
    }
    #expect(
      refusals.allSatisfy {
        $0.name == ControlError.Name.storeUnavailable && $0.parameters.reason == "disk-full"
      })
    let status = try client.getStatus()
    #expect(status.storeFault?.reason == "disk-full")
    #expect((status.storeFault?.refusedWrites ?? 0) >= refusals.count)
    #expect(
      daemon.notify.waitFor { $0.contains("STATUS=the store refuses writes: the disk is full") }.found != nil)

    // Space returns: the next start is taken.
    try FileManager.default.removeItem(atPath: filler)
    _ = try client.startTrial(StartTrialParameters(subject: "after-space-returned"))
    acknowledged.append("after-space-returned")
    #expect(try client.getStatus().storeFault == nil)

    // Nothing acknowledged is lost, across a restart.
    daemon.signal(SIGTERM)
    #expect(daemon.waitForExit() == 0)
    let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
    let lines = text.split(separator: "\n").filter { $0.contains("the store refuse") }
    // The first refusal, and a summary a minute after it if the run took that long.
    #expect(lines.count >= 1 && lines.count <= 3, "\(lines)")
    #expect(lines.first?.contains("the store refuses writes: the disk is full") == true)

    let again = try DaemonProcess(directory: daemon.directory)
    try again.start(errors: .file(daemon.directory.appending("again.log")))
    #expect(again.notify.waitFor { $0.contains("READY=1") }.found != nil)
    let reopened = try VarlinkClient(path: again.socketPath, timeout: 30)
    for subject in acknowledged {
      #expect(throws: Never.self) { _ = try reopened.getTrial(GetTrialParameters(subject: subject)) }
    }
    again.signal(SIGTERM)
    #expect(again.waitForExit() == 0)
  }
}
