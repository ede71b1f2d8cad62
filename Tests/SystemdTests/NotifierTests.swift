import Foundation
import TestSupport
import Testing

@testable import Systemd

/// sd_notify against a datagram socket the test binds and reads. Each test that changes the
/// environment runs in a child process of its own (an exit test), so no other test of the
/// run sees its `NOTIFY_SOCKET`.
@Suite struct NotifierTests {
  @Test func assignment_OfEachState_IsTheDocumentedLine() {
    #expect(NotifyState.ready.assignment == "READY=1")
    #expect(NotifyState.reloading.assignment == "RELOADING=1")
    #expect(NotifyState.stopping.assignment == "STOPPING=1")
    #expect(NotifyState.watchdog.assignment == "WATCHDOG=1")
    #expect(NotifyState.status("12 active trials").assignment == "STATUS=12 active trials")
    #expect(NotifyState.monotonicUsec(42).assignment == "MONOTONIC_USEC=42")
    #expect(NotifyState.extendTimeoutUsec(7).assignment == "EXTEND_TIMEOUT_USEC=7")
    #expect(NotifyState.errno(13).assignment == "ERRNO=13")
    #expect(NotifyState.mainPID(4711).assignment == "MAINPID=4711")
  }

  @Test func status_WithLineBreaks_IsKeptOnOneLine() {
    #expect(NotifyState.status("a\nb\r\nc").assignment == "STATUS=a b  c")
  }

  @Test func extendTimeout_OfADuration_IsInMicroseconds() {
    #expect(NotifyState.extendTimeout(.seconds(90)) == .extendTimeoutUsec(90_000_000))
    #expect(NotifyState.extendTimeout(.milliseconds(1500)) == .extendTimeoutUsec(1_500_000))
    #expect(NotifyState.extendTimeout(.nanoseconds(2999)) == .extendTimeoutUsec(2))
    #expect(NotifyState.extendTimeout(.seconds(-1)) == .extendTimeoutUsec(0))
  }

  @Test func monotonicClock_WhenReloading_AdvancesAndMatchesReloadingNow() {
    let before = SystemdNotifier.monotonicMicroseconds()
    let states = NotifyState.reloadingNow()
    let after = SystemdNotifier.monotonicMicroseconds()
    #expect(before > 0)
    #expect(states.count == 2)
    #expect(states.first == .reloading)
    guard case .monotonicUsec(let value) = states.last else {
      Issue.record("expected MONOTONIC_USEC, got \(states)")
      return
    }
    #expect(before <= value && value <= after)
  }

  @Test func send_ToTheNotifySocket_ArrivesInOrderWithExactPayloads() async {
    await #expect(processExitsWith: .success) { () throws in
      let socket = try UnixDatagramSocket.temporary()
      defer { socket.close() }
      setenv("NOTIFY_SOCKET", socket.path, 1)
      let notifier = SystemdNotifier()
      #expect(notifier.isEnabled)

      #expect(try notifier.send(.extendTimeout(.seconds(30)), .status("Loading 1000000 trials")))
      #expect(try notifier.send(.ready, .status("1204 active trials; next: acme-42 expires in 2h 13min")))
      #expect(try notifier.send(.watchdog))
      let before = SystemdNotifier.monotonicMicroseconds()
      #expect(try notifier.send(NotifyState.reloadingNow()))
      let after = SystemdNotifier.monotonicMicroseconds()
      #expect(try notifier.send([.ready]))
      #expect(try notifier.send(.stopping))
      #expect(try notifier.send(.status("Failed to open store: Permission denied"), .errno(13)))
      #expect(try notifier.send(.mainPID(getpid())))

      #expect(try socket.receiveText() == "EXTEND_TIMEOUT_USEC=30000000\nSTATUS=Loading 1000000 trials")
      #expect(
        try socket.receiveText() == "READY=1\nSTATUS=1204 active trials; next: acme-42 expires in 2h 13min")
      #expect(try socket.receiveText() == "WATCHDOG=1")
      let reloading = try socket.receiveText() ?? ""
      let lines = reloading.split(separator: "\n")
      #expect(lines.count == 2)
      #expect(lines.first == "RELOADING=1")
      let stamp = lines.last.flatMap { $0.hasPrefix("MONOTONIC_USEC=") ? UInt64($0.dropFirst(15)) : nil }
      #expect(stamp.map { before <= $0 && $0 <= after } == true, "\(reloading) not in [\(before), \(after)]")
      #expect(try socket.receiveText() == "READY=1")
      #expect(try socket.receiveText() == "STOPPING=1")
      #expect(try socket.receiveText() == "STATUS=Failed to open store: Permission denied\nERRNO=13")
      #expect(try socket.receiveText() == "MAINPID=\(getpid())")
      #expect(socket.isDrained())
      // sd_notify is called with unset_environment = 0: later messages still reach the manager.
      #expect(getenv("NOTIFY_SOCKET").map { String(cString: $0) } == socket.path)
    }
  }

  @Test func send_WithoutNotifySocket_SendsNothing() async {
    await #expect(processExitsWith: .success) { () throws in
      unsetenv("NOTIFY_SOCKET")
      let notifier = SystemdNotifier()
      #expect(!notifier.isEnabled)
      #expect(try notifier.send(.ready) == false)
      setenv("NOTIFY_SOCKET", "", 1)
      #expect(!notifier.isEnabled)
    }
  }

  @Test func send_OfNoState_DoesNothing() async {
    await #expect(processExitsWith: .success) { () throws in
      let socket = try UnixDatagramSocket.temporary()
      defer { socket.close() }
      setenv("NOTIFY_SOCKET", socket.path, 1)
      #expect(try SystemdNotifier().send([]) == false)
      #expect(try SystemdNotifier().send(.watchdog))
      #expect(try socket.receiveText() == "WATCHDOG=1")
    }
  }

  @Test func send_ToAnUnreachableSocket_ThrowsWithErrno() async {
    await #expect(processExitsWith: .success) { () throws in
      setenv("NOTIFY_SOCKET", "/nonexistent-trialwatch-test/notify.sock", 1)
      let error = #expect(throws: SystemdError.notifyFailed) {
        try SystemdNotifier().send(.ready)
      }
      #expect(error?.errno == ENOENT)
      #expect(error?.description.hasPrefix("sd_notify: ") == true)
    }
  }

  // MARK: Watchdog

  @Test func watchdogInterval_ForThisProcess_IsRead() async {
    await #expect(processExitsWith: .success) { () throws in
      setenv("WATCHDOG_USEC", "3000000", 1)
      setenv("WATCHDOG_PID", String(getpid()), 1)
      #expect(try SystemdNotifier.watchdogInterval() == .seconds(3))
      unsetenv("WATCHDOG_PID")
      setenv("WATCHDOG_USEC", "1500", 1)
      #expect(try SystemdNotifier.watchdogInterval() == .microseconds(1500))
      // Not cleared by reading it.
      #expect(getenv("WATCHDOG_USEC") != nil)
    }
  }

  @Test func watchdogInterval_ForAnotherProcessOrUnset_IsNil() async {
    await #expect(processExitsWith: .success) { () throws in
      unsetenv("WATCHDOG_USEC")
      unsetenv("WATCHDOG_PID")
      #expect(try SystemdNotifier.watchdogInterval() == nil)
      setenv("WATCHDOG_USEC", "3000000", 1)
      setenv("WATCHDOG_PID", String(getpid() + 1), 1)
      #expect(try SystemdNotifier.watchdogInterval() == nil)
    }
  }

  @Test(arguments: [
    ("WATCHDOG_USEC", "abc"), ("WATCHDOG_USEC", "0"), ("WATCHDOG_USEC", ""),
    ("WATCHDOG_USEC", "18446744073709551615"),
    ("WATCHDOG_PID", "not-a-pid"),
  ])
  func watchdogInterval_WithMalformedSettings_Throws(name: String, value: String) async {
    await #expect(processExitsWith: .success) { [name, value] () throws in
      setenv("WATCHDOG_USEC", "3000000", 1)
      unsetenv("WATCHDOG_PID")
      setenv(name, value, 1)
      let error = #expect(throws: SystemdError.invalidWatchdogSettings) {
        try SystemdNotifier.watchdogInterval()
      }
      #expect(error?.errno == EINVAL)
    }
  }
}
