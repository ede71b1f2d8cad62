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

  private static let startTrialKeys: Set<String> = [
    "subject", "duration", "endsAt", "reminders", "labels", "plan",
  ]

  private static func startTrial(_ fields: [String: Field]) -> StartTrialParameters? {
    guard fields.keys.allSatisfy(startTrialKeys.contains), let subject = fields["subject"]?.text
    else { return nil }
    var parameters = StartTrialParameters(subject: subject)
    if let field = fields["duration"] {
      guard let text = field.text, let span = try? TimeSpan.parse(text) else { return nil }
      parameters.duration = Span(span)
    }
    if let field = fields["endsAt"] {
      guard let text = field.text, let date = try? RFC3339.parse(text) else { return nil }
      parameters.endsAt = date
    }
    if let field = fields["reminders"] {
      guard case .list(let texts) = field else { return nil }
      var spans: [Span] = []
      for text in texts {
        guard let span = try? TimeSpan.parse(text) else { return nil }
        spans.append(Span(span))
      }
      parameters.reminders = spans
    }
    if let field = fields["plan"] {
      guard let text = field.text else { return nil }
      parameters.plan = text
    }
    if let field = fields["labels"] {
      guard case .object(let labels) = field else { return nil }
      parameters.labels = labels
    }
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
    object.key("daysLeft")
    var days = trial.daysLeft.description
    if days.hasSuffix(".0") { days.removeLast(2) }
    object.out += days.utf8
    if let endedAt = trial.endedAt { object.text("endedAt", RFC3339.format(endedAt)) }
    object.text("endsAt", RFC3339.format(trial.endsAt))
    object.text("id", trial.id.description)
    object.key("labels")
    // Keys in the order JSONEncoder's sortedKeys writes them: a label key is ASCII, so byte order.
    JSONText.appendObject(trial.labels ?? [:], to: &object.out)
    if let pausedAt = trial.pausedAt { object.text("pausedAt", RFC3339.format(pausedAt)) }
    object.key("reminders")
    object.out.append(UInt8(ascii: "["))
    for (index, span) in trial.reminders.enumerated() {
      if index > 0 { object.out.append(UInt8(ascii: ",")) }
      JSONText.appendString(span.description, to: &object.out)
    }
    object.out.append(UInt8(ascii: "]"))
    if let resumesAt = trial.resumesAt { object.text("resumesAt", RFC3339.format(resumesAt)) }
    object.key("revision")
    object.out += String(trial.revision).utf8
    object.text("startedAt", RFC3339.format(trial.startedAt))
    object.text("state", trial.state.rawValue)
    object.key("subject")
    JSONText.appendString(trial.subject, to: &object.out)
    if let timeLeft = trial.timeLeft { object.text("timeLeft", timeLeft.description) }
    object.close()
    object.out += "}}\0".utf8
    return object.out
  }

  /// The rows of `TrialAttributes.named` beside the subject in the order `JSONEncoder`'s sorted
  /// keys puts their names (ASCII, so byte order), each with its name's bytes.
  private static let namedInKeyOrder = TrialAttributes.besideSubject.map {
    (row: $0, key: Array($0.name.utf8))
  }
  .sorted { $0.key.lexicographicallyPrecedes($1.key) }

  /// Writes an object's fields in key order, as `JSONEncoder` with sorted keys does: each the
  /// caller names, in that order, and among them each named attribute present, where its name
  /// falls (`namedInKeyOrder`).
  private struct ObjectWriter {
    var out: [UInt8] = []
    let named: NamedAttributes
    private let order = FastPath.namedInKeyOrder
    /// The next of `order` not yet written or passed.
    private var next = 0
    private var isEmpty = true

    init(named: NamedAttributes) {
      self.named = named
    }

    /// Opens the field `key` (the named attributes before it written first); its value follows.
    mutating func key(_ key: StaticString) {
      key.withUTF8Buffer { key in
        while next < order.count, order[next].key.lexicographicallyPrecedes(key) {
          attribute()
        }
        open(key)
      }
    }

    /// The field `key` with `text`, which needs no escaping (a time, an id, a state), as its value.
    mutating func text(_ key: StaticString, _ text: String) {
      self.key(key)
      out.append(UInt8(ascii: "\""))
      out += text.utf8
      out.append(UInt8(ascii: "\""))
    }

    /// Closes the object, after the named attributes after its last field.
    mutating func close() {
      while next < order.count { attribute() }
      out.append(UInt8(ascii: "}"))
    }

    /// Writes the next of `order`, if present, and passes it.
    private mutating func attribute() {
      let (row, key) = order[next]
      next += 1
      guard let value = named[row] else { return }
      open(key)
      JSONText.appendString(value, to: &out)
    }

    private mutating func open(_ key: some Collection<UInt8>) {
      if !isEmpty { out.append(UInt8(ascii: ",")) }
      isEmpty = false
      out.append(UInt8(ascii: "\""))
      out += key
      out += #"":"#.utf8
    }
  }
}
