import Foundation

/// A command's discussion, the text its `--help` prints after the usage, read into what a
/// page shows: paragraphs and examples for DESCRIPTION, and the sections it gives itself.
///
/// A paragraph whose first line is a section's title in capitals (`EXIT STATUS`) gives that
/// section, its lines `  0  success` a tagged list; so does a paragraph starting with the
/// title as a label (`Exit status: 0 on a clean stop, 1 on a failure, 64 on a usage
/// error.`), each `N on ...` an item. `Example: trialwatchctl status acme-42` is an example.
struct Discussion: Hashable {
  enum Block: Hashable {
    case text(String)
    case example(String)
    case list([Item])
  }

  struct Item: Hashable {
    var tag: String
    var text: String
  }

  /// The sections a discussion may give itself.
  static let sectionTitles = ["EXIT STATUS", "ENVIRONMENT", "FILES", "EXAMPLES", "NOTES"]

  var description: [Block] = []
  /// By title, in capitals.
  var sections: [String: [Block]] = [:]

  init(_ text: String?) {
    let paragraphs = (text ?? "").split(separator: "\n\n", omittingEmptySubsequences: true)
    for paragraph in paragraphs {
      let lines = paragraph.split(separator: "\n").map { String($0) }
      guard let first = lines.first?.trimmingCharacters(in: .whitespaces), !first.isEmpty else { continue }
      if Self.sectionTitles.contains(first) {
        sections[first, default: []].append(Self.body(Array(lines.dropFirst())))
      } else if let colon = first.firstIndex(of: ":"),
        Self.sectionTitles.contains(first[..<colon].uppercased())
      {
        let rest =
          (String(first[first.index(after: colon)...]) + " " + lines.dropFirst().joined(separator: " "))
          .trimmingCharacters(in: .whitespaces)
        sections[first[..<colon].uppercased(), default: []].append(Self.sentenceList(rest))
      } else if first.hasPrefix("Example: "), lines.count == 1 {
        description.append(.example(String(first.dropFirst("Example: ".count))))
      } else {
        let text = lines.map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
        // "... reminders. Example: trialwatchctl start acme-42": the example ends the paragraph.
        if let example = text.range(of: " Example: ") {
          description.append(.text(String(text[..<example.lowerBound])))
          description.append(.example(String(text[example.upperBound...])))
        } else {
          description.append(.text(text))
        }
      }
    }
  }

  /// The lines under a title: a tagged list when each is `  tag  text`, else text.
  static func body(_ lines: [String]) -> Block {
    let row = try! Regex(#"^\s+(\S+)\s{2,}(\S.*)$"#)
    let items = lines.compactMap { line -> Item? in
      guard let match = line.wholeMatch(of: row), let tag = match.output[1].substring,
        let text = match.output[2].substring
      else { return nil }
      return Item(tag: String(tag), text: String(text))
    }
    if !items.isEmpty, items.count == lines.count { return .list(items) }
    return .text(lines.map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " "))
  }

  /// `0 on a clean stop, 1 on a failure, 64 on a usage error.` as items `0`, `1`, `64`;
  /// other text as it is.
  static func sentenceList(_ text: String) -> Block {
    var body = Substring(text)
    if body.hasSuffix(".") { body = body.dropLast() }
    var parts: [Substring] = []
    var start = body.startIndex
    var index = body.startIndex
    // Split at ", " followed by a number and a space.
    while let comma = body[index...].firstIndex(of: ",") {
      let after = body[body.index(after: comma)...].drop { $0 == " " }
      let digits = after.prefix { $0.isNumber }
      if !digits.isEmpty, after.dropFirst(digits.count).first == " " {
        parts.append(body[start..<comma])
        start = after.startIndex
      }
      index = body.index(after: comma)
    }
    parts.append(body[start...])
    let items = parts.compactMap { part -> Item? in
      let digits = part.prefix { $0.isNumber }
      guard !digits.isEmpty, part.dropFirst(digits.count).first == " " else { return nil }
      let rest = part.dropFirst(digits.count + 1)
      return Item(tag: String(digits), text: rest.prefix(1).uppercased() + rest.dropFirst() + ".")
    }
    if items.count >= 2, items.count == parts.count { return .list(items) }
    return .text(text)
  }
}
