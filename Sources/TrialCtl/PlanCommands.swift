import ArgumentParser
import FoundationEssentials
import TrialControl
import TrialCore

struct Plans: ParsableCommand, CtlCommand {
  static let configuration = CommandConfiguration(
    abstract: "List the plans: length, reminders, labels and active trials of each.",
    discussion: """
      A plan is a named kind of trial, one file each: /etc/trialwatch/plans/NAME.conf, read when the daemon \
      starts and at systemctl reload trialwatch. A trial started with --plan takes its length, reminders and \
      labels, and keeps them when the plan changes later.

      Example: trialwatchctl plans
      """)

  @OptionGroup var global: GlobalOptions

  func run(in environment: CtlEnvironment) throws {
    let session = try Session(global, environment)
    let reply = try session.call(Trials.listPlans, ListPlansParameters())
    if !session.json { session.presenter.present(plans: reply.plans) }
  }
}

/// Options that name a plan.
enum PlanOption {
  /// Checks a `--plan` value as the daemon would.
  static func checked(_ plan: String?, option: String = "--plan") throws -> String? {
    if let plan, let problem = TrialPlan.validateName(plan) {
      throw ValidationError("\(option): the plan name \"\(plan)\" \(problem)")
    }
    return plan
  }

  /// Completion of a plan name from the running daemon (`ListPlans`, without counting
  /// trials): quiet and quick as `TrialCompletion`, with no candidates when the daemon cannot
  /// be reached.
  static let completion = CompletionKind.custom { words, _, prefix in
    candidates(words: words, prefix: prefix, variables: ProcessInfo.processInfo.environment)
  }

  static func candidates(words: [String], prefix: String, variables: [String: String]) -> [String] {
    let socket = CtlEnvironment.socketPath(
      TrialCompletion.option(named: "--socket", in: words), variables: variables)
    let typed = TrialCompletion.unquoted(prefix)
    do {
      let client = try VarlinkClient(path: socket, timeout: TrialCompletion.timeout)
      let reply = try client.call(Trials.listPlans, ListPlansParameters(activeTrials: false))
      return reply.plans.map(\.name).filter { $0.hasPrefix(typed) }.sorted()
    } catch {
      return []
    }
  }
}

extension TrialPresenter {
  public func present(plans: [PlanObject]) {
    let rows = plans.map { plan in
      [
        plan.name, TimeSpan.format(plan.length.duration), reminders(plan.reminders.map(\.duration)),
        plan.labels.isEmpty ? "-" : labels(plan.labels),
        plan.activeTrials.map(String.init) ?? "-", plan.description ?? "",
      ]
    }
    output.showList(
      ListViewModel(
        table: TableViewModel(
          columns: ["NAME", "LENGTH", "REMINDERS", "LABELS", "ACTIVE", "DESCRIPTION"], rows: rows),
        emptyMessage: "No plans. A plan is a file /etc/trialwatch/plans/NAME.conf (trialwatch.conf(5))."))
  }
}
