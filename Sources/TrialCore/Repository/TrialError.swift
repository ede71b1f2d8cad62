import FoundationEssentials

/// A request about trials that cannot be carried out, with the reason.
public struct TrialError: Error, Hashable, Sendable, CustomStringConvertible {
  public enum Code: Hashable, Sendable {
    /// No trial with this id, or no active trial for this subject.
    case notFound(id: TrialID?, subject: String?)
    case subjectAlreadyActive(subject: String, existing: TrialID)
    case notActive(TrialID, TrialState)
    /// Only a paused trial resumes.
    case notPaused(TrialID, TrialState)
    /// Only a trial cancelled at its end is uncancelled.
    case notCancelling(TrialID)
    case invalidParameter(TrialField, problem: String)
    case idSpaceExhausted(attempts: Int)
    /// The events after `cursor` are no longer all kept: the oldest kept follows `resumeAfter`.
    case cursorPruned(cursor: EventCursor, resumeAfter: EventCursor, oldest: EventCursor?)
    /// `cursor` lies beyond the newest event logged (`last`): it is not from this store's log.
    case cursorAhead(cursor: EventCursor, last: EventCursor)
    /// `cursor` is of another generation of the log than the store's (`generation`): the log
    /// was restored or imported into since it was handed out. Resume after `resumeAfter`.
    case cursorGeneration(cursor: EventCursor, generation: UInt32, resumeAfter: EventCursor)
    case consumerNotFound(name: String)
    case consumerExists(name: String)
    /// No plan of this name is configured.
    case planNotFound(name: String)
    /// The subject had the trial its plan grants once; `availableAt`: when it may start one
    /// again (its plan's `OnceFor=` after the last start), nil when never.
    case trialAlreadyUsed(SubjectUse, availableAt: Date? = nil)
    /// An extension beyond a limit of its trial's plan (`ExtensionLimits`).
    case extensionRefused(ExtensionRefusal)
  }

  public var code: Code

  public init(_ code: Code) {
    self.code = code
  }

  public static func notFound(id: TrialID) -> TrialError {
    TrialError(.notFound(id: id, subject: nil))
  }

  public static func notFound(subject: String) -> TrialError {
    TrialError(.notFound(id: nil, subject: subject))
  }

  public static func invalid(_ field: TrialField, _ problem: String) -> TrialError {
    TrialError(.invalidParameter(field, problem: problem))
  }

  public var description: String {
    switch code {
    case .notFound(let id?, _): "no trial with id \(id)"
    case .notFound(nil, let subject?): "no active trial for subject \"\(subject)\""
    case .notFound(nil, nil): "no such trial"
    case .subjectAlreadyActive(let subject, let existing):
      "subject \"\(subject)\" already has an active trial (id \(existing))"
    case .notActive(let id, let state): "trial \(id) is not active (it is \(state.rawValue))"
    case .notPaused(let id, let state): "trial \(id) is not paused (it is \(state.rawValue))"
    case .notCancelling(let id): "trial \(id) is not cancelled at its end"
    case .invalidParameter(let field, let problem): "invalid \(field.rawValue): \(problem)"
    case .idSpaceExhausted(let attempts): "no unused trial id found after \(attempts) attempts"
    case .cursorPruned(let cursor, let resumeAfter, let oldest):
      "events after cursor \(cursor) were pruned from the event log; the oldest kept is "
        + (oldest.map { "\($0)" } ?? "none") + " (resume after \(resumeAfter))"
    case .cursorAhead(let cursor, let last):
      "cursor \(cursor) lies beyond the newest event logged (\(last)): it is not from this store's log"
    case .cursorGeneration(let cursor, let generation, let resumeAfter):
      "cursor \(cursor) is of generation \(cursor.generation) of the event log, which is now in generation "
        + "\(generation) (it was restored or imported into since): resume after \(resumeAfter), and tell "
        + "events seen before by their ids"
    case .consumerNotFound(let name): "no consumer named \"\(name)\""
    case .consumerExists(let name): "a consumer named \"\(name)\" already exists"
    case .planNotFound(let name): "no plan named \"\(name)\" is configured"
    case .trialAlreadyUsed(let use, let availableAt):
      "subject \"\(use.subject)\" already had a trial"
        + (use.scope == .all ? " of a plan granted once across plans" : " of plan \"\(use.plan)\"")
        + " (trial \(use.trial), plan \"\(use.plan)\", started \(RFC3339.format(use.firstStartedAt))"
        + (use.hasLaterStart
          ? "; last trial \(use.lastTrial), started \(RFC3339.format(use.lastStartedAt))" : "")
        + ")" + (availableAt.map { "; it may start again at \(RFC3339.format($0))" } ?? "")
    case .extensionRefused(let refusal): "extension refused: \(refusal)"
    }
  }
}
