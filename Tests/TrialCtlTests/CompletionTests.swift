import Foundation
import TestSupport
import Testing
import TrialControl
import TrialCore
import TrialDaemonTesting

@testable import TrialCtl

#if canImport(Glibc)
  import Glibc
#endif

/// Shell completion: the scripts ArgumentParser generates, and the completion of TRIAL
/// arguments from the daemon, against the control server over a real engine.
@Suite struct CompletionTests {
  /// A daemon with trials acme-1, acme-2 (active) and beta (ended).
  static func fixtureWithTrials() throws -> ControlFixture {
    let fixture = try ctlFixture()
    let client = try fixture.client()
    for subject in ["acme-1", "acme-2", "beta"] {
      _ = try client.startTrial(StartTrialParameters(subject: subject))
    }
    _ = try client.endTrial(EndTrialParameters(id: TrialID(3), outcome: .cancelled))
    return fixture
  }

  @Test func trialCompletion_OfASubjectPrefix_ListsTheDaemonsSubjects() throws {
    let fixture = try Self.fixtureWithTrials()
    let words = ["trialwatchctl", "status", "--socket", fixture.socketPath, "ac"]
    #expect(TrialCompletion.candidates(words: words, prefix: "ac", variables: [:]) == ["acme-1", "acme-2"])
    let all = words.dropLast() + [""]
    #expect(
      TrialCompletion.candidates(words: Array(all), prefix: "", variables: [:]) == [
        "acme-1", "acme-2", "beta",
      ])
  }

  @Test(arguments: ["extend", "end"])
  func trialCompletion_ForCommandsThatChangeATrial_ListsActiveTrialsOnly(command: String) throws {
    let fixture = try Self.fixtureWithTrials()
    let words = ["trialwatchctl", command, "--socket=\(fixture.socketPath)", ""]
    #expect(TrialCompletion.candidates(words: words, prefix: "", variables: [:]) == ["acme-1", "acme-2"])
  }

  @Test func trialCompletion_WithTheIDFlag_ListsIDs() throws {
    let fixture = try Self.fixtureWithTrials()
    let words = ["trialwatchctl", "plan", "--id", "--socket", fixture.socketPath, "00"]
    #expect(
      TrialCompletion.candidates(words: words, prefix: "00", variables: [:]) == [
        "0000000000000001", "0000000000000002", "0000000000000003",
      ])
  }

  @Test func trialCompletion_OfMoreThanAPage_FollowsTheCursor() throws {
    let fixture = try Self.fixtureWithTrials()
    let words = ["trialwatchctl", "status", ""]
    let found = TrialCompletion.candidates(
      words: words, prefix: "", variables: ["TRIALWATCH_SOCKET": fixture.socketPath], pageSize: 1)
    #expect(found == ["acme-1", "acme-2", "beta"])
  }

  @Test func trialCompletion_WhenTheDaemonIsUnreachable_ListsNothing() {
    let words = ["trialwatchctl", "status", "--socket", "/nonexistent/io.trialwatch", ""]
    #expect(TrialCompletion.candidates(words: words, prefix: "", variables: [:]) == [])
  }

  @Test func trialCompletion_WhenTheDaemonDoesNotAnswer_GivesUpQuickly() throws {
    // A socket that takes connections into its backlog and never answers (reads no longer
    // wait for the engine, so a busy engine would answer).
    let scratch = try TemporaryDirectory("completion")
    let path = scratch.appending("silent")
    let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    #expect(listener >= 0)
    defer { close(listener) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    #expect(bound == 0 && listen(listener, 8) == 0)
    let began = ContinuousClock.now
    let found = TrialCompletion.candidates(
      words: ["trialwatchctl", "status", ""], prefix: "", variables: ["TRIALWATCH_SOCKET": path]
    )
    #expect(found == [])
    // It gives up after its timeout rather than hanging the shell: the bound says "did not
    // hang", with room for a busy machine, not how fast it gave up.
    #expect(ContinuousClock.now - began < .seconds(TrialCompletion.timeout * 20))
  }

  @Test func completionRequest_FromTheShell_PrintsTheCandidates() throws {
    let fixture = try Self.fixtureWithTrials()
    let run = try Ctl.run(
      ["---completion", "status", "--", "positional@0", "2", "2", "trialwatchctl", "status", "ac"],
      environment: ["TRIALWATCH_SOCKET": fixture.socketPath])
    #expect(run.status == 0, "\(run.errors)")
    #expect(run.lines == ["acme-1", "acme-2"])
    #expect(run.errors.isEmpty)
  }

  @Test(arguments: ["bash", "zsh", "fish"])
  func completionScript_ForEachShell_IsGeneratedAndParses(shell: String) throws {
    let run = try Ctl.run(["--generate-completion-script", shell])
    #expect(run.status == 0, "\(run.errors)")
    #expect(run.output.contains("trialwatchctl"))
    #expect(run.output.contains("---completion"), "the TRIAL argument asks trialwatchctl")
    guard let checker = Shells.syntaxCheck[shell], let binary = Shells.find(shell) else { return }
    let scratch = try TemporaryDirectory("completion")
    let script = scratch.appending("trialwatchctl.\(shell)")
    try run.output.write(toFile: script, atomically: true, encoding: .utf8)
    let check = try ChildProcess.run(.path(binary), checker + [script])
    #expect(check.status.code == 0, "\(shell): \(check.output)\(check.errors)")
  }

  @Test func bashCompletion_OfATrialArgument_AsksTheDaemon() throws {
    guard let bash = Shells.find("bash") else { return }
    let fixture = try Self.fixtureWithTrials()
    let scratch = try TemporaryDirectory("completion")
    let script = scratch.appending("trialwatchctl.bash")
    try Ctl.run(["--generate-completion-script", "bash"]).output.write(
      toFile: script, atomically: true, encoding: .utf8)
    // What bash does on TAB after `trialwatchctl status --socket PATH ac`, then `trialwatchctl st`.
    let complete = """
      source "$1"
      complete_line() {
        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; COMPREPLY=()
        _trialwatchctl "$1" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
        printf '%s\\n' "${COMPREPLY[@]}"
      }
      complete_line "$2" status --socket "$3" ac
      echo --
      complete_line "$2" st
      """
    let run = try ChildProcess.run(
      .path(bash), ["-c", complete, "bash", script, Ctl.binary, fixture.socketPath],
      environment: Ctl.baseEnvironment)
    #expect(run.status.code == 0, "\(run.errors)")
    #expect(run.output == "acme-1\nacme-2\n--\nstart\nstatus\nstats\n", "\(run.errors)")
  }
}

enum Shells {
  /// How each shell checks a script without running it.
  static let syntaxCheck = ["bash": ["-n"], "zsh": ["-n"], "fish": ["--no-execute"]]

  static func find(_ shell: String) -> String? {
    ["/usr/bin/\(shell)", "/bin/\(shell)", "/usr/local/bin/\(shell)"].first {
      FileManager.default.isExecutableFile(atPath: $0)
    }
  }
}
