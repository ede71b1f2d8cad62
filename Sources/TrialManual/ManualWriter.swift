/// A man(7) page written in order: sections, paragraphs, tagged lists (one level nested inside
/// an item), literal blocks and synopses. It places the paragraph requests itself, none right
/// after a heading or a tag, as `mandoc -T lint` expects.
struct ManualWriter {
  private(set) var lines: [String] = []

  private enum Position {
    /// Nothing written since a heading or a tag: text needs no break.
    case opened
    /// After text, a literal block or a list.
    case written
  }
  private var position = Position.opened
  /// Inside an item's body: a further paragraph is indented like it (`.IP`).
  private var inItem = false
  private var nested = false

  /// The page's source.
  var page: String { lines.joined(separator: "\n") + "\n" }

  mutating func comment(_ text: String) {
    lines.append(".\\\" " + text)
  }

  /// `.TH`: the title (upper case), the section, the date (YYYY-MM-DD), the source (the
  /// package and its version) and the manual's name.
  mutating func title(_ title: String, section: Int, date: String, source: String, manual: String) {
    lines.append(
      ".TH \(title.uppercased()) \(section) \(date) " + Roff.argument(Roff.escape(source)) + " "
        + Roff.argument(Roff.escape(manual)))
  }

  /// A section; its title as printed (`EXIT STATUS`, `[Trials] SECTION OPTIONS`).
  mutating func section(_ title: String) {
    endList()
    lines.append(".SH " + Roff.argument(Roff.escape(title)))
    inItem = false
    position = .opened
  }

  mutating func subsection(_ title: String) {
    endList()
    lines.append(".SS " + Roff.argument(Roff.escape(title)))
    inItem = false
    position = .opened
  }

  /// A paragraph of prose (see `Roff.words`).
  mutating func paragraph(_ text: String, keys: Bool = false) {
    paragraph(words: Roff.words(text, keys: keys))
  }

  /// A paragraph of words already in roff.
  mutating func paragraph(words: [String]) {
    let filled = Roff.fill(words)
    guard !filled.isEmpty else { return }
    breakParagraph()
    lines += filled
    position = .written
  }

  /// Lines printed as they are, in a fixed-width font; `attached` to the text before (an
  /// "Example:"), without a paragraph break.
  mutating func literal(_ text: [String], attached: Bool = false) {
    if !attached { breakParagraph() }
    lines.append(".EX")
    lines += text.map { Roff.textLine(Roff.escape($0, code: true)) }
    lines.append(".EE")
    position = .written
  }

  /// An item of a tagged list: `tag` is a line of roff. Its body follows as paragraphs.
  mutating func item(_ tag: String) {
    lines.append(".TP")
    lines.append(Roff.textLine(tag))
    inItem = true
    position = .opened
  }

  /// Ends the items: what follows is a paragraph of its own again.
  mutating func endItems() {
    endList()
    inItem = false
  }

  /// Starts a tagged list inside the current item's body, ended by `endList`.
  mutating func beginList() {
    precondition(inItem && !nested, "a nested list goes in an item's body")
    lines.append(".RS")
    nested = true
    position = .opened
  }

  mutating func endList() {
    guard nested else { return }
    lines.append(".RE")
    nested = false
    position = .written
  }

  /// A synopsis: the command in bold, then `words` (lines of roff: `.OP` requests, `.B`,
  /// `.I` and `.RI` lines), hanging-indented after the command's name.
  mutating func synopsis(_ command: String, _ words: [String]) {
    lines.append(".SY " + Roff.escape(command, code: true))
    lines += words
    lines.append(".YS")
    position = .written
  }

  private mutating func breakParagraph() {
    guard position == .written else { return }
    lines.append(inItem ? ".IP" : ".PP")
  }
}
