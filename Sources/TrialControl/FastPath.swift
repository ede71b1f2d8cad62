import FoundationEssentials
import TrialCore

/// Hand-written coding for the hottest messages, where Foundation's coders cost more than the
/// socket round trip allows: GetTrial and StartTrial calls, and the reply that carries a trial
/// (of StartTrial, GetTrial, ExtendTrial and EndTrial). A StartTrial's labels are read here
/// too, as an object of strings. Measured with the daemon in one run,
/// `JSONDecoder` and `JSONEncoder` took about half of the time a GetTrial round trip costs
/// (docs/benchmark-history.md, "Codable messages"). The Codable types stay the definition: the
/// fast path reads only the compact form trialwatchctl sends, with strings free of escapes, and
/// hands anything else, anything invalid included, to the Codable path (which names what is
/// wrong); it writes exactly the bytes `JSONEncoder` writes. The tests compare both ways.
public enum FastPath {
  /// The method and parameters of a GetTrial or StartTrial call in the compact form
  /// `{"method":"…","parameters":{"key":"value","key":["value",…],…}}`, checked; nil for any
  /// other message.
  public static func call(_ message: ArraySlice<UInt8>) -> (
    method: String, parameters: any VarlinkParameters
  )? {
    var reader = Reader(bytes: message)
    guard reader.expect(#"{"method":"#), let method = reader.string(), reader.expect(#","parameters":{"#)
    else { return nil }
    var fields: [String: Field] = [:]
    if !reader.expect("}") {
      repeat {
        guard let key = reader.string(), reader.expect(":"), fields[key] == nil, let value = reader.field()
        else { return nil }
        fields[key] = value
      } while reader.expect(",")
      guard reader.expect("}") else { return nil }
    }
    guard reader.expect("}"), reader.atEnd else { return nil }
    let parameters: (any VarlinkParameters)?
    switch method {
    case Trials.getTrial.qualifiedName: parameters = getTrial(fields)
    case Trials.startTrial.qualifiedName: parameters = startTrial(fields)
    default: return nil
    }
    guard let parameters, (try? parameters.validate()) != nil else { return nil }
    return (method, parameters)
  }

  private enum Field {
    case text(String)
    case list([String])
    /// An object of strings, each key once.
    case object([String: String])

    var text: String? { if case .text(let text) = self { text } else { nil } }
  }

  private static func getTrial(_ fields: [String: Field]) -> GetTrialParameters? {
    guard fields.keys.allSatisfy({ $0 == "id" || $0 == "subject" }) else { return nil }
    var parameters = GetTrialParameters(subject: "")
    parameters.subject = nil
    if let field = fields["subject"] {
      guard let text = field.text else { return nil }
      parameters.subject = text
    }
    if let field = fields["id"] {
      guard let text = field.text, let id = TrialID(text) else { return nil }
      parameters.id = id
    }
    return parameters
  }

  /// One pass over the fields (a look-up of each known key would hash it whether present or
  /// not: a StartTrial's hot path pays for every key it may take).
  private static func startTrial(_ fields: [String: Field]) -> StartTrialParameters? {
    var parameters = StartTrialParameters(subject: "")
    var subject: String?
    for (key, field) in fields {
      switch key {
      case "subject": subject = field.text
      case "duration":
        guard let text = field.text, let span = try? TimeSpan.parse(text) else { return nil }
        parameters.duration = Span(span)
      case "endsAt":
        guard let text = field.text, let date = try? RFC3339.parse(text) else { return nil }
        parameters.endsAt = date
      case "reminders":
        guard case .list(let texts) = field else { return nil }
        var spans: [Span] = []
        for text in texts {
          guard let span = try? TimeSpan.parse(text) else { return nil }
          spans.append(Span(span))
        }
        parameters.reminders = spans
      case "plan":
        guard let text = field.text else { return nil }
        parameters.plan = text
      case "variant":
        guard let text = field.text else { return nil }
        parameters.variant = text
      case "labels":
        guard case .object(let labels) = field else { return nil }
        parameters.labels = labels
      default: return nil
      }
    }
    guard let subject else { return nil }
    parameters.subject = subject
    return parameters
  }

  /// Reads the compact form: no whitespace, strings without escapes or control characters.
  private struct Reader {
    let bytes: ArraySlice<UInt8>
    var index: ArraySlice<UInt8>.Index

    init(bytes: ArraySlice<UInt8>) {
      self.bytes = bytes
      index = bytes.startIndex
    }

    var atEnd: Bool { index == bytes.endIndex }

    mutating func expect(_ text: StaticString) -> Bool {
      let count = text.utf8CodeUnitCount
      guard bytes.endIndex - index >= count,
        text.withUTF8Buffer({ bytes[index..<(index + count)].elementsEqual($0) })
      else { return false }
      index += count
      return true
    }

    mutating func string() -> String? {
      guard expect("\"") else { return nil }
      let start = index
      var ascii = true
      while index < bytes.endIndex {
        let byte = bytes[index]
        if byte == UInt8(ascii: "\"") {
          defer { index += 1 }
          // ASCII needs no validation, and the generic validating initialiser looks up type
          // metadata on every call.
          return ascii
            ? String(decoding: bytes[start..<index], as: UTF8.self)
            : String(validating: bytes[start..<index], as: UTF8.self)
        }
        guard byte >= 0x20, byte != UInt8(ascii: "\\") else { return nil }
        ascii = ascii && byte < 0x80
        index += 1
      }
      return nil
    }

    mutating func field() -> Field? {
      if let text = string() { return .text(text) }
      if expect("{") { return object() }
      guard expect("[") else { return nil }
      var list: [String] = []
      if expect("]") { return .list(list) }
      repeat {
        guard let text = string() else { return nil }
        list.append(text)
      } while expect(",")
      return expect("]") ? .list(list) : nil
    }

    /// The rest of an object of strings, its `{` read.
    mutating func object() -> Field? {
      var object: [String: String] = [:]
      if expect("}") { return .object(object) }
      repeat {
        guard let key = string(), expect(":"), let value = string(),
          object.updateValue(value, forKey: key) == nil
        else { return nil }
      } while expect(",")
      return expect("}") ? .object(object) : nil
    }
  }

  /// The reply message carrying `reply`, with its NUL: the bytes
  /// `WireCoding.makeEncoder().message(OutgoingReply(parameters: reply))` writes.
  public static func message(_ reply: TrialReply) -> [UInt8] {
    let trial = reply.trial
    var object = ObjectWriter(named: trial.named)
    object.out.reserveCapacity(320)
    object.out += #"{"parameters":{"trial":{"#.utf8
    if let askedAt = trial.cancelAskedAt { object.text(.cancelAskedAt, RFC3339.format(askedAt)) }
    if let cancelsAt = trial.cancelsAt { object.text(.cancelsAt, RFC3339.format(cancelsAt)) }
    object.key(.daysLeft)
    var days = trial.daysLeft.description
    if days.hasSuffix(".0") { days.removeLast(2) }
    object.out += days.utf8
    if let endedAt = trial.endedAt { object.text(.endedAt, RFC3339.format(endedAt)) }
    object.text(.endsAt, RFC3339.format(trial.endsAt))
    object.key(.extensions)
    object.out += String(trial.extensions).utf8
    if let grace = trial.grace { object.text(.grace, grace.description) }
    if let graceEndsAt = trial.graceEndsAt { object.text(.graceEndsAt, RFC3339.format(graceEndsAt)) }
    object.text(.id, trial.id.description)
    object.key(.labels)
    // Keys in the order JSONEncoder's sortedKeys writes them: a label key is ASCII, so byte order.
    JSONText.appendObject(trial.labels ?? [:], to: &object.out)
    if let pausedAt = trial.pausedAt { object.text(.pausedAt, RFC3339.format(pausedAt)) }
    object.key(.reminders)
    object.out.append(UInt8(ascii: "["))
    for (index, span) in trial.reminders.enumerated() {
      if index > 0 { object.out.append(UInt8(ascii: ",")) }
      JSONText.appendString(span.description, to: &object.out)
    }
    object.out.append(UInt8(ascii: "]"))
    if let resumesAt = trial.resumesAt { object.text(.resumesAt, RFC3339.format(resumesAt)) }
    object.key(.revision)
    object.out += String(trial.revision).utf8
    object.text(.startedAt, RFC3339.format(trial.startedAt))
    object.text(.state, trial.state.rawValue)
    object.key(.subject)
    JSONText.appendString(trial.subject, to: &object.out)
    if let timeLeft = trial.timeLeft { object.text(.timeLeft, timeLeft.description) }
    object.close()
    object.out += "}}\0".utf8
    return object.out
  }

  /// The fields of a trial's object beside its named attributes, in the order `JSONEncoder`'s
  /// sorted keys puts their names (ASCII, so byte order).
  private enum TrialField: Int, CaseIterable {
    case cancelAskedAt, cancelsAt, daysLeft, endedAt, endsAt, extensions, grace, graceEndsAt, id, labels
    case pausedAt, reminders, resumesAt, revision, startedAt, state, subject, timeLeft

    var name: String {
      switch self {
      case .cancelAskedAt: "cancelAskedAt"
      case .cancelsAt: "cancelsAt"
      case .daysLeft: "daysLeft"
      case .endedAt: "endedAt"
      case .endsAt: "endsAt"
      case .extensions: "extensions"
      case .grace: "grace"
      case .graceEndsAt: "graceEndsAt"
      case .id: "id"
      case .labels: "labels"
      case .pausedAt: "pausedAt"
      case .reminders: "reminders"
      case .resumesAt: "resumesAt"
      case .revision: "revision"
      case .startedAt: "startedAt"
      case .state: "state"
      case .subject: "subject"
      case .timeLeft: "timeLeft"
      }
    }
  }

  /// Each field's bytes before its value, the comma first: `,"endsAt":`.
  private static let prefixes = TrialField.allCases.map { Array(#","\#($0.name)":"#.utf8) }

  /// By field, the rows of `TrialAttributes.named` beside the subject whose names come just
  /// before the field's (after the field before it), each with its bytes before its value;
  /// last, those after every field.
  private static let attributesBefore: [[(row: TrialAttributes.Named, prefix: [UInt8])]] = {
    var before = Array(
      repeating: [(row: TrialAttributes.Named, prefix: [UInt8])](), count: TrialField.allCases.count + 1)
    let fields = TrialField.allCases.map { Array($0.name.utf8) }
    for row in TrialAttributes.besideSubject {
      let name = Array(row.name.utf8)
      let place = fields.firstIndex { name.lexicographicallyPrecedes($0) } ?? fields.count
      before[place].append((row, Array(#","\#(row.name)":"#.utf8)))
    }
    return before.map { $0.sorted { $0.prefix.lexicographicallyPrecedes($1.prefix) } }
  }()

  /// Writes an object's fields in key order, as `JSONEncoder` with sorted keys does: each the
  /// caller names, in that order, and among them each named attribute present, where its name
  /// falls (`attributesBefore`).
  private struct ObjectWriter {
    var out: [UInt8] = []
    let named: NamedAttributes
    /// The first field whose named attributes are not written yet (`attributesBefore`).
    private var next = 0
    private var isEmpty = true

    init(named: NamedAttributes) {
      self.named = named
    }

    /// Opens `field` (the named attributes before it written first); its value follows.
    mutating func key(_ field: TrialField) {
      attributes(through: field.rawValue)
      open(FastPath.prefixes[field.rawValue])
    }

    /// `field` with `text`, which needs no escaping (a time, an id, a state), as its value.
    mutating func text(_ field: TrialField, _ text: String) {
      key(field)
      out.append(UInt8(ascii: "\""))
      out += text.utf8
      out.append(UInt8(ascii: "\""))
    }

    /// Closes the object, after the named attributes after its last field.
    mutating func close() {
      attributes(through: TrialField.allCases.count)
      out.append(UInt8(ascii: "}"))
    }

    /// Writes the named attributes present before the field at `place` not written yet.
    private mutating func attributes(through place: Int) {
      guard !named.isEmpty else { return }
      while next <= place {
        for (row, prefix) in FastPath.attributesBefore[next] {
          guard let value = named[row] else { continue }
          open(prefix)
          JSONText.appendString(value, to: &out)
        }
        next += 1
      }
    }

    /// The bytes before a value (`,"name":`), without the comma when it comes first.
    private mutating func open(_ prefix: [UInt8]) {
      if isEmpty {
        out += prefix.dropFirst()
        isEmpty = false
      } else {
        out += prefix
      }
    }
  }
}
