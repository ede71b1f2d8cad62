import Foundation
import Testing

/// The documents' links hold: in `README.md` and every `docs/*.md`, each relative link names a
/// file (or folder) of the repository, and each `#anchor` a heading of the document it points
/// to, as GitHub turns headings into anchors. Links with a scheme (`https:`, `file:`) are not
/// followed; links inside code are not links.
@Suite struct DocumentLinksTests {
  /// The repository, found from this source file (`Tests/TestSupportTests/`).
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

  /// The documents checked, as paths from the repository's root: `README.md`, then every
  /// markdown file under `docs/`.
  static func documents() -> [String] {
    let docs = root.appendingPathComponent("docs")
    let found = FileManager.default.enumerator(atPath: docs.path)?.compactMap { $0 as? String } ?? []
    return ["README.md"] + found.filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
  }

  /// For each line of `text`, whether it is inside a fenced code block (its fences included).
  static func fencedLines(_ lines: [Substring]) -> [Bool] {
    var fence: String?
    return lines.map { line in
      let trimmed = line.drop { $0 == " " }
      let marker = String(trimmed.prefix { $0 == "`" || $0 == "~" })
      if let open = fence {
        if marker.count >= open.count && marker.first == open.first { fence = nil }
        return true
      }
      if line.count - trimmed.count <= 3, marker.count >= 3, Set(marker).count == 1 {
        fence = marker
        return true
      }
      return false
    }
  }

  /// `text` with fenced code blocks and code spans blanked out, newlines kept (so that line
  /// numbers still hold): what is left is where links can be.
  static func prose(_ text: String) -> String {
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    let fenced = fencedLines(lines)
    var characters = Array(zip(lines, fenced).map { $1 ? "" : String($0) }.joined(separator: "\n"))
    /// The first run of backticks at or after `position`: the range it covers.
    func run(from position: Int) -> Range<Int>? {
      guard let start = characters[position...].firstIndex(of: "`") else { return nil }
      let end = characters[start...].firstIndex { $0 != "`" } ?? characters.count
      return start..<end
    }
    var index = 0
    while let opening = run(from: index) {
      // The closing run: the next run of exactly as many backticks.
      var closing = run(from: opening.upperBound)
      while let candidate = closing, candidate.count != opening.count {
        closing = run(from: candidate.upperBound)
      }
      guard let closing else {
        index = opening.upperBound
        continue
      }
      for blank in opening.lowerBound..<closing.upperBound where characters[blank] != "\n" {
        characters[blank] = " "
      }
      index = closing.upperBound
    }
    return String(characters)
  }

  /// Every relative link target in `text` (`[text](target)`, images too), with its line.
  static func links(in text: String) -> [(target: String, line: Int)] {
    let prose = prose(text)
    let link = try! Regex(#"\[[^\]]*\]\(\s*<?([^()\s<>]+)>?(?:\s+"[^"]*")?\s*\)"#)
    let scheme = try! Regex(#"^[A-Za-z][A-Za-z0-9+.-]*:"#)
    return prose.matches(of: link).compactMap { match in
      guard let target = match.output[1].substring.map(String.init), target.firstMatch(of: scheme) == nil
      else { return nil }
      let line = prose[..<match.range.lowerBound].count(where: { $0 == "\n" }) + 1
      return (target, line)
    }
  }

  /// The anchor GitHub gives a heading: its text without markup, in lower case, every
  /// character but letters, marks, numbers, `_`, `-` and spaces dropped, spaces as hyphens.
  static func slug(_ heading: String) -> String {
    var text = heading
    // A link shows its text; an image its alternative text.
    text = text.replacing(try! Regex(#"!?\[([^\]]*)\]\([^)]*\)"#)) { String($0.output[1].substring ?? "") }
    text = text.replacing(try! Regex(#"<[^>]*>"#), with: "")
    let kept: Set<Unicode.GeneralCategory> = [
      .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter, .nonspacingMark,
      .spacingMark, .enclosingMark, .decimalNumber, .letterNumber, .otherNumber, .connectorPunctuation,
    ]
    var slug = ""
    for scalar in text.lowercased().unicodeScalars {
      if scalar == " " {
        slug += "-"
      } else if scalar == "-" || kept.contains(scalar.properties.generalCategory) {
        slug.unicodeScalars.append(scalar)
      }
    }
    return slug
  }

  /// The anchors of a document: each heading's slug, a repeated one numbered `-1`, `-2`...
  static func anchors(in text: String) -> Set<String> {
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
    let heading = try! Regex(#"^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$"#)
    var seen: [String: Int] = [:]
    var anchors: Set<String> = []
    for (line, fenced) in zip(lines, fencedLines(lines)) where !fenced {
      guard let match = line.wholeMatch(of: heading), let title = match.output[1].substring else { continue }
      let base = slug(String(title))
      let count = seen[base, default: 0]
      seen[base] = count + 1
      anchors.insert(count == 0 ? base : "\(base)-\(count)")
    }
    return anchors
  }

  /// What is wrong with the links of `documents` (path from the root → text), one line each.
  /// `read` gives the text of a path from the root, nil when there is nothing there; a folder
  /// reads as empty text.
  static func problems(in documents: [(path: String, text: String)], read: (String) -> String?) -> [String] {
    var problems: [String] = []
    for document in documents {
      let folder = (document.path as NSString).deletingLastPathComponent
      for (target, line) in links(in: document.text) {
        let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
        let file = String(parts[0]).removingPercentEncoding ?? String(parts[0])
        let anchor = parts.count > 1 ? String(parts[1]).removingPercentEncoding ?? String(parts[1]) : nil
        let path =
          file.isEmpty
          ? document.path
          : URL(fileURLWithPath: "/" + folder, isDirectory: true).appendingPathComponent(file).standardized
            .path
        let relative = file.isEmpty ? path : String(path.dropFirst())
        let place = "\(document.path):\(line): \(target)"
        guard let text = file.isEmpty ? document.text : read(relative) else {
          problems.append("\(place): no file \(relative)")
          continue
        }
        guard let anchor, !anchor.isEmpty else { continue }
        if !relative.hasSuffix(".md") {
          problems.append("\(place): an anchor into \(relative), which is not a markdown document")
        } else if !anchors(in: text).contains(anchor) {
          problems.append("\(place): no heading of \(relative) has the anchor #\(anchor)")
        }
      }
    }
    return problems
  }

  /// A path from the repository's root as `problems` reads it.
  static func readFromRepository(_ relative: String) -> String? {
    var isFolder: ObjCBool = false
    let path = root.appendingPathComponent(relative).path
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else { return nil }
    if isFolder.boolValue { return "" }
    return (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
  }

  @Test func links_InEveryDocument_Resolve() throws {
    let documents = try Self.documents().map { path in
      (path: path, text: try String(contentsOf: Self.root.appendingPathComponent(path), encoding: .utf8))
    }
    #expect(documents.count > 1, "README.md and docs/*.md")
    #expect(documents.contains { !Self.links(in: $0.text).isEmpty })
    let problems = Self.problems(in: documents, read: Self.readFromRepository)
    #expect(problems.isEmpty, "broken links:\n\(problems.joined(separator: "\n"))")
  }

  @Test(arguments: [
    ("Installing on a host", "installing-on-a-host"),
    ("Service notifications (`sd_notify`)", "service-notifications-sd_notify"),
    ("The unit trialwatch-consumer@.service", "the-unit-trialwatch-consumerservice"),
    ("`make e2e`: the service under a real systemd", "make-e2e-the-service-under-a-real-systemd"),
    ("Codable messages, and a hand-written fast path", "codable-messages-and-a-hand-written-fast-path"),
    ("1. `make bench` — 25 November", "1-make-bench--25-november"),
    ("A [linked](x.md) *word*", "a-linked-word"),
  ])
  func slug_OfAHeading_IsTheAnchorGitHubGives(heading: String, slug: String) {
    #expect(Self.slug(heading) == slug)
  }

  @Test func anchors_OfARepeatedHeading_AreNumbered() {
    let text = "# Tests\n\n## Tests\n\n    # not a heading\n\n```\n# nor this\n```\n### Tests #\n"
    #expect(Self.anchors(in: text) == ["tests", "tests-1", "tests-2"])
  }

  @Test func problems_OfBrokenFilesAndAnchors_NameEach() {
    let files = ["docs/b.md": "# B\n\n## Part two\n", "bench": ""]
    let text = """
      # A
      [fine](b.md#part-two), [here](#a), [folder](../bench), [web](https://example.org/x#y)
      [no file](c.md), [no anchor](b.md#part-three),
      [split
      text](#nowhere) and `[in code](d.md)`

      ```
      [in a block](e.md)
      ```
      """
    let problems = Self.problems(in: [(path: "docs/a.md", text: text)]) { files[$0] }
    #expect(
      problems == [
        "docs/a.md:3: c.md: no file docs/c.md",
        "docs/a.md:3: b.md#part-three: no heading of docs/b.md has the anchor #part-three",
        "docs/a.md:4: #nowhere: no heading of docs/a.md has the anchor #nowhere",
      ])
  }
}
