/// What a trial says about itself beside its dates: its subject, its labels, and each named
/// attribute of `TrialAttributes.named`. The trial, the command that starts it and every
/// logged event carry one, so that the journal, the feed, Watch, consume, export and both
/// stores read one source; the names each attribute goes by outside come from one table.
public struct TrialAttributes: Hashable, Sendable {
  /// The caller's name for what is on trial, e.g. `acme-42`.
  public var subject: String
  /// Everything else, in one shared box: nil for a trial with nothing but a subject (most), so
  /// that copying a trial (the stores and the engine do it per event) costs one reference more
  /// than the subject, however many attributes there are.
  private var rest: Rest?

  /// The plan the trial was started with (`pro`), as named by the plan file it came from.
  public var plan: String? {
    get { rest?.plan }
    set { rest = Rest.make(plan: newValue, labels: labels, unknown: unknown) }
  }
  public var labels: TrialLabels {
    get { rest?.labels ?? .none }
    set { rest = Rest.make(plan: plan, labels: newValue, unknown: unknown) }
  }
  /// Stored attributes this version does not know (a newer one wrote them), kept as they were
  /// read, so that rewriting the record keeps them.
  public var unknown: [String: String] {
    get { rest?.unknown ?? [:] }
    set { rest = Rest.make(plan: plan, labels: labels, unknown: newValue) }
  }

  public init(
    subject: String, plan: String? = nil, labels: TrialLabels = .none, unknown: [String: String] = [:]
  ) {
    self.subject = subject
    self.rest = Rest.make(plan: plan, labels: labels, unknown: unknown)
  }

  public static func == (left: Self, right: Self) -> Bool {
    left.subject == right.subject
      && (left.rest === right.rest
        || (left.plan == right.plan && left.labels == right.labels && left.unknown == right.unknown))
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(subject)
    hasher.combine(plan)
    hasher.combine(labels)
    hasher.combine(unknown)
  }

  /// The attributes beside the subject; never all empty (that is `rest == nil`).
  private final class Rest: Sendable {
    let plan: String?
    let labels: TrialLabels
    let unknown: [String: String]

    /// nil when there is nothing but the subject; decided before any box is allocated (a
    /// failable initializer would allocate one and free it again, once per trial read back).
    static func make(plan: String?, labels: TrialLabels, unknown: [String: String]) -> Rest? {
      guard plan != nil || !labels.isEmpty || !unknown.isEmpty else { return nil }
      return Rest(plan: plan, labels: labels, unknown: unknown)
    }

    private init(plan: String?, labels: TrialLabels, unknown: [String: String]) {
      self.plan = plan
      self.labels = labels
      self.unknown = unknown
    }

    /// Whether the labels are all there is: no named attribute but the subject, none unknown.
    var onlyLabels: Bool { plan == nil && unknown.isEmpty }
  }

  // MARK: The table of names

  /// An attribute with a text value, and the names it goes by: its key in the stores and on
  /// the wire, and its journal field and consume environment variable.
  public struct Named: Sendable {
    public let name: String
    public let variable: String
    let value: @Sendable (TrialAttributes) -> String?
    let assign: @Sendable (inout TrialAttributes, String) -> Void
  }

  /// Every named attribute, in the order the journal and an environment list them.
  public static let named: [Named] = [
    Named(name: "subject", variable: "TRIAL_SUBJECT", value: { $0.subject }, assign: { $0.subject = $1 }),
    Named(name: "plan", variable: "TRIAL_PLAN", value: { $0.plan }, assign: { $0.plan = $1 }),
  ]

  /// The prefix of a label's stored name (`label.customer`).
  public static let labelPrefix = "label."

  /// The key of the label a stored name names (`customer` of `label.customer`), or nil. The
  /// prefix is compared as bytes, as the stores write it: compared as text, a combining mark
  /// after its dot would hide it, and the label would pass for another attribute.
  public static func labelKey(storedName name: String) -> String? {
    guard name.utf8.starts(with: labelPrefix.utf8) else { return nil }
    return String(decoding: name.utf8.dropFirst(labelPrefix.utf8.count), as: UTF8.self)
  }

  /// The prefix of a label's journal field and environment variable (`TRIAL_LABEL_CUSTOMER`).
  public static let labelVariablePrefix = "TRIAL_LABEL_"

  /// The journal field and environment variable of the label `key`.
  public static func labelVariable(_ key: String) -> String {
    labelVariablePrefix + key.uppercased()
  }

  /// Every attribute as `(variable, value)`: the named ones present, then the labels, by key.
  public var variables: [(name: String, value: String)] {
    Self.named.compactMap { named in named.value(self).map { (named.variable, $0) } }
      + labels.map { (Self.labelVariable($0.key), $0.value) }
  }

  // MARK: The stored form

  /// Whether the labels are all there is beside the subject (then `storedFields` is the
  /// labels, in their order, each as `label.KEY`).
  /// Kept beside the attributes themselves (`Rest`): the test of the attributes checks it
  /// against `named`, so an attribute added to the table cannot be missed here.
  public var hasOnlyLabels: Bool { rest?.onlyLabels ?? true }

  /// Every attribute but the subject (which the stores keep apart, indexed) as named text:
  /// the named ones under their names, each label as `label.KEY`, and the unknown ones as read;
  /// by name. Empty for a trial with nothing but a subject.
  public var storedFields: [(name: String, value: String)] {
    var fields: [(name: String, value: String)] = []
    for named in Self.named where named.name != "subject" {
      if let value = named.value(self) { fields.append((named.name, value)) }
    }
    fields += labels.map { (Self.labelPrefix + $0.key, $0.value) }
    fields += unknown.map { ($0.key, $0.value) }
    return fields.sorted { $0.name < $1.name }
  }

  /// The attributes of `subject` with `fields` as `storedFields` gives them.
  public init(subject: String, storedFields fields: some Sequence<(name: String, value: String)>)
    throws(TrialLabels.Invalid)
  {
    self.init(subject: subject)
    var labels: [String: String] = [:]
    for (name, value) in fields {
      if let key = Self.labelKey(storedName: name) {
        labels[key] = value
      } else if let named = Self.named.first(where: { $0.name == name && $0.name != "subject" }) {
        named.assign(&self, value)
      } else {
        unknown[name] = value
      }
    }
    self.labels = try TrialLabels(labels)
  }
}
