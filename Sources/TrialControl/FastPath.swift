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
    var out: [UInt8] = []
    out.reserveCapacity(320)
    out += #"{"parameters":{"trial":{"daysLeft":"#.utf8
    var days = trial.daysLeft.description
    if days.hasSuffix(".0") { days.removeLast(2) }
    out += days.utf8
    if let endedAt = trial.endedAt {
      out += #","endedAt":""#.utf8
      out += RFC3339.format(endedAt).utf8
      out.append(UInt8(ascii: "\""))
    }
    out += #","endsAt":""#.utf8
    out += RFC3339.format(trial.endsAt).utf8
    out += #"","id":""#.utf8
    out += trial.id.description.utf8
    out += #"","labels":"#.utf8
    // Keys in the order JSONEncoder's sortedKeys writes them: a label key is ASCII, so byte order.
    JSONText.appendObject(trial.labels ?? [:], to: &out)
    if let pausedAt = trial.pausedAt {
      out += #","pausedAt":""#.utf8
      out += RFC3339.format(pausedAt).utf8
      out.append(UInt8(ascii: "\""))
    }
    if let plan = trial.plan {
      out += #","plan":"#.utf8
      JSONText.appendString(plan, to: &out)
    }
    out += #","reminders":["#.utf8
    for (index, span) in trial.reminders.enumerated() {
      if index > 0 { out.append(UInt8(ascii: ",")) }
      JSONText.appendString(span.description, to: &out)
    }
    out.append(UInt8(ascii: "]"))
    if let resumesAt = trial.resumesAt {
      out += #","resumesAt":""#.utf8
      out += RFC3339.format(resumesAt).utf8
      out.append(UInt8(ascii: "\""))
    }
    out += #","revision":"#.utf8
    out += String(trial.revision).utf8
    out += #","startedAt":""#.utf8
    out += RFC3339.format(trial.startedAt).utf8
    out += #"","state":""#.utf8
    out += trial.state.rawValue.utf8
    out += #"","subject":"#.utf8
    JSONText.appendString(trial.subject, to: &out)
    if let timeLeft = trial.timeLeft {
      out += #","timeLeft":"#.utf8
      JSONText.appendString(timeLeft.description, to: &out)
    }
    out += "}}}\0".utf8
    return out
  }
}
