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
    let target: TrialTarget =
      switch try target() {
      case .id(let id): .id(id)
      case .subject(let subject): .subject(subject)
      }
    try session.showTrial(method, TrialTargetParameters(target))
  }
}
