import ArgumentParser
import TrialControl
import TrialCore

struct Pause: ParsableCommand, SessionCommand {
  static let configuration = CommandConfiguration(
    abstract: "Pause an active trial: nothing fires, and its time left is frozen until it resumes.",
    discussion: """
      A paused trial keeps its subject and can still be ended; it cannot be extended. With its \
      plan's MaxPause=, it resumes by itself that long after the pause. The journal records the \
      pause (event paused). Example: trialwatchctl pause acme-42
      """)

  @OptionGroup var global: GlobalOptions
  @OptionGroup var trial: TrialArgument

  func run(_ session: Session) throws {
    try trial.change(Trials.pauseTrial, session)
  }
}

struct Resume: ParsableCommand, SessionCommand {
  static let configuration = CommandConfiguration(
    abstract: "Resume a paused trial: it ends its time left after now.",
    discussion: """
      The end moves to now plus the time left the pause froze (a new revision), and the reminders \
      are planned against it; a reminder that fell due before the pause does not fire again. The \
      journal records the resume (event resumed). Example: trialwatchctl resume acme-42
      """)

  @OptionGroup var global: GlobalOptions
  @OptionGroup var trial: TrialArgument

  func run(_ session: Session) throws {
    try trial.change(Trials.resumeTrial, session)
  }
}

extension TrialArgument {
  /// Calls `method` (PauseTrial, ResumeTrial) for the trial named, by id or by subject (found by
  /// the daemon, in the command's own transaction), and shows the trial it replies with.
  func change(_ method: VarlinkMethod<TrialTargetParameters, TrialReply>, _ session: Session) throws {
    try session.showTrial(method, TrialTargetParameters(try trialTarget()))
  }

  /// The trial named, by id or by subject.
  func trialTarget() throws -> TrialTarget {
    switch try target() {
    case .id(let id): .id(id)
    case .subject(let subject): .subject(subject)
    }
  }
}

struct Cancel: ParsableCommand, SessionCommand {
  static let configuration = CommandConfiguration(
    abstract: "Cancel an active or paused trial at its end (or now, with --now).",
    discussion: """
      At its end, the trial stays open until then, marked (show prints Cancels at): its reminders \
      falling due meanwhile are skipped (reason cancel-at-end) unless its plan has \
      RemindAfterCancel=yes, and at its end its expiry fires with outcome cancelled (journal field \
      TRIAL_OUTCOME=cancelled) and the trial is cancelled, not expired. An extension keeps the mark. \
      uncancel takes it back. --now ends the trial at once, as end --outcome cancelled does. \
      Examples: trialwatchctl cancel acme-42; trialwatchctl cancel acme-42 --now
      """)

  @OptionGroup var global: GlobalOptions
  @OptionGroup var trial: TrialArgument
  @Flag(help: "Cancel it now rather than at its end.") var now = false
  @OptionGroup var labels: LabelChangeOptions

  func validate() throws {
    _ = try labels.changes()
  }

  func run(_ session: Session) throws {
    try session.showTrial(
      Trials.cancelTrial,
      CancelTrialParameters(try trial.trialTarget(), atEnd: !now, labels: try labels.changes()))
  }
}

struct Uncancel: ParsableCommand, SessionCommand {
  static let configuration = CommandConfiguration(
    abstract: "Take back the cancel at the end of a trial: it expires at its end again.",
    discussion: """
      Its reminders not yet due fire again as planned. A trial not cancelled at its end is an \
      error (io.trialwatch.TrialNotCancelling). Example: trialwatchctl uncancel acme-42
      """)

  @OptionGroup var global: GlobalOptions
  @OptionGroup var trial: TrialArgument

  func run(_ session: Session) throws {
    try trial.change(Trials.uncancelTrial, session)
  }
}
