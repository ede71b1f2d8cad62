import Foundation

/// A request about trials that cannot be carried out, with the reason.
public struct TrialError: Error, Hashable, Sendable, CustomStringConvertible {
  public enum Code: Hashable, Sendable {
    /// No trial with this id, or no active trial for this subject.
    case notFound(id: TrialID?, subject: String?)
    case subjectAlreadyActive(subject: String, existing: TrialID)
    case notActive(TrialID, TrialState)
    case invalidParameter(name: String, problem: String)
    case idSpaceExhausted(attempts: Int)
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

  public static func invalid(_ name: String, _ problem: String) -> TrialError {
    TrialError(.invalidParameter(name: name, problem: problem))
  }

  public var description: String {
    switch code {
    case .notFound(let id?, _): "no trial with id \(id)"
    case .notFound(nil, let subject?): "no active trial for subject \"\(subject)\""
    case .notFound(nil, nil): "no such trial"
    case .subjectAlreadyActive(let subject, let existing):
      "subject \"\(subject)\" already has an active trial (id \(existing))"
    case .notActive(let id, let state): "trial \(id) is not active (it is \(state.rawValue))"
    case .invalidParameter(let name, let problem): "invalid \(name): \(problem)"
    case .idSpaceExhausted(let attempts): "no unused trial id found after \(attempts) attempts"
    }
  }
}
