import Foundation
import TestSupport
import TrialManual

/// The generated pages, and what they read as once the roff is taken out.
enum Pages {
  static let date = "2026-11-23"

  static func all() throws -> [ManualPage] { try TrialwatchManual.pages(date: date) }

  static func page(_ name: String) throws -> ManualPage {
    guard let page = try all().first(where: { $0.name == name }) else {
      throw TestSupportError("no page \(name)")
    }
    return page
  }

  /// The source without font changes and escapes: `\fBDefaultLength=\fR` reads
  /// `DefaultLength=`, `\-\-socket` reads `--socket`.
  static func plain(_ source: String) -> String {
    var text = source
    for escape in ["\\fB", "\\fI", "\\fR", "\\%", "\\&"] {
      text = text.replacingOccurrences(of: escape, with: "")
    }
    return text.replacingOccurrences(of: "\\-", with: "-").replacingOccurrences(of: "\\e", with: "\\")
  }

  /// The page's sections, by title, each its lines (plain).
  static func sections(_ source: String) -> [String: [String]] {
    var sections: [String: [String]] = [:]
    var current = ""
    for line in plain(source).split(separator: "\n").map(String.init) {
      if line.hasPrefix(".SH ") {
        current = String(line.dropFirst(4)).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        sections[current] = []
      } else {
        sections[current, default: []].append(line)
      }
    }
    return sections
  }

  /// The items of a section's tagged lists: the tag line, then the body's lines.
  static func items(_ lines: [String]) -> [(tag: String, body: [String])] {
    var items: [(tag: String, body: [String])] = []
    var index = 0
    while index < lines.count {
      if lines[index] == ".TP", index + 1 < lines.count {
        var body: [String] = []
        var next = index + 2
        while next < lines.count, ![".TP", ".RS", ".RE", ".PP"].contains(lines[next]) {
          body.append(lines[next])
          next += 1
        }
        items.append((lines[index + 1], body))
        index = next
      } else {
        index += 1
      }
    }
    return items
  }

  /// The items of a section's outer list: those not in a list inside an item.
  static func outerItems(_ lines: [String]) -> [(tag: String, body: [String])] {
    var outer: [String] = []
    var nested = false
    for line in lines {
      if line == ".RS" {
        nested = true
      } else if line == ".RE" {
        nested = false
      } else if !nested {
        outer.append(line)
      }
    }
    return items(outer)
  }

  /// Filled text: lines that are not requests, joined.
  static func text(_ lines: [String]) -> String {
    lines.filter { !$0.hasPrefix(".") }.joined(separator: " ")
  }
}
