import ArgumentParser
import ErrnoText
import FoundationEssentials
import TrialControl
import TrialCore

#if canImport(Glibc)
  import Glibc
#endif

struct Metrics: ParsableCommand, SessionCommand {
  static let configuration = CommandConfiguration(
    abstract: "Show the daemon's metrics (io.systemd.Metrics), or write them for Prometheus.",
    discussion: """
      The metrics the daemon keeps as it works: trials by state and plan, events fired, skipped \
      and fired late, how late the timer fires, pending events, events held back from the journal, \
      consumers' positions and lag, commits and their durations, calls and errors by method, \
      connections, the store file, and a fleet node's shards and lease. Counters count since the \
      daemon started. A table by default; --json prints the List replies, one object per line; \
      --prometheus the text exposition format, which --output writes atomically to FILE (for \
      node_exporter's textfile collector: trialwatch-metrics.timer does). NAME picks families \
      (trials, or io.trialwatch.trials). Example: trialwatchctl metrics trials events_fired
      """)

  @OptionGroup var global: GlobalOptions
  @Flag(help: "Print the Prometheus text exposition format.")
  var prometheus = false
  @Flag(help: "List the metric families with their type and meaning instead.")
  var describe = false
  @Option(
    help: ArgumentHelp(
      "Write to FILE (mode 0644), atomically, instead of standard output.", valueName: "file"),
    completion: .file())
  var output: String?
  @Argument(
    help: ArgumentHelp("Families to show (default: every one).", valueName: "name"),
    completion: .list(Self.familyNames))
  var names: [String] = []

  /// The families' short names, for completion.
  static let familyNames = MetricFamily.allCases.map(\.rawValue)

  func validate() throws {
    if prometheus && (global.json || describe) {
      throw ValidationError("--prometheus cannot be combined with --json or --describe")
    }
    for name in names where name.isEmpty || name.contains(where: \.isWhitespace) {
      throw ValidationError("\"\(name)\" is not a metric family's name")
    }
  }

  var parameters: MetricsParameters {
    MetricsParameters(
      names: names.isEmpty
        ? nil : names.map { $0.hasPrefix(SystemdMetrics.prefix) ? $0 : SystemdMetrics.prefix + $0 })
  }

  func run(_ session: Session) throws {
    let families = try replies(SystemdMetrics.describe, session)
    var text = ""
    if describe {
      if global.json {
        text = families.map { WireCoding.text($0) + "\n" }.joined()
      } else {
        text = MetricsTable.describe(families)
      }
    } else {
      let metrics = try replies(SystemdMetrics.list, session)
      if prometheus {
        text = PrometheusText.render(families: families, metrics: metrics)
      } else if global.json {
        text = metrics.map { WireCoding.text($0) + "\n" }.joined()
      } else {
        text = MetricsTable.list(metrics)
      }
    }
    guard let output else {
      for line in text.split(separator: "\n", omittingEmptySubsequences: false).dropLast() {
        session.environment.output.write(line: String(line))
      }
      return
    }
    try Self.writeAtomically(text, to: output)
  }

  private func replies<R>(_ method: VarlinkMethod<MetricsParameters, R>, _ session: Session) throws -> [R] {
    var all: [R] = []
    do {
      try session.client.stream(method, parameters) { reply in
        all.append(reply)
        return true
      }
    } catch let error as VarlinkClientError {
      throw CtlFailure(error)
    }
    return all
  }

  /// Writes `text` to a temporary file beside `path`, syncs it, and renames it to `path`: a
  /// reader (node_exporter) sees the old file or the new one, never half of one. The temporary
  /// name does not end in `.prom`, so the textfile collector passes it over.
  static func writeAtomically(_ text: String, to path: String) throws {
    let temporary = "\(path).\(getpid()).tmp"
    let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw failure("cannot create \(temporary)") }
    // The mode regardless of the umask: the collector runs as another user.
    _ = fchmod(fd, 0o644)
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
      let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
      if written < 0 && errno == EINTR { continue }
      guard written > 0 else {
        let error = failure("cannot write \(temporary)")
        close(fd)
        unlink(temporary)
        throw error
      }
      bytes = bytes.dropFirst(written)
    }
    let synced = fsync(fd) == 0
    close(fd)
    guard synced, rename(temporary, path) == 0 else {
      let error = failure("cannot replace \(path)")
      unlink(temporary)
      throw error
    }
  }

  private static func failure(_ what: String) -> CtlFailure {
    CtlFailure("\(what): \(errnoText(errno))", exitCode: .failure)
  }
}

/// The metrics as tables for a person: one row per metric, the family without its prefix.
enum MetricsTable {
  static func list(_ metrics: [MetricReply]) -> String {
    table(
      ["METRIC", "FIELDS", "VALUE"],
      metrics.map { metric in
        let fields = (metric.fields ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        return [
          short(metric.name), fields.isEmpty ? "-" : fields.joined(separator: " "), metric.value.description,
        ]
      })
  }

  static func describe(_ families: [MetricFamilyReply]) -> String {
    table(
      ["FAMILY", "TYPE", "MEANING"], families.map { [short($0.name), $0.type.rawValue, $0.description] })
  }

  private static func short(_ name: String) -> String {
    name.hasPrefix(SystemdMetrics.prefix) ? String(name.dropFirst(SystemdMetrics.prefix.count)) : name
  }

  /// Columns padded to their widest cell (counted in characters), the last one not.
  private static func table(_ columns: [String], _ rows: [[String]]) -> String {
    let all = [columns] + rows
    let widths = columns.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
    return all.map { row in
      row.enumerated().map { index, cell in
        index == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[index] - cell.count + 2)
      }.joined() + "\n"
    }.joined()
  }
}
