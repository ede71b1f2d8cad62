import ArgumentParser
import TrialControl
import TrialCore

/// `--label key=value`, as many as needed: the labels a trial starts with.
struct LabelOptions: ParsableArguments {
  @Option(
    name: .customLong("label"),
    help: ArgumentHelp(
      "A label of the trial, key=value (key: a-z, 0-9 and _, starting with a letter); repeat for more.",
      valueName: "key=value"))
  var labels: [String] = []

  /// The labels given, checked; nil when none was.
  func parsed() throws -> [String: String]? {
    guard !labels.isEmpty else { return nil }
    var parsed: [String: String] = [:]
    for text in labels {
      let (key, value) = try Self.pair(text, option: "--label")
      guard parsed.updateValue(value, forKey: key) == nil else {
        throw ValidationError("--label: the label \"\(key)\" is given twice")
      }
    }
    do {
      _ = try TrialLabels(parsed)
    } catch {
      throw ValidationError("--label: \(error)")
    }
    return parsed
  }

  /// `key=value`, split at its first `=`; the key checked.
  static func pair(_ text: String, option: String) throws -> (key: String, value: String) {
    guard let equals = text.firstIndex(of: "=") else {
      throw ValidationError("\(option): \"\(text)\" is not key=value")
    }
    let key = String(text[..<equals])
    let value = String(text[text.index(after: equals)...])
    if let problem = TrialLabels.validateKey(key) ?? TrialLabels.validateValue(value) {
      throw ValidationError("\(option): \(TrialLabels.Invalid(key: key, problem: problem))")
    }
    return (key, value)
  }
}

/// `--label key=value` and `--remove-label key`: changes to a trial's labels as it is extended
/// or ended.
struct LabelChangeOptions: ParsableArguments {
  @Option(
    name: .customLong("label"),
    help: ArgumentHelp("Set or change a label, key=value; repeat for more.", valueName: "key=value"))
  var labels: [String] = []
  @Option(
    name: .customLong("remove-label"),
    help: ArgumentHelp("Remove a label; repeat for more.", valueName: "key"))
  var removed: [String] = []

  /// The changes given (nil removes a label), checked; nil when none was.
  func changes() throws -> [String: String?]? {
    guard !labels.isEmpty || !removed.isEmpty else { return nil }
    var changes: [String: String?] = [:]
    for text in labels {
      let (key, value) = try LabelOptions.pair(text, option: "--label")
      guard changes.updateValue(value, forKey: key) == nil else {
        throw ValidationError("--label: the label \"\(key)\" is given twice")
      }
    }
    for key in removed {
      if let problem = TrialLabels.validateKey(key) {
        throw ValidationError("--remove-label: \(TrialLabels.Invalid(key: key, problem: problem))")
      }
      guard changes.updateValue(nil, forKey: key) == nil else {
        throw ValidationError("--remove-label: the label \"\(key)\" is also set or removed elsewhere")
      }
    }
    return changes
  }
}
