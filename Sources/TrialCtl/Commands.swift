import ArgumentParser
import FoundationEssentials
import TrialControl
import TrialCore

/// The trial a command acts on. One rule for every command: 16 hexadecimal digits (the form
/// ids are printed in) name a trial by id; anything else names a subject, meaning its active
/// trial, else its most recent one. `--id` reads the argument as an id (shorter forms
/// allowed), `--subject` as a subject (for a subject that is 16 hexadecimal digits).
struct TrialArgument: ParsableArguments {
  @Argument(
    help: ArgumentHelp(
      "A subject, or a trial id (16 hexadecimal digits); see --id and --subject.", valueName: "trial"),
    completion: TrialCompletion.kind)
  var trial: String
  @Flag(name: .customLong("id"), help: "Read the argument as a trial id.") var isID = false
  @Flag(name: .customLong("subject"), help: "Read the argument as a subject.") var isSubject = false

  enum Target: Equatable {
    case id(TrialID)
    case subject(String)
  }

  func validate() throws {
    _ = try target()
  }

  func target() throws -> Target {
    switch (isID, isSubject) {
    case (true, true): throw ValidationError("give either --id or --subject, not both")
    case (true, false): return .id(try Arguments.trialID(trial))
    case (false, true): return .subject(trial)
    case (false, false):
      if trial.utf8.count == 16, let id = TrialID(trial) { return .id(id) }
      return .subject(trial)
    }
  }
}

// MARK: Reading arguments

enum Arguments {
  static func trialID(_ text: String, _ what: String = "TRIAL") throws -> TrialID {
    guard let id = TrialID(text) else {
      throw ValidationError("\(what) \"\(text)\" is not a trial id (1 to 16 hexadecimal digits)")
    }
    return id
  }

  static func span(_ text: String, option: String) throws -> Duration {
    do {
      let span = try TimeSpan.parse(text)
      guard span > .zero else { throw ValidationError("\(option): the span must be positive") }
      return span
    } catch let error as TimeSpan.ParseError {
      throw ValidationError("\(option): \(error.description) (use systemd's syntax, e.g. 5d, 36h, 1d 12h)")
    }
  }

  static func cursor(_ text: String, _ what: String) throws -> EventCursor {
    guard let cursor = EventCursor(text) else {
      throw ValidationError(
        "\(what): \"\(text)\" is not an event cursor (16 hexadecimal digits, then -GGGGGGGG after a restore, as watch and event-log print them)"
      )
    }
    return cursor
  }

  /// Where a new consumer starts: after `--after`'s cursor, at the oldest event kept with
  /// `--from-oldest`, else after the newest event. When `creating` is false (consume without
  /// `--create`), neither option may be given.
  static func consumerStart(after: String?, fromOldest: Bool, creating: Bool = true) throws -> ConsumerStart {
    if after != nil && fromOldest { throw ValidationError("give either --after or --from-oldest, not both") }
    if !creating && (after != nil || fromOldest) {
      throw ValidationError("--after and --from-oldest go with --create")
    }
    if let after { return .after(try cursor(after, "--after")) }
    return fromOldest ? .oldest : .newest
  }

  static func date(_ text: String, option: String) throws -> Date {
    do {
      return try RFC3339.parse(text)
    } catch {
      throw ValidationError("\(option): \(error.description)")
    }
  }

  /// `text` without the spaces and tabs at its ends: what Foundation's
  /// `trimmingCharacters(in: .whitespaces)` trims, Unicode's space separators (Zs), U+0009
  /// and, as Foundation's set still holds it, U+200B.
  static func trimmingWhitespace(_ text: String) -> String {
    func isWhitespace(_ scalar: Unicode.Scalar) -> Bool {
      scalar == "\t" || scalar == "\u{200B}" || scalar.properties.generalCategory == .spaceSeparator
    }
    let scalars = text.unicodeScalars
    guard let first = scalars.firstIndex(where: { !isWhitespace($0) }),
      let last = scalars.lastIndex(where: { !isWhitespace($0) })
    else { return "" }
    return String(scalars[first...last])
  }

  /// `3d,1d`; `none` or an empty value for no reminders.
  static func reminders(_ text: String) throws -> ReminderSchedule {
    let trimmed = trimmingWhitespace(text)
    if trimmed.isEmpty || trimmed == "none" { return ReminderSchedule.none }
    let spans = try trimmed.split(separator: ",").map { try span(String($0), option: "--reminders") }
    do {
      return try ReminderSchedule(spans)
    } catch {
      throw ValidationError("--reminders: \(error.description)")
    }
  }
}

// MARK: Commands

struct Start: ParsableCommand, SessionCommand {
  static let configuration = CommandConfiguration(
    abstract: "Start a trial for a subject.",
    discussion: """
      With --plan, the trial takes the plan's length, reminders and labels (its own --label options over \
      them) where --duration, --ends-at and --reminders leave them open. Otherwise, without --duration or \
      --ends-at, the daemon's default length applies; without --reminders, its default reminders. A plan \
      with variants gives the trial the one --variant names, else the one the subject gets by a stable hash; \
      the variant's length, reminders, grace and labels win over the plan's.

      Example: trialwatchctl start acme-42 --plan pro --label customer=c-991
      """)

  @OptionGroup var global: GlobalOptions
  @Argument(help: "What is on trial, e.g. a licence key or account name.") var subject: String
  @Option(help: ArgumentHelp("The trial's length.", valueName: "span")) var duration: String?
  @Option(name: .customLong("ends-at"), help: ArgumentHelp("When the trial ends.", valueName: "rfc3339"))
  var endsAt: String?
  @Option(
    help: ArgumentHelp(
      "Reminders before the end, comma-separated; `none` for none.", valueName: "span[,span...]"))
  var reminders: String?
  @Option(
    help: ArgumentHelp("The plan the trial is for (trialwatchctl plans lists them).", valueName: "name"),
    completion: PlanOption.completion)
  var plan: String?
  @Option(
    help: ArgumentHelp(
      "The variant of the plan (trialwatchctl plans lists them); without it, the subject's.",
      valueName: "name"))
  var variant: String?
  @OptionGroup var labels: LabelOptions

  func validate() throws {
    if variant != nil && plan == nil { throw ValidationError("--variant needs --plan") }
    if duration != nil && endsAt != nil {
      throw ValidationError("give either --duration or --ends-at, not both")
    }
    _ = try parameters()
  }

  func parameters() throws -> StartTrialParameters {
    StartTrialParameters(
      subject: subject, duration: try duration.map { try Arguments.span($0, option: "--duration") },
      endsAt: try endsAt.map { try Arguments.date($0, option: "--ends-at") },
      reminders: try reminders.map(Arguments.reminders), labels: try labels.parsed(),
      plan: try PlanOption.checked(plan),
      variant: try PlanOption.checked(variant, option: "--variant", what: "variant"))
  }

  func run(_ session: Session) throws {
    try session.showTrial(Trials.startTrial, try parameters())
  }
}

struct Status: ParsableCommand, SessionCommand {
  static let configuration = CommandConfiguration(
    abstract: "Show one trial, by subject (its active trial, else its most recent) or by id.",
    discussion: "Example: trialwatchctl status acme-42")

  @OptionGroup var global: GlobalOptions
  @OptionGroup var trial: TrialArgument

  func run(_ session: Session) throws {
    let parameters: GetTrialParameters =
      switch try trial.target() {
      case .id(let id): GetTrialParameters(id: id)
      case .subject(let subject): GetTrialParameters(subject: subject)
      }
    try session.showTrial(Trials.getTrial, parameters)
  }
}

struct List: ParsableCommand, SessionCommand {
  static let configuration = CommandConfiguration(
    abstract: "List trials, a page at a time.",
    discussion: "Example: trialwatchctl list --state active --expiring-within 3d")

  @OptionGroup var global: GlobalOptions
  @Option(
    help: ArgumentHelp(
      "Only trials in this state: active, paused, grace, expired, converted or cancelled.", valueName: "state"
    ),
    completion: .list(TrialState.allCases.map(\.rawValue)))
  var state: String?
  @Option(
    name: .customLong("expiring-within"),
    help: ArgumentHelp("Only active trials ending within this span from now.", valueName: "span"))
  var expiringWithin: String?
  @Option(help: ArgumentHelp("Only trials with this label.", valueName: "key=value")) var label: String?
  @Option(
    help: ArgumentHelp("Only trials started with this plan.", valueName: "name"),
    completion: PlanOption.completion)
  var plan: String?
  @Option(help: ArgumentHelp("Trials per page (1 to 1000; default 100).", valueName: "n")) var limit: Int?
  @Option(
    help: ArgumentHelp("Start after this trial id (the cursor a previous page gave).", valueName: "cursor"))
  var after: String?
  @Flag(help: "Fetch every page.") var all = false

  func validate() throws {
    _ = try parameters()
  }

  func parameters() throws -> ListTrialsParameters {
    var stateValue: TrialState?
    if let state {
      guard let value = TrialState(rawValue: state) else {
        throw ValidationError(
          "--state: \"\(state)\" is not one of: "
            + TrialState.allCases.map(\.rawValue).joined(separator: ", "))
      }
      stateValue = value
    }
    if let limit, !(1...ListTrialsParameters.maximumLimit).contains(limit) {
      throw ValidationError("--limit: must be between 1 and \(ListTrialsParameters.maximumLimit)")
    }
    return ListTrialsParameters(
      state: stateValue,
      expiringWithin: try expiringWithin.map { try Arguments.span($0, option: "--expiring-within") },
      limit: limit, after: try after.map { try Arguments.trialID($0, "--after") },
      label: try label.map { text in
        let (key, value) = try LabelOptions.pair(text, option: "--label")
        return "\(key)=\(value)"
      }, plan: try PlanOption.checked(plan))
  }

  func run(_ session: Session) throws {
    var parameters = try parameters()
    var trials: [TrialObject] = []
    var next: TrialID?
    repeat {
      let page = try session.call(Trials.listTrials, parameters)
      trials += page.trials
      next = page.next
      parameters.after = next
    } while all && next != nil
    if !session.json { session.presenter.present(trials: trials, next: next) }
  }
}

struct Extend: ParsableCommand, SessionCommand {
  static let configuration = CommandConfiguration(
    abstract: "Move an active trial's end: later by a span, or to a new time.",
    discussion: """
      A move later is an extension: the trial counts it (status prints Extended: 1 time). Its plan's MaxExtensions= \
      and MaxLength= (as the plan is loaded now) limit them: one beyond is refused with nothing changed \
      (exit status 7), the message naming the limit and, for MaxLength=, the latest end allowed.

      Example: trialwatchctl extend acme-42 --by 7d
      """)

  @OptionGroup var global: GlobalOptions
  @OptionGroup var trial: TrialArgument
  @Option(help: ArgumentHelp("Move the end later by this span.", valueName: "span")) var by: String?
  @Option(name: .customLong("ends-at"), help: ArgumentHelp("The new end.", valueName: "rfc3339")) var endsAt:
    String?
  @OptionGroup var labels: LabelChangeOptions

  func validate() throws {
    _ = try change()
    _ = try labels.changes()
  }

  func change() throws -> TrialEndChange {
    switch (by, endsAt) {
    case (let span?, nil): .by(try Arguments.span(span, option: "--by"))
    case (nil, let date?): .to(try Arguments.date(date, option: "--ends-at"))
    case (nil, nil): throw ValidationError("give --by or --ends-at")
    case (_?, _?): throw ValidationError("give either --by or --ends-at, not both")
    }
  }

  func run(_ session: Session) throws {
    let parameters = ExtendTrialParameters(
      id: try session.trialID(trial), change: try change(), labels: try labels.changes())
    try session.showTrial(Trials.extendTrial, parameters)
  }
}

struct End: ParsableCommand, SessionCommand {
  static let configuration = CommandConfiguration(
    abstract: "End an active trial early; its pending events never fire.",
    discussion: "Example: trialwatchctl end acme-42 --outcome converted")

  @OptionGroup var global: GlobalOptions
  @OptionGroup var trial: TrialArgument
  @Option(
    help: ArgumentHelp("converted or cancelled.", valueName: "outcome"),
    completion: .list(TrialOutcome.allCases.map(\.rawValue)))
  var outcome: String
  @OptionGroup var labels: LabelChangeOptions

  func validate() throws {
    _ = try trialOutcome()
    _ = try labels.changes()
  }

  func trialOutcome() throws -> TrialOutcome {
    guard let value = TrialOutcome(rawValue: outcome) else {
      throw ValidationError("--outcome: \"\(outcome)\" is not one of: converted, cancelled")
    }
    return value
  }

  func run(_ session: Session) throws {
    let parameters = EndTrialParameters(
      id: try session.trialID(trial), outcome: try trialOutcome(), labels: try labels.changes())
    try session.showTrial(Trials.endTrial, parameters)
  }
}

struct Plan: ParsableCommand, SessionCommand {
  static let configuration = CommandConfiguration(
    abstract: "Show every event of a trial, past and future, with its state.",
    discussion: "Example: trialwatchctl plan acme-42")

  @OptionGroup var global: GlobalOptions
  @OptionGroup var trial: TrialArgument

  func run(_ session: Session) throws {
    let id = try session.trialID(trial)
    try session.show(Trials.getPlan, GetPlanParameters(id: id)) { $0.present(plan: $1.events, of: id) }
  }
}

struct Simulate: ParsableCommand, SessionCommand {
  static let configuration = CommandConfiguration(
    abstract: "Show what would fire between now and a time, changing nothing.",
    discussion: "Example: trialwatchctl simulate +7d")

  @OptionGroup var global: GlobalOptions
  @Argument(help: ArgumentHelp("An RFC 3339 time, or +span from now.", valueName: "at")) var at: String

  func validate() throws {
    _ = try target()
  }

  func target() throws -> SimulateParameters.Target {
    do {
      return try SimulateParameters.Target(parsing: at)
    } catch {
      throw ValidationError("AT: \(error.problem)")
    }
  }

  func run(_ session: Session) throws {
    let target = try target()
    try session.show(Trials.simulate, SimulateParameters(at: target)) {
      $0.present(simulation: $1.events, until: target.resolve(now: session.environment.clock.now()))
    }
  }
}
