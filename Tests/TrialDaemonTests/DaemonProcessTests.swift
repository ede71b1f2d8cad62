import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A `trialwatchd` process started by a test, with its own state directory and notify socket.
final class DaemonProcess {
  let directory: URL
  let notify: NotifyListener
  let process = Process()
  let errors = Pipe()

  init(config: String? = nil, environment: [String: String] = [:], arguments: [String] = []) throws {
    directory = FileManager.default.temporaryDirectory.appendingPathComponent(
      "trialwatchd-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    notify = try NotifyListener(directory: directory)
    let configPath = directory.appendingPathComponent("trialwatch.conf").path
    try (config ?? "").write(toFile: configPath, atomically: true, encoding: .utf8)
    process.executableURL = URL(fileURLWithPath: BuiltProducts.path("trialwatchd"))
    process.arguments =
      [
        "--config", configPath, "--state-dir", directory.appendingPathComponent("state").path,
        "--socket", directory.appendingPathComponent("io.trialwatch").path,
      ] + arguments
    var env = ProcessInfo.processInfo.environment
    env["NOTIFY_SOCKET"] = notify.path
    env.removeValue(forKey: "JOURNAL_STREAM")
    env.removeValue(forKey: "WATCHDOG_USEC")
    for (key, value) in environment { env[key] = value }
    process.environment = env
    process.standardError = errors
    process.standardOutput = FileHandle.nullDevice
  }

  func start() throws {
    try process.run()
  }

  func signal(_ signo: Int32) {
    kill(process.processIdentifier, signo)
  }

  /// Waits for the process to exit (bounded) and returns its status, or nil if it did not.
  func waitForExit(timeout: TimeInterval = 30) -> Int32? {
    let done = DispatchSemaphore(value: 0)
    process.terminationHandler = { _ in done.signal() }
    if !process.isRunning { return process.terminationStatus }
    guard done.wait(timeout: .now() + timeout) == .success else { return nil }
    return process.terminationStatus
  }

  var standardError: String {
    String(decoding: errors.fileHandleForReading.availableData, as: UTF8.self)
  }

  deinit {
    if process.isRunning {
      process.terminate()
      process.waitUntilExit()
    }
    try? FileManager.default.removeItem(at: directory)
  }
}

@Suite struct DaemonProcessTests {
  @Test func lifeCycle_ReadyReloadStop_InOrder() throws {
    let daemon = try DaemonProcess()
    try daemon.start()
    let ready = daemon.notify.waitFor { $0.contains("READY=1") }
    #expect(ready.found?.contains("STATUS=0 active trials; nothing scheduled") == true)
    #expect(ready.seen.first?.contains("EXTEND_TIMEOUT_USEC=") == true, "asks for time while loading")

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
    let state = daemon.directory.appendingPathComponent("state")
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
    let daemon = try DaemonProcess(config: "[Trials]\nDefaultLength=5d\nColour=blue\n", arguments: ["--check-config"])
    let output = Pipe()
    daemon.process.standardOutput = output
    try daemon.start()
    #expect(daemon.waitForExit() == 0)
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    #expect(text.contains("trialwatch.conf:3: warning:"))
    #expect(text.contains("configuration OK"))
  }
}
