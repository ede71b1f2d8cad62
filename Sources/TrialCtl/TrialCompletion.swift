import ArgumentParser
import FoundationEssentials
import TrialControl
import TrialCore

/// Completion of a TRIAL argument from the running daemon: the subjects of its trials (with
/// `--id`, their ids) that begin with what was typed. `extend` and `end` are offered active
/// trials only. The shell's completion script runs `trialwatchctl` for it, on the socket
/// the command line names (`--socket`, else `$TRIALWATCH_SOCKET`, else the default).
///
/// Quiet and quick: when the daemon cannot be reached, refuses, or is slow, there are simply
/// no candidates, after at most `timeout` for connecting and for each page (no clock is read:
/// the socket's own time-outs bound every wait, and `maximumTrials` the number of pages).
public enum TrialCompletion {
  /// The longest wait for connecting, and for each reply.
  public static let timeout = 0.5
  /// At most this many trials are read.
  public static let maximumTrials = 10_000

  /// ArgumentParser's completion of the argument.
  static let kind = CompletionKind.custom { words, _, prefix in
    candidates(words: words, prefix: prefix, variables: ProcessInfo.processInfo.environment)
  }

  /// The candidates for the word being completed, which begins with `prefix`; `words` is the
  /// whole command line as the shell split it, quotes and all.
  public static func candidates(words: [String], prefix: String, variables: [String: String]) -> [String] {
    candidates(
      words: words, prefix: prefix, variables: variables, pageSize: ListTrialsParameters.maximumLimit)
  }

  static func candidates(words: [String], prefix: String, variables: [String: String], pageSize: Int)
    -> [String]
  {
    let socket = CtlEnvironment.socketPath(option(named: "--socket", in: words), variables: variables)
    let command = words.dropFirst().first
    // Trials in the states the command acts on: active ones (and those in grace) to extend or
    // end, active ones to pause, open ones to cancel or uncancel, paused ones to resume; any to
    // read.
    let states: [TrialState?] =
      switch command {
      case "extend", "end": [.active, .grace]
      case "pause": [.active]
      case "cancel", "uncancel": [.active, .paused]
      case "resume": [.paused]
      default: [nil]
      }
    let ids = words.contains("--id")
    let typed = unquoted(prefix)
    var found: [String] = []
    do {
      let client = try VarlinkClient(path: socket, timeout: timeout)
      var read = 0
      for state in states {
        var parameters = ListTrialsParameters(state: state, limit: pageSize)
        repeat {
          let page = try client.call(Trials.listTrials, parameters)
          read += page.trials.count
          found += page.trials.map { ids ? $0.id.description : $0.subject }.filter { $0.hasPrefix(typed) }
          parameters.after = page.next
        } while parameters.after != nil && read < maximumTrials
      }
    } catch {
      // No daemon, no permission, too slow: no candidates, and nothing printed.
      return []
    }
    return Array(Set(found)).sorted()
  }

  /// Names from the running daemon (`list` of a client) that start with what is typed, sorted;
  /// none when the daemon cannot be reached, quietly and quickly.
  static func names(
    words: [String], prefix: String, variables: [String: String], list: (VarlinkClient) throws -> [String]
  ) -> [String] {
    let socket = CtlEnvironment.socketPath(option(named: "--socket", in: words), variables: variables)
    let typed = unquoted(prefix)
    do {
      let client = try VarlinkClient(path: socket, timeout: timeout)
      return try list(client).filter { $0.hasPrefix(typed) }.sorted()
    } catch {
      return []
    }
  }

  /// The value of `--name value` or `--name=value` on the command line, unquoted.
  static func option(named name: String, in words: [String]) -> String? {
    var value: String?
    for (index, word) in words.enumerated() {
      if word == name, index + 1 < words.count {
        value = words[index + 1]
      } else if word.hasPrefix(name + "=") {
        value = String(word.dropFirst(name.count + 1))
      }
    }
    return value.map(unquoted)
  }

  /// A word as the shell passed it, without the quotes around it (or the opening one of a
  /// word still being typed) and with `~/` for the home folder.
  static func unquoted(_ word: String) -> String {
    var text = Substring(word)
    if let quote = text.first, quote == "'" || quote == "\"" {
      text = text.dropFirst()
      if text.last == quote { text = text.dropLast() }
    }
    if text.hasPrefix("~/"), let home = ProcessInfo.processInfo.environment["HOME"] {
      return home + text.dropFirst()
    }
    return String(text)
  }
}
