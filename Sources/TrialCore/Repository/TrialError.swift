import Foundation

/// A request about trials that cannot be carried out, with the reason.
public struct TrialError: Error, Hashable, Sendable, CustomStringConvertible {
  public enum Code: Hashable, Sendable {
    case notFound(String)
    case subjectAlreadyActive(subject: String, existing: TrialID)
    case notActive(TrialID, TrialState)
    case invalidParameter(name: String, problem: String)
    case idSpaceExhausted(attempts: Int)
  }

  public var code: Code

  public init(_ code: Code) {
    self.code = code
  }

  public static func invalid(_ name: String, _ problem: String) -> TrialError {
    TrialError(.invalidParameter(name: name, problem: problem))
  }

  public var description: String {
    switch code {
    case .notFound(let what): "no trial \(what)"
    case .subjectAlreadyActive(let subject, let existing):
      "subject \"\(subject)\" already has an active trial (id \(existing))"
    case .notActive(let id, let state): "trial \(id) is not active (it is \(state.rawValue))"
    case .invalidParameter(let name, let problem): "invalid \(name): \(problem)"
    case .idSpaceExhausted(let attempts): "no unused trial id found after \(attempts) attempts"
    }
  }
}
