import TrialCore

/// A Varlink error reply: its qualified name and parameters. The daemon answers with these;
/// clients receive them, including names this version does not know.
public struct ControlError: Error, Hashable, Sendable, CustomStringConvertible {
  public let name: String
  public var parameters: Parameters

  /// The parameters of every error this service sends; each error sets the ones it declares.
  public struct Parameters: Codable, Hashable, Sendable {
    public var id: String?
    public var subject: String?
    public var state: String?
    public var method: String?
    public var uid: Int?
    public var interface: String?
    public var parameter: String?
    /// What is wrong, in words (with `InvalidParameter`, an addition clients may ignore).
    public var problem: String?
    /// `limit`: a number (`MessageTooLarge`, `TooManyConnections`) or, of `ExtensionRefused`,
    /// the name of the limit (`limitName`).
    private var limitValue: ErrorLimit?
    public var message: String?
    public var cursor: String?
    public var resumeAfter: String?
    public var oldest: String?
    public var last: String?
    public var name: String?
    public var plan: String?
    public var firstStartedAt: String?
    /// The generation of the event log now (`CursorGeneration`).
    public var generation: Int?
    /// Why the store cannot take writes (`StoreUnavailable`): a `StoreFaultReason`.
    public var reason: String?
    /// The last trial a subject started in the scope of its plan's Once= (`TrialAlreadyUsed`).
    public var lastId: String?
    public var lastStartedAt: String?
    /// When the subject may start again (`TrialAlreadyUsed`, a plan with OnceFor=); absent: never.
    public var availableAt: String?
    /// Of `ExtensionRefused`: the trial's extensions so far, its plan's limits, the latest end
    /// its `MaxLength=` allows, and the end asked for.
    public var extensions: Int?
    public var maxExtensions: Int?
    public var maxLength: String?
    public var latestEndsAt: String?
    public var endsAt: String?

    /// A number limit (`MessageTooLarge`, `TooManyConnections`).
    public var limit: Int? {
      get { if case .number(let number) = limitValue { number } else { nil } }
      set { limitValue = newValue.map(ErrorLimit.number) }
    }

    /// A named limit (`ExtensionRefused`: max-extensions or max-length).
    public var limitName: String? {
      get { if case .name(let name) = limitValue { name } else { nil } }
      set { limitValue = newValue.map(ErrorLimit.name) }
    }

    private enum CodingKeys: String, CodingKey {
      case id, subject, state, method, uid, interface, parameter, problem, message, cursor, resumeAfter
      case oldest, last, name, plan, firstStartedAt, generation, reason, extensions, maxExtensions
      case maxLength, latestEndsAt, endsAt, lastId, lastStartedAt, availableAt
      case limitValue = "limit"
    }

    public init(
      id: String? = nil, subject: String? = nil, state: String? = nil, method: String? = nil, uid: Int? = nil,
      interface: String? = nil, parameter: String? = nil, problem: String? = nil, limit: Int? = nil,
      message: String? = nil, cursor: String? = nil, resumeAfter: String? = nil, oldest: String? = nil,
      last: String? = nil, name: String? = nil, plan: String? = nil, firstStartedAt: String? = nil,
      generation: Int? = nil, reason: String? = nil, lastId: String? = nil, lastStartedAt: String? = nil,
      availableAt: String? = nil
    ) {
      self.id = id
      self.subject = subject
      self.state = state
      self.method = method
      self.uid = uid
      self.interface = interface
      self.parameter = parameter
      self.problem = problem
      self.limitValue = limit.map(ErrorLimit.number)
      self.message = message
      self.cursor = cursor
      self.resumeAfter = resumeAfter
      self.oldest = oldest
      self.last = last
      self.name = name
      self.generation = generation
      self.plan = plan
      self.firstStartedAt = firstStartedAt
      self.reason = reason
      self.lastId = lastId
      self.lastStartedAt = lastStartedAt
      self.availableAt = availableAt
    }
  }

  public init(name: String, parameters: Parameters = Parameters()) {
    self.name = name
    self.parameters = parameters
  }

  /// The error names this service uses.
  public enum Name {
    public static let interfaceNotFound = "org.varlink.service.InterfaceNotFound"
    public static let methodNotFound = "org.varlink.service.MethodNotFound"
    public static let invalidParameter = "org.varlink.service.InvalidParameter"
    public static let expectedMore = "org.varlink.service.ExpectedMore"
    public static let trialNotFound = "io.trialwatch.TrialNotFound"
    public static let subjectAlreadyActive = "io.trialwatch.SubjectAlreadyActive"
    public static let trialNotActive = "io.trialwatch.TrialNotActive"
    public static let trialNotPaused = "io.trialwatch.TrialNotPaused"
    public static let trialNotCancelling = "io.trialwatch.TrialNotCancelling"
    public static let permissionDenied = "io.trialwatch.PermissionDenied"
    public static let invalidMessage = "io.trialwatch.InvalidMessage"
    public static let messageTooLarge = "io.trialwatch.MessageTooLarge"
    public static let tooManyConnections = "io.trialwatch.TooManyConnections"
    public static let internalError = "io.trialwatch.InternalError"
    public static let storeUnavailable = "io.trialwatch.StoreUnavailable"
    public static let eventsPruned = "io.trialwatch.EventsPruned"
    public static let cursorNotFound = "io.trialwatch.CursorNotFound"
    public static let cursorGeneration = "io.trialwatch.CursorGeneration"
    public static let consumerNotFound = "io.trialwatch.ConsumerNotFound"
    public static let consumerExists = "io.trialwatch.ConsumerExists"
    public static let planNotFound = "io.trialwatch.PlanNotFound"
    public static let trialAlreadyUsed = "io.trialwatch.TrialAlreadyUsed"
    public static let webhookNotFound = "io.trialwatch.WebhookNotFound"
    public static let webhookSenderUnavailable = "io.trialwatch.WebhookSenderUnavailable"
    public static let webhookSenderActive = "io.trialwatch.WebhookSenderActive"
    public static let extensionRefused = "io.trialwatch.ExtensionRefused"
  }

  public static func interfaceNotFound(_ interface: String) -> Self {
    Self(name: Name.interfaceNotFound, parameters: Parameters(interface: interface))
  }

  public static func methodNotFound(_ method: String) -> Self {
    Self(name: Name.methodNotFound, parameters: Parameters(method: method))
  }

  /// `parameter` names the offending parameter, as the standard error requires; `problem`
  /// says what is wrong with it.
  public static func invalidParameter(_ parameter: String, problem: String? = nil) -> Self {
    Self(name: Name.invalidParameter, parameters: Parameters(parameter: parameter, problem: problem))
  }

  /// A parameter problem found while decoding or checking a call's parameters.
  public static func invalidParameter(_ problem: WireProblem) -> Self {
    invalidParameter(problem.path.first ?? "", problem: problem.description)
  }

  public static func expectedMore() -> Self { Self(name: Name.expectedMore) }

  public static func trialNotFound(id: TrialID? = nil, subject: String? = nil) -> Self {
    Self(name: Name.trialNotFound, parameters: Parameters(id: id?.description, subject: subject))
  }

  public static func permissionDenied(method: String, uid: UInt32) -> Self {
    Self(name: Name.permissionDenied, parameters: Parameters(method: method, uid: Int(uid)))
  }

  public static func invalidMessage(_ problem: String) -> Self {
    Self(name: Name.invalidMessage, parameters: Parameters(problem: problem))
  }

  public static func messageTooLarge(limit: Int) -> Self {
    Self(name: Name.messageTooLarge, parameters: Parameters(limit: limit))
  }

  public static func tooManyConnections(limit: Int) -> Self {
    Self(name: Name.tooManyConnections, parameters: Parameters(limit: limit))
  }

  public static func internalError(_ message: String) -> Self {
    Self(name: Name.internalError, parameters: Parameters(message: message))
  }

  /// The store cannot take the write now (a storage fault, not a bug): nothing was changed.
  public static func storeUnavailable(_ reason: StoreFaultReason, message: String) -> Self {
    Self(name: Name.storeUnavailable, parameters: Parameters(message: message, reason: reason.rawValue))
  }

  public static func webhookNotFound(_ name: String) -> Self {
    Self(name: Name.webhookNotFound, parameters: Parameters(name: name))
  }

  public static func webhookSenderUnavailable() -> Self { Self(name: Name.webhookSenderUnavailable) }

  public static func webhookSenderActive() -> Self { Self(name: Name.webhookSenderActive) }

  /// The domain's refusal, as the error a client receives.
  public init(_ error: TrialError) {
    switch error.code {
    case .notFound(let id, let subject):
      self = .trialNotFound(id: id, subject: subject)
    case .subjectAlreadyActive(let subject, let existing):
      self.init(
        name: Name.subjectAlreadyActive, parameters: Parameters(id: existing.description, subject: subject))
    case .notActive(let id, let state):
      self.init(name: Name.trialNotActive, parameters: Parameters(id: id.description, state: state.rawValue))
    case .notPaused(let id, let state):
      self.init(name: Name.trialNotPaused, parameters: Parameters(id: id.description, state: state.rawValue))
    case .notCancelling(let id):
      self.init(name: Name.trialNotCancelling, parameters: Parameters(id: id.description))
    case .invalidParameter(let field, let problem):
      self = .invalidParameter(field.wireName, problem: problem)
    case .idSpaceExhausted:
      self = .internalError(error.description)
    case .cursorPruned(let cursor, let resumeAfter, let oldest):
      self.init(
        name: Name.eventsPruned,
        parameters: Parameters(
          cursor: cursor.description, resumeAfter: resumeAfter.description, oldest: oldest?.description))
    case .cursorAhead(let cursor, let last):
      self.init(
        name: Name.cursorNotFound, parameters: Parameters(cursor: cursor.description, last: last.description))
    case .cursorGeneration(let cursor, let generation, let resumeAfter):
      self.init(
        name: Name.cursorGeneration,
        parameters: Parameters(
          cursor: cursor.description, resumeAfter: resumeAfter.description, generation: Int(generation)))
    case .consumerNotFound(let name):
      self.init(name: Name.consumerNotFound, parameters: Parameters(name: name))
    case .consumerExists(let name):
      self.init(name: Name.consumerExists, parameters: Parameters(name: name))
    case .planNotFound(let name):
      self.init(name: Name.planNotFound, parameters: Parameters(plan: name))
    case .trialAlreadyUsed(let use, let availableAt):
      self.init(
        name: Name.trialAlreadyUsed,
        parameters: Parameters(
          id: use.trial.description, subject: use.subject, plan: use.plan,
          firstStartedAt: RFC3339.format(use.firstStartedAt), lastId: use.lastTrial.description,
          lastStartedAt: RFC3339.format(use.lastStartedAt), availableAt: availableAt.map(RFC3339.format)))
    case .extensionRefused(let refusal):
      self = .extensionRefused(refusal)
    }
  }

  /// An extension its trial's plan refuses: which limit, the plan's limits and where the trial
  /// stands against them.
  public static func extensionRefused(_ refusal: ExtensionRefusal) -> Self {
    var parameters = Parameters(id: refusal.trial.description, plan: refusal.plan)
    parameters.limitName = refusal.limit.rawValue
    parameters.extensions = refusal.extensions
    parameters.maxExtensions = refusal.maxExtensions
    parameters.maxLength = refusal.maxLength.map(TimeSpan.format)
    parameters.latestEndsAt = refusal.latestEnd.map(RFC3339.format)
    parameters.endsAt = RFC3339.format(refusal.requestedEnd)
    return Self(name: Name.extensionRefused, parameters: parameters)
  }

  /// The error in words, naming what was wrong.
  public var description: String {
    let p = parameters
    switch name {
    case Name.interfaceNotFound: return "the service has no interface \"\(p.interface ?? "?")\""
    case Name.methodNotFound: return "the service has no method \"\(p.method ?? "?")\""
    case Name.invalidParameter:
      let parameter = p.parameter ?? "?"
      guard let problem = p.problem else { return "invalid parameter \(parameter)" }
      return problem.hasPrefix(parameter)
        ? "invalid parameter \(problem)" : "invalid parameter \(parameter): \(problem)"
    case Name.expectedMore: return "the method streams its replies and must be called with \"more\""
    case Name.trialNotFound:
      if let id = p.id { return "no trial with id \(id)" }
      if let subject = p.subject { return "no active trial for subject \"\(subject)\"" }
      return "no such trial"
    case Name.subjectAlreadyActive:
      return "subject \"\(p.subject ?? "?")\" already has an active trial (id \(p.id ?? "?"))"
    case Name.trialNotActive: return "trial \(p.id ?? "?") is not active (it is \(p.state ?? "?"))"
    case Name.trialNotPaused: return "trial \(p.id ?? "?") is not paused (it is \(p.state ?? "?"))"
    case Name.trialNotCancelling:
      return "trial \(p.id ?? "?") is not cancelled at its end (trialwatchctl cancel TRIAL marks it)"
    case Name.permissionDenied:
      return "permission denied: \(p.method ?? "this call") changes trials and needs root, the daemon's user "
        + "or the control group (caller uid \(p.uid.map(String.init) ?? "?"))"
    case Name.invalidMessage: return "invalid message: \(p.problem ?? "?")"
    case Name.messageTooLarge: return "message too large (limit \(p.limit.map(String.init) ?? "?") bytes)"
    case Name.tooManyConnections:
      return "too many connections to the daemon (limit \(p.limit.map(String.init) ?? "?"))"
    case Name.internalError: return "internal error: \(p.message ?? "?")"
    case Name.storeUnavailable:
      let fault = p.reason.flatMap(StoreFaultReason.init(rawValue:))
      // A connection lost during a commit leaves its outcome unknown to the daemon.
      let outcome = fault == .databaseUnreachable ? "the change may have been made" : "nothing was changed"
      return
        "the store cannot take writes now (\(fault?.summary ?? p.reason ?? "?")); \(outcome): \(p.message ?? "?")"
    case Name.eventsPruned:
      return "events after cursor \(p.cursor ?? "?") were pruned from the event log (the oldest kept is "
        + "\(p.oldest ?? "none"); resume after \(p.resumeAfter ?? "?"))"
    case Name.cursorNotFound:
      return "cursor \(p.cursor ?? "?") lies beyond the newest event logged (\(p.last ?? "?")): "
        + "it is not from this store's event log"
    case Name.cursorGeneration:
      let of = p.cursor.flatMap { EventCursor($0) }.map { " (of generation \($0.generation))" } ?? ""
      return "cursor \(p.cursor ?? "?")\(of) is of an earlier generation of the event log, which is now in "
        + "generation \(p.generation.map(String.init) ?? "?"): the store was restored or imported into since "
        + "it was handed out; resume after \(p.resumeAfter ?? "?") and tell events seen before by their ids"
    case Name.consumerNotFound: return "no consumer named \"\(p.name ?? "?")\""
    case Name.consumerExists: return "a consumer named \"\(p.name ?? "?")\" already exists"
    case Name.trialAlreadyUsed:
      return
        "subject \"\(p.subject ?? "?")\" already had the trial its plan grants once: trial \(p.id ?? "?") "
        + "of plan \(p.plan ?? "?"), started \(p.firstStartedAt ?? "?")"
        + (p.lastId.map { $0 == p.id ? "" : "; its last, trial \($0), started \(p.lastStartedAt ?? "?")" }
          ?? "")
        + (p.availableAt.map { "; it may start again at \($0)" } ?? "")
    case Name.planNotFound:
      return "no plan named \"\(p.plan ?? "?")\" is configured (trialwatchctl plans lists those that are)"
    case Name.webhookNotFound:
      return
        "no webhook endpoint named \"\(p.name ?? "?")\" is configured (trialwatchctl webhooks lists those "
        + "that are)"
    case Name.webhookSenderUnavailable:
      return "no webhook sender is attached to the daemon (is trialwatch-webhooks.service running?)"
    case Name.webhookSenderActive:
      return "a webhook sender is attached to the daemon already; only one may be at a time"
    case Name.extensionRefused:
      return extensionRefusedDescription
    case Name.noSuchMetric:
      guard let metric = p.name else { return "no metric to list" }
      return "no metric family named \"\(metric)\" (trialwatchctl metrics --describe lists them)"
    default:
      let text = WireCoding.text(p)
      return text == "{}" ? name : "\(name) \(text)"
    }
  }
}

extension ControlError {
  /// `ExtensionRefused` in words: the limit, and what the plan allows.
  fileprivate var extensionRefusedDescription: String {
    let p = parameters
    let plan = "plan \"\(p.plan ?? "?")\""
    switch p.limitName {
    case ExtensionRefusal.Limit.maxExtensions.rawValue:
      let count = p.extensions.map(String.init) ?? "?"
      return "extension refused: trial \(p.id ?? "?") had \(count) extension\(p.extensions == 1 ? "" : "s"), "
        + "as many as its \(plan) allows (MaxExtensions=\(p.maxExtensions.map(String.init) ?? "?"))"
    case ExtensionRefusal.Limit.maxLength.rawValue:
      return
        "extension refused: the new end \(p.endsAt ?? "?") of trial \(p.id ?? "?") lies beyond the latest "
        + "its \(plan) allows, \(p.latestEndsAt ?? "?") (MaxLength=\(p.maxLength ?? "?") from its start)"
    default:
      return "extension refused by a limit of trial \(p.id ?? "?")'s \(plan) (\(p.limitName ?? "?"))"
    }
  }
}

/// The `limit` of an error reply: a number, or (of `ExtensionRefused`) a name.
enum ErrorLimit: Codable, Hashable, Sendable {
  case number(Int)
  case name(String)

  init(from decoder: any Decoder) throws {
    let container = try decoder.singleValueContainer()
    if let number = try? container.decode(Int.self) {
      self = .number(number)
    } else {
      self = .name(try container.decode(String.self))
    }
  }

  func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    switch self {
    case .number(let number): try container.encode(number)
    case .name(let name): try container.encode(name)
    }
  }
}

extension TrialField {
  /// The parameter this value goes by on the wire.
  public var wireName: String {
    switch self {
    case .length: "duration"
    case .end: "endsAt"
    case .extension: "by"
    case .consumer: "name"
    default: rawValue
    }
  }
}
