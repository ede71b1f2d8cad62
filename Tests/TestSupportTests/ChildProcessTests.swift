import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

@Suite struct ChildProcessTests {
  @Test func run_OfACommand_CollectsItsStatusOutputAndErrors() throws {
    let done = try ChildProcess.run(
      .path("/bin/sh"), ["-c", "echo out; echo err >&2; read line; echo \"got $line\"; exit 3"],
      input: "input\n")
    #expect(done.status == .exited(3))
    #expect(done.status.code == 3)
    #expect(done.output == "out\ngot input\n")
    #expect(done.errors == "err\n")
  }

  @Test func run_WithAnEnvironment_GivesTheChildExactlyThat() throws {
    let done = try ChildProcess.run(.path("/usr/bin/env"), environment: ["ONLY": "this"])
    #expect(done.output == "ONLY=this\n")
    let inherited = ChildProcess.environment(adding: ["ADDED": "1"], removing: ["PATH"])
    #expect(inherited["ADDED"] == "1")
    #expect(inherited["PATH"] == nil)
  }

  @Test func run_ThatOutlivesItsTimeout_IsKilled() throws {
    let error = try #require(throws: TestSupportError.self) {
      _ = try ChildProcess.run(.path("/bin/sleep"), ["30"], timeout: 0.2)
    }
    #expect(error.description.contains("did not finish within 0.2 s"))
  }

  @Test func readLine_WhileTheChildRuns_ReturnsEachLineAndTimesOutWithoutOne() throws {
    let child = try ChildProcess(.path("/bin/cat"), input: .pipe)
    child.write("first\nsecond\npartial")
    #expect(child.readLine(timeout: 10) == .line("first"))
    #expect(child.readLine(timeout: 10) == .line("second"))
    #expect(child.readLine(timeout: 0) == .timedOut)
    child.write(" line\n")
    #expect(child.readLine(timeout: 10) == .line("partial line"))
    child.closeInput()
    #expect(child.readLine(timeout: 10) == .endOfFile)
    #expect(child.wait() == .exited(0))
  }

  @Test func readLine_OfStandardError_KeepsStandardOutputForLater() throws {
    let child = try ChildProcess(.path("/bin/sh"), ["-c", "echo one; echo two >&2; echo three"])
    #expect(child.readLine(.errors, timeout: 10) == .line("two"))
    #expect(child.readLine(timeout: 10) == .line("one"))
    #expect(child.readLine(timeout: 10) == .line("three"))
    #expect(child.readLine(timeout: 10) == .endOfFile)
    #expect(child.readRest(.errors) == "")
  }

  /// SIGKILL: the test's thread may block SIGTERM, and the child inherits its mask.
  @Test func signal_ToARunningChild_EndsItWithThatSignal() throws {
    let child = try ChildProcess(.path("/bin/cat"), input: .pipe)
    #expect(child.status == nil)
    #expect(child.wait(timeout: 0) == nil)
    child.signal(SIGKILL)
    #expect(child.wait() == .signalled(SIGKILL))
    #expect(child.status?.code == 128 + SIGKILL)
    // Signalling a child that has been reaped does nothing.
    child.signal(SIGTERM)
    #expect(child.status == .signalled(SIGKILL))
  }

  @Test func output_ToAFile_IsAppended() throws {
    let directory = try TemporaryDirectory("child")
    let log = directory.appending("log")
    try "before\n".write(toFile: log, atomically: false, encoding: .utf8)
    let child = try ChildProcess(
      .path("/bin/sh"), ["-c", "echo out; echo err >&2"], output: .file(log), errors: .file(log))
    #expect(child.wait() == .exited(0))
    let text = try String(contentsOfFile: log, encoding: .utf8)
    #expect(text.hasPrefix("before\n"))
    #expect(text.split(separator: "\n").sorted() == ["before", "err", "out"])
  }

  @Test func start_OfAMissingExecutable_ThrowsNamingIt() throws {
    let error = try #require(throws: TestSupportError.self) {
      _ = try ChildProcess(.path("/nonexistent/trialwatch-nothing"))
    }
    #expect(error.description.contains("cannot start /nonexistent/trialwatch-nothing"))
  }

  @Test(.enabled(if: getuid() == 0, "only root can run a process as another user"))
  func user_Nobody_RunsTheChildAsNobodyInNogroupOnly() throws {
    let done = try ChildProcess.run(.path("/usr/bin/id"), as: .nobody)
    #expect(done.status == .exited(0), "\(done.errors)")
    #expect(done.output.hasPrefix("uid=65534(nobody) gid=65534(nogroup) groups=65534(nogroup)"))
    let member = try ChildProcess.run(
      .path("/usr/bin/id"), as: ChildProcess.User("daemon", group: "sys", supplementaryGroups: ["nogroup"]))
    #expect(member.output.contains("gid=3(sys) groups=3(sys),65534(nogroup)"), "\(member.output)")
  }

  @Test func builtProducts_AreBesideTheRunningTests() {
    #expect(FileManager.default.isExecutableFile(atPath: BuiltProducts.path("trialwatchd")))
    #expect(BuiltProducts.path("trialwatchd").hasPrefix(BuiltProducts.directory + "/"))
    #expect(ChildProcess.Executable.product("trialwatchctl").path == BuiltProducts.path("trialwatchctl"))
  }
}

@Suite struct TemporaryDirectoryTests {
  @Test func directory_WhenMade_IsFreshWithMode0711AndGoneWithItsOwner() throws {
    var path = ""
    do {
      let directory = try TemporaryDirectory("unit")
      path = directory.path
      #expect(path.hasPrefix("/tmp/trialwatch-unit-"))
      var info = stat()
      #expect(stat(path, &info) == 0)
      #expect(info.st_mode & 0o777 == 0o711)
      try "x".write(toFile: directory.appending("file"), atomically: false, encoding: .utf8)
    }
    #expect(!path.isEmpty)
    #expect(!FileManager.default.fileExists(atPath: path))
  }

  @Test func twoDirectories_WithOneLabel_AreDistinct() throws {
    let first = try TemporaryDirectory("unit")
    let second = try TemporaryDirectory("unit")
    #expect(first.path != second.path)
    #expect(first.url.path == first.path)
  }
}

@Suite struct UnixDatagramSocketTests {
  func send(_ text: String, to path: String) throws {
    let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: path.utf8) }
    let sent = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        sendto(fd, text, text.utf8.count, 0, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    #expect(sent == text.utf8.count)
  }

  @Test func datagrams_AreReceivedInOrder_AndTheSocketIsThenDrained() throws {
    let socket = try UnixDatagramSocket.temporary()
    #expect(socket.isDrained())
    #expect(try socket.receiveText(timeout: 0) == nil)
    try send("READY=1", to: socket.path)
    try send("STATUS=up", to: socket.path)
    #expect(!socket.isDrained())
    #expect(try socket.receiveText() == "READY=1")
    #expect(try socket.receiveText() == "STATUS=up")
    #expect(socket.isDrained())
  }

  @Test func waitFor_ReturnsTheMatchAndEverythingBefore() throws {
    let socket = try UnixDatagramSocket.temporary()
    for text in ["EXTEND_TIMEOUT_USEC=1", "STATUS=loading", "READY=1", "STATUS=later"] {
      try send(text, to: socket.path)
    }
    let ready = socket.waitFor { $0.contains("READY=1") }
    #expect(ready.found == "READY=1")
    #expect(ready.seen == ["EXTEND_TIMEOUT_USEC=1", "STATUS=loading", "READY=1"])
    let never = socket.waitFor(timeout: 0) { $0.contains("STOPPING=1") }
    #expect(never.found == nil)
    #expect(never.seen == ["STATUS=later"])
  }

  @Test func readingInBackground_KeepsTheOrder_AndCloseRemovesThePath() throws {
    let socket = try UnixDatagramSocket.temporary()
    socket.readInBackground()
    for index in 1...3 { try send("STATUS=\(index)", to: socket.path) }
    #expect(try socket.receiveText() == "STATUS=1")
    #expect(try socket.receiveText() == "STATUS=2")
    #expect(try socket.receiveText() == "STATUS=3")
    #expect(try socket.receiveText(timeout: 0) == nil)
    #expect(socket.isDrained())
    let path = socket.path
    socket.close()
    #expect(!FileManager.default.fileExists(atPath: path))
  }
}
