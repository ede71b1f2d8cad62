import FoundationEssentials

/// Whether a plan grants a subject its trial once (plan key `Once=`).
public enum TrialOnce: String, Hashable, Sendable, CaseIterable {
  /// As often as the subject has no active trial.
  case no
  /// Once per subject for this plan.
  case plan
  /// Once per subject across every plan with `Once=all`.
  case all
}

/// How a plan that grants a trial once tells subjects apart (plan key `SubjectKey=`): the key
/// a subject is recorded under, and looked up by.
public enum SubjectKeyRule: String, Hashable, Sendable, CaseIterable {
  /// The subject as given.
  case exact
  /// Unicode NFKC case folding: `Ａlice` and `alice` are one subject.
  case casefold
  /// An e-mail address: case folded, the `+tag` of the local part dropped, and dots dropped
  /// from the local part of a gmail.com or googlemail.com address (which Gmail ignores);
  /// googlemail.com is gmail.com. Text without one `@` is case folded only.
  case email

  /// The domains whose mailboxes ignore dots in the local part.
  static let dotlessDomains: Set<String> = ["gmail.com", "googlemail.com"]

  /// The key of `subject`, `fold` being Unicode NFKC case folding.
  public func key(of subject: String, fold: (String) throws(TrialError) -> String) throws(TrialError)
    -> String
  {
    switch self {
    case .exact: return subject
    case .casefold: return try fold(subject)
    case .email:
      let folded = try fold(subject)
      let parts = folded.split(separator: "@", omittingEmptySubsequences: false)
      guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else { return folded }
      var local = parts[0]
      if let plus = local.firstIndex(of: "+"), plus != local.startIndex { local = local[..<plus] }
      var domain = String(parts[1])
      if Self.dotlessDomains.contains(domain) {
        local = Substring(local.filter { $0 != "." })
        domain = "gmail.com"
      }
      return local + "@" + domain
    }
  }
}

/// The record that a subject had a plan's trial: kept for good (ending a trial, retention,
/// a restore and an import keep it); only an operator's grant-again removes it. A plan with
/// `OnceFor=` lets the subject start again that long after its last trial in the scope
/// started: the record then keeps its first start and is given each later one as its last.
public struct SubjectUse: Hashable, Sendable {
  /// Which trials a record stands for.
  public enum Scope: Hashable, Sendable, CustomStringConvertible {
    /// The trials of one plan (`Once=plan`).
    case plan(String)
    /// The trials of every plan with `Once=all`.
    case all

    /// `all`, or `plan:NAME`: how stores and export files write a scope.
    public var description: String {
      switch self {
      case .all: "all"
      case .plan(let name): "plan:" + name
      }
    }

    /// Reads `description`'s form.
    public init?(_ text: String) {
      if text == "all" {
        self = .all
      } else if text.hasPrefix("plan:"), TrialPlan.validateName(String(text.dropFirst(5))) == nil {
        self = .plan(String(text.dropFirst(5)))
      } else {
        return nil
      }
    }
  }

  /// The longest key: with its scope, it fits the key of a store record.
  public static let maximumKeyBytes = 400

  public var scope: Scope
  /// The subject's key under its plan's `SubjectKey=` rule.
  public var key: String
  /// The subject as the first trial gave it.
  public var subject: String
  /// The plan of the first trial.
  public var plan: String
  public var firstStartedAt: Date
  /// The first trial.
  public var trial: TrialID
  /// When the last trial in the scope started (the first, until a cooldown let another start).
  public var lastStartedAt: Date
  /// The last trial in the scope.
  public var lastTrial: TrialID

  /// Where a use stands among the others: its scope, then its key. Written `SCOPE KEY` (a
  /// scope holds no space), as Export's cursor of uses.
  public struct Position: Hashable, Sendable, CustomStringConvertible {
    public var scope: Scope
    public var key: String

    public init(scope: Scope, key: String) {
      self.scope = scope
      self.key = key
    }

    public init?(_ text: String) {
      guard let space = text.firstIndex(of: " "), let scope = Scope(String(text[..<space])) else {
        return nil
      }
      self.init(scope: scope, key: String(text[text.index(after: space)...]))
    }

    public var description: String { "\(scope) \(key)" }

    /// The order of stores: the bytes of the scope's text, a 0 byte, the bytes of the key.
    public var bytes: [UInt8] { Array(scope.description.utf8) + [0] + Array(key.utf8) }
  }

  public var position: Position { Position(scope: scope, key: key) }

  /// A use whose last trial is `lastTrial`, started at `lastStartedAt`: when nil, the first.
  public init(
    scope: Scope, key: String, subject: String, plan: String, firstStartedAt: Date, trial: TrialID,
    lastStartedAt: Date? = nil, lastTrial: TrialID? = nil
  ) {
    self.scope = scope
    self.key = key
    self.subject = subject
    self.plan = plan
    self.firstStartedAt = firstStartedAt
    self.trial = trial
    self.lastStartedAt = lastStartedAt ?? firstStartedAt
    self.lastTrial = lastTrial ?? trial
  }

  /// Whether the scope has seen more than the first trial.
  public var hasLaterStart: Bool { lastTrial != trial || lastStartedAt != firstStartedAt }

  /// When the subject may start a trial in the scope again under a cooldown of `onceFor`
  /// (`OnceFor=`): that long after its last trial started; nil for `nil` (never).
  public func availableAt(onceFor: Duration?) -> Date? {
    onceFor.map { lastStartedAt.adding($0) }
  }
}

extension TrialPlan {
  /// A cooldown (`OnceFor=`) as people write one: whole days as days (`270d`, where systemd's
  /// form would give months and weeks), any other span in systemd's form.
  public static func cooldownText(_ span: Duration) -> String {
    let seconds = span.components.seconds
    guard span.components.attoseconds == 0, seconds > 0, seconds % 86_400 == 0 else {
      return TimeSpan.format(span)
    }
    return "\(seconds / 86_400)d"
  }

  /// Where a trial of this plan is recorded as used, and under which key; nil when the plan
  /// grants trials as often as asked.
  /// - Throws: `TrialError` when the key is longer than `SubjectUse.maximumKeyBytes` (folding
  ///   may lengthen a subject: `ﬃ` is `ffi`).
  public func use(of subject: String, fold: (String) throws(TrialError) -> String) throws(TrialError) -> (
    scope: SubjectUse.Scope, key: String
  )? {
    let scope: SubjectUse.Scope
    switch once {
    case .no: return nil
    case .plan: scope = .plan(name)
    case .all: scope = .all
    }
    let key = try subjectKey.key(of: subject, fold: fold)
    guard !key.isEmpty else {
      throw .invalid(
        .subject,
        "has nothing left under SubjectKey=\(subjectKey.rawValue) of plan \"\(name)\" (only characters it drops)"
      )
    }
    guard key.utf8.count <= SubjectUse.maximumKeyBytes else {
      throw .invalid(
        .subject,
        "is \(key.utf8.count) bytes long under SubjectKey=\(subjectKey.rawValue) of plan \"\(name)\" "
          + "(at most \(SubjectUse.maximumKeyBytes))")
    }
    return (scope, key)
  }
}

/// Unicode NFKC case folding, given to the operations that record and look up subject uses
/// (the daemon's comes from the system's Unicode library; the core does no I/O). It throws the
/// refusal of the start when it cannot fold.
public struct SubjectFolding: Sendable {
  public let fold: @Sendable (String) throws(TrialError) -> String

  public init(_ fold: @escaping @Sendable (String) throws(TrialError) -> String) {
    self.fold = fold
  }
}

extension SubjectFolding {
  /// Folds ASCII text and refuses any other: the folding of an engine given none (tests). The
  /// daemon gives the system's Unicode folding, which folds ASCII text the same way.
  public static let ascii = SubjectFolding { text throws(TrialError) in
    guard let folded = foldingASCII(text) else {
      throw .invalid(.subject, "cannot be case folded: it is not ASCII, and no Unicode folding is given")
    }
    return folded
  }

  /// `text` with its capitals made small, when it is ASCII; nil otherwise.
  public static func foldingASCII(_ text: String) -> String? {
    guard text.utf8.allSatisfy({ $0 < 0x80 }) else { return nil }
    return String(decoding: text.utf8.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }, as: UTF8.self)
  }
}
