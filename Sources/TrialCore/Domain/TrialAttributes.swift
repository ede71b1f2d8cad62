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

  // MARK: The named attributes beside the subject: each its row of `named` and its accessor here

  /// The plan the trial was started with (`pro`), as named by the plan file it came from.
  public var plan: String? {
    get { self["plan"] }
    set { self["plan"] = newValue }
  }

  /// How a trial ended at its end other than by expiring: `cancelled`, on a trial cancelled at
  /// its end (`Trial.stateAtEnd`) and so on its expiry event; absent otherwise.
  public var outcome: String? {
    get { self["outcome"] }
    set { self["outcome"] = newValue }
  }

  /// The variant of its plan the trial was started in (`TrialVariant`), absent for a trial of
  /// a plan without variants.
  public var variant: String? {
    get { self["variant"] }
    set { self["variant"] = newValue }
  }

  // MARK: The table of names

  /// Every named attribute, the subject first, in the order the journal and an environment
  /// list them. A row: the attribute's name in the stores and on the wire (1 to 64 of a-z,
  /// 0-9, `_` and `.`, as an import takes them), and its journal field and consume
  /// environment variable. Every outlet reads this table: a row is all an attribute needs
  /// there, beside its accessor above.
  public static let named = Named.table([
    ("subject", "TRIAL_SUBJECT"),
    ("plan", "TRIAL_PLAN"),
    ("outcome", "TRIAL_OUTCOME"),
    ("variant", "TRIAL_VARIANT"),
  ])

  /// An attribute with a text value, and the names it goes by: its key in the stores and on
  /// the wire, and its journal field and consume environment variable.
  public struct Named: Hashable, Sendable {
    /// Its place in `named`: 0 for the subject.
    public let index: Int
    public let name: String
    public let variable: String

    static func table(_ rows: [(name: String, variable: String)]) -> [Named] {
      rows.enumerated().map { Named(index: $0.offset, name: $0.element.name, variable: $0.element.variable) }
    }
  }

  /// The rows of `named` but the subject's, which the stores and the wire keep apart.
  public static var besideSubject: ArraySlice<Named> { named.dropFirst() }

  /// The row of `named` called `name`, if any.
  public static func row(_ name: String) -> Named? {
    named.first { $0.name == name }
  }

  /// The value of the named attribute `row`: the subject, or one beside it, nil when absent.
  /// The subject is never absent: setting it to nil is a programming error.
  public subscript(row: Named) -> String? {
    get { row.index == 0 ? subject : rest?[row.index] }
    set {
      guard row.index != 0 else {
        guard let newValue else { preconditionFailure("a trial's subject is never absent") }
        subject = newValue
        return
      }
      let old = rest
      // Setting what is there (an absent variant, most often) builds nothing.
      guard old?[row.index] != newValue else { return }
      rest = Rest.make(labels: labels, unknown: unknown) { $0 == row.index ? newValue : old?[$0] }
    }
  }

  /// The value of the named attribute `name`, for the accessors: a name not in `named` is a
  /// programming error.
  private subscript(name: String) -> String? {
    get { rest.flatMap { $0[Self.index(of: name)] } }
    set { self[Self.named[Self.index(of: name)]] = newValue }
  }

  private static func index(of name: String) -> Int {
    guard let index = besideSubject.firstIndex(where: { $0.name == name }) else {
      preconditionFailure("\(name) is no row of TrialAttributes.named")
    }
    return index
  }

  // MARK: Labels and unknown attributes

  public var labels: TrialLabels {
    get { rest?.labels ?? .none }
    set {
      let old = rest
      rest = Rest.make(labels: newValue, unknown: unknown) { old?[$0] }
    }
  }

  /// Stored attributes this version does not know (a newer one wrote them), kept as they were
  /// read, so that rewriting the record keeps them.
  public var unknown: [String: String] {
    get { rest?.unknown ?? [:] }
    set {
      let old = rest
      rest = Rest.make(labels: labels, unknown: newValue) { old?[$0] }
    }
  }

  public init(
    subject: String, plan: String? = nil, labels: TrialLabels = .none, unknown: [String: String] = [:]
  ) {
    self.subject = subject
    let plan = plan.map { (index: Self.index(of: "plan"), value: $0) }
    self.rest = Rest.make(labels: labels, unknown: unknown) { $0 == plan?.index ? plan?.value : nil }
  }

  public static func == (left: Self, right: Self) -> Bool {
    guard left.subject == right.subject else { return false }
    if left.rest?.box === right.rest?.box { return true }
    return left.labels == right.labels && left.unknown == right.unknown
      && besideSubject.allSatisfy { left.rest?[$0.index] == right.rest?[$0.index] }
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(subject)
    for row in Self.besideSubject { hasher.combine(rest?[row.index]) }
    hasher.combine(labels)
    hasher.combine(unknown)
  }

  /// The attributes beside the subject, in one allocation: the labels and the unknown ones at
  /// its head, then the value of each row of `named` but the subject. Never all empty (that is
  /// `rest == nil`); never changed once made, which is what makes it safe to share between
  /// threads (a `ManagedBuffer` cannot say so itself).
  private struct Rest: @unchecked Sendable {
    let box: Box

    /// How many values follow the head: one a row of `named` but the subject.
    static var count: Int { TrialAttributes.named.count - 1 }

    /// nil when there is nothing but the subject; decided before any box is allocated (a
    /// box made and freed again would cost an allocation per trial read back). `value` gives
    /// the value of the row at each index of `named` but 0.
    static func make(labels: TrialLabels, unknown: [String: String], value: (Int) -> String?) -> Rest? {
      guard
        !labels.isEmpty || !unknown.isEmpty
          || TrialAttributes.besideSubject.contains(where: { value($0.index) != nil })
      else { return nil }
      let made = Box.create(minimumCapacity: count) { _ in Head(labels: labels, unknown: unknown) }
      let box = unsafeDowncast(made, to: Box.self)
      box.withUnsafeMutablePointerToElements { values in
        for slot in 0..<count { (values + slot).initialize(to: value(slot + 1)) }
      }
      return Rest(box: box)
    }

    var labels: TrialLabels { box.header.labels }
    var unknown: [String: String] { box.header.unknown }

    /// The value of the row at `index` of `named` (1 or more).
    subscript(index: Int) -> String? {
      box.withUnsafeMutablePointerToElements { $0[index - 1] }
    }

    /// Whether the labels are all there is: no named attribute but the subject, none unknown.
    var onlyLabels: Bool {
      unknown.isEmpty && TrialAttributes.besideSubject.allSatisfy { self[$0.index] == nil }
    }

    struct Head {
      let labels: TrialLabels
      let unknown: [String: String]
    }

    final class Box: ManagedBuffer<Head, String?> {
      deinit {
        _ = withUnsafeMutablePointerToElements { $0.deinitialize(count: Rest.count) }
      }
    }
  }

  // MARK: Labels' names

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

  // MARK: The journal's fields and consume's environment

  /// Every attribute as `(variable, value)`: each named one present, in the table's order,
  /// then each label, in the order `labels` gives them. The journal's fields and consume's
  /// environment both come from here; `value` gives the value of a row of `named`.
  public static func variables(
    named value: (Named) -> String?, labels: some Sequence<(key: String, value: String)>
  ) -> [(name: String, value: String)] {
    named.compactMap { row in value(row).map { (row.variable, $0) } }
      + labels.map { (labelVariable($0.key), $0.value) }
  }

  /// Every attribute as `(variable, value)`: the named ones present, then the labels, by key.
  public var variables: [(name: String, value: String)] {
    Self.variables(named: { self[$0] }, labels: labels)
  }

  // MARK: The stored form

  /// Whether the labels are all there is beside the subject (then `storedFields` is the
  /// labels, in their order, each as `label.KEY`).
  public var hasOnlyLabels: Bool { rest?.onlyLabels ?? true }

  /// Every attribute but the subject (which the stores keep apart, indexed) as named text:
  /// the named ones under their names, each label as `label.KEY`, and the unknown ones as read;
  /// by name. Empty for a trial with nothing but a subject.
  public var storedFields: [(name: String, value: String)] {
    var fields: [(name: String, value: String)] = []
    for row in Self.besideSubject {
      if let value = self[row] { fields.append((row.name, value)) }
    }
    fields += labels.map { (Self.labelPrefix + $0.key, $0.value) }
    fields += unknown.map { ($0.key, $0.value) }
    return fields.sorted { $0.name < $1.name }
  }

  /// The attributes of `subject` with `fields` as `storedFields` gives them.
  public init(subject: String, storedFields fields: some Sequence<(name: String, value: String)>)
    throws(TrialLabels.Invalid)
  {
    self.subject = subject
    var values: [String?] = []
    var labels: [String: String] = [:]
    var unknown: [String: String] = [:]
    for (name, value) in fields {
      if let key = Self.labelKey(storedName: name) {
        labels[key] = value
      } else if let row = Self.besideSubject.first(where: { $0.name == name }) {
        if values.isEmpty { values = Array(repeating: nil, count: Self.named.count) }
        values[row.index] = value
      } else {
        unknown[name] = value
      }
    }
    let checked = try TrialLabels(labels)
    self.rest = Rest.make(labels: checked, unknown: unknown) { values.isEmpty ? nil : values[$0] }
  }
}
