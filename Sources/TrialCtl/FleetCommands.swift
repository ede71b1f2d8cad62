import ArgumentParser
import FoundationEssentials
import TrialControl
import TrialCore

// A fleet as the reader sees it.
extension TrialPresenter {
  public func present(fleet: FleetObject) {
    let alive = fleet.nodes.filter(\.alive).count
    let rows = fleet.nodes.map { node in
      [
        node.name, node.alive ? "alive" : "dead", "\(node.shards)",
        node.leaseAge.map { brief($0.duration) } ?? "-",
        node.lag.map { brief($0.duration) } ?? "-", node.version ?? "-",
      ]
    }
    // `Fleet of 3 nodes (2 alive), 16 shards; answered by node-a`, then every node.
    output.showList(
      ListViewModel(
        title:
          "Fleet of \(count(fleet.nodes.count, "node")) (\(alive) alive), \(count(fleet.shardCount, "shard")); "
          + "answered by \(fleet.node)",
        table: TableViewModel(
          columns: ["NODE", "STATE", "SHARDS", "LEASE AGE", "LAG", "VERSION"], rows: rows)))
  }

  /// The lines of `daemon-status` for a node of a fleet: its name, its shards, then each
  /// other node.
  func fleetDetails(_ fleet: FleetObject) -> [LabeledValue] {
    var details = [
      LabeledValue(label: "Fleet node", value: fleet.node),
      LabeledValue(
        label: "Shards",
        value: "\(FleetObject.ranges(fleet.shards)) (\(Set(fleet.shards).count) of \(fleet.shardCount))"),
    ]
    for node in fleet.nodes where node.name != fleet.node {
      var words = [node.alive ? "alive" : "dead", count(node.shards, "shard")]
      if let age = node.leaseAge { words.append("lease renewed \(brief(age.duration)) ago") }
      if let lag = node.lag { words.append("lag \(brief(lag.duration))") }
      if let version = node.version { words.append(version) }
      details.append(
        LabeledValue(label: "Other node", value: "\(node.name): " + words.joined(separator: ", ")))
    }
    return details
  }

  /// `1 node`, `3 nodes`.
  private func count(_ number: Int, _ noun: String) -> String {
    number == 1 ? "1 \(noun)" : "\(number) \(noun)s"
  }
}

struct Fleet: ParsableCommand, SessionCommand {
  static let configuration = CommandConfiguration(
    abstract: "List the nodes of the daemon's fleet: state, shards, lease age, lag and version.",
    discussion: """
      A fleet is several trialwatchd sharing their trials in one PostgreSQL store, each firing the events \
      of the shards it owns. The daemon answers from its last lease round. A daemon that stores its trials \
      on its own host is not a fleet: the command says so and exits with status 1.

      Example: trialwatchctl fleet
      """)

  @OptionGroup var global: GlobalOptions

  func run(_ session: Session) throws {
    let reply = try session.call(Trials.getFleet, NoParameters())
    guard let fleet = reply.fleet else {
      throw CtlFailure(
        "not a fleet: this trialwatchd stores its trials on this host (Backend=lmdb)", exitCode: .failure)
    }
    if !session.json { session.presenter.present(fleet: fleet) }
  }
}

struct Export: ParsableCommand, SessionCommand {
  static let configuration = CommandConfiguration(
    abstract: "Write every trial with its ledger to standard output, as JSON Lines.",
    discussion: """
      One record per line: {"trial":{...}}, then {"event":{...}} for each of its ledger entries (every \
      event taken, over all its revisions), trial after trial in id order; times to the microsecond. After \
      the trials, {"use":{...}} for each subject that had the trial of a plan granted once (Once=). \
      trialwatchd --import FILE reads it into another store. Pages of trials are read one snapshot each, \
      so trials that change meanwhile are exported as each page found them: for an exact copy, export \
      while nothing changes trials.

      Example: trialwatchctl export > trials.jsonl
      """)

  @OptionGroup var global: GlobalOptions
  @Option(
    help: ArgumentHelp(
      "Trials per call (1 to \(ExportParameters.maximumLimit); default \(ExportParameters.defaultLimit)).",
      valueName: "n"))
  var limit: Int?

  func validate() throws {
    if let limit, !(1...ExportParameters.maximumLimit).contains(limit) {
      throw ValidationError("--limit: must be between 1 and \(ExportParameters.maximumLimit)")
    }
  }

  func run(_ session: Session) throws {
    var parameters = ExportParameters(limit: limit)
    var trials = 0
    var entries = 0
    repeat {
      let page = try session.quietly(Trials.export, parameters)
      for record in page.records {
        session.environment.output.write(line: record.jsonLine)
        if record.trial != nil { trials += 1 } else if record.event != nil { entries += 1 }
      }
      parameters.after = page.next
    } while parameters.after != nil
    var uses = 0
    var usesPage = ExportParameters(limit: limit, uses: true)
    repeat {
      let page = try session.quietly(Trials.export, usesPage)
      for record in page.records {
        session.environment.output.write(line: record.jsonLine)
        uses += 1
      }
      usesPage.afterUse = page.nextUse
    } while usesPage.afterUse != nil
    session.presenter.presentExported(trials: trials, entries: entries, uses: uses)
  }
}

extension TrialPresenter {
  /// The notice `export` ends with, on standard error.
  func presentExported(trials: Int, entries: Int, uses: Int) {
    output.showNotice(
      "exported \(trials) trial\(trials == 1 ? "" : "s") and \(entries) ledger entr\(entries == 1 ? "y" : "ies")"
        + (uses > 0 ? " and \(uses) record\(uses == 1 ? "" : "s") of subjects granted a trial once" : ""))
  }
}
