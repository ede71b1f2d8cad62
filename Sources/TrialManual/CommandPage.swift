import Foundation

/// A reference to a page, as SEE ALSO lists it: by section, then by name.
public struct PageReference: Hashable, Sendable, Comparable {
  public var name: String
  public var section: Int

  public init(_ name: String, _ section: Int) {
    self.name = name
    self.section = section
  }

  public static func < (a: PageReference, b: PageReference) -> Bool {
    (a.section, a.name) < (b.section, b.name)
  }
}

/// What a page says that a command's definitions do not: environment variables, files and
/// related pages.
public struct PageExtras: Hashable, Sendable {
  /// Names and what they mean.
  public var environment: [Entry]
  /// Paths and what they hold.
  public var files: [Entry]
  public var seeAlso: [PageReference]

  public struct Entry: Hashable, Sendable {
    public var name: String
    public var meaning: String

    public init(_ name: String, _ meaning: String) {
      self.name = name
      self.meaning = meaning
    }
  }

  public init(environment: [Entry] = [], files: [Entry] = [], seeAlso: [PageReference] = []) {
    self.environment = environment
    self.files = files
    self.seeAlso = seeAlso
  }
}

/// The page of a command, from its definitions as `--experimental-dump-help` gives them:
/// NAME and SYNOPSIS, DESCRIPTION from the discussion, OPTIONS, COMMANDS for subcommands
/// (options every subcommand takes are listed once, under OPTIONS), then ENVIRONMENT, FILES,
/// EXIT STATUS (from the discussion) and SEE ALSO.
struct CommandPage {
  var command: CommandInfo
  var section: Int
  var manual: String
  var date: String
  var source: String
  var extras: PageExtras

  func render() -> String {
    var page = ManualWriter()
    page.comment("\(command.commandName)(\(section)), generated from its command-line definitions.")
    page.title(command.commandName, section: section, date: date, source: source, manual: manual)
    let discussion = Discussion(command.discussion)
    let subcommands = Self.subcommands(of: command)

    page.section("NAME")
    page.paragraph(
      words: [Roff.escape(command.commandName), "\\-"] + Roff.words(Self.summary(command.abstract)))

    page.section("SYNOPSIS")
    if subcommands.isEmpty {
      page.synopsis(command.commandName, command.displayedArguments.compactMap(Self.synopsisLine))
    } else {
      for subcommand in subcommands {
        var words = [".B " + Roff.escape(subcommand.commandName, code: true)]
        let own = subcommand.displayedArguments.filter { !commonIdentities.contains($0.identity) }
        if subcommand.displayedArguments.count > own.count { words.append(".RI [ options ]") }
        words += own.compactMap(Self.synopsisLine)
        page.synopsis(command.commandName, words)
      }
    }

    page.section("DESCRIPTION")
    if let abstract = command.abstract, discussion.description.isEmpty { page.paragraph(abstract) }
    write(discussion.description, to: &page)

    let options = (commonArguments + command.displayedArguments).filter { $0.kind != .positional }
    var listed: Set<String> = []
    if !options.isEmpty {
      page.section("OPTIONS")
      let exceptions = Dictionary(
        uniqueKeysWithValues: commonArguments.map { argument in
          (argument.identity, subcommands.filter { !$0.takes(argument) }.map(\.commandName))
        })
      if !subcommands.isEmpty {
        page.paragraph(
          "Every command takes these options, after its name"
            + (exceptions.values.allSatisfy(\.isEmpty) ? "." : ", unless said otherwise."))
      }
      for option in options where listed.insert(option.identity).inserted {
        let missing = exceptions[option.identity] ?? []
        describe(
          option, on: &page,
          note: missing.isEmpty ? nil : "Not taken by " + missing.joined(separator: ", ") + ".")
      }
      page.endItems()
    }

    if !subcommands.isEmpty {
      page.section("COMMANDS")
      for subcommand in subcommands { describe(subcommand, on: &page) }
      page.endItems()
    }

    if !extras.environment.isEmpty {
      page.section("ENVIRONMENT")
      for entry in extras.environment {
        page.item(Roff.bold(entry.name))
        page.paragraph(entry.meaning)
      }
      page.endItems()
    }
    if !extras.files.isEmpty || discussion.sections["FILES"] != nil {
      page.section("FILES")
      write(discussion.sections["FILES"] ?? [], to: &page)
      for entry in extras.files {
        page.item(Roff.italic(entry.name))
        page.paragraph(entry.meaning)
      }
      page.endItems()
    }
    page.section("EXIT STATUS")
    write(
      discussion.sections["EXIT STATUS"] ?? [.text("0 on success, and more than 0 when an error occurs.")],
      to: &page)
    for title in Discussion.sectionTitles where !["EXIT STATUS", "FILES"].contains(title) {
      guard let blocks = discussion.sections[title] else { continue }
      page.section(title)
      write(blocks, to: &page)
    }
    if !extras.seeAlso.isEmpty {
      page.section("SEE ALSO")
      page.paragraph(words: Self.references(extras.seeAlso))
    }
    return page.page
  }

  /// The options of the first subcommand that more than three quarters of the subcommands taking
  /// options also take (`--socket`, `--json`, `--help`), described once under OPTIONS; the
  /// subcommands that do not take one are named there (`http token`, which needs no daemon, takes
  /// no `--socket`).
  var commonArguments: [ArgumentInfo] {
    let taking = Self.subcommands(of: command).filter {
      $0.displayedArguments.contains { $0.kind != .positional }
    }
    guard let first = taking.first, taking.count > 1 else { return [] }
    return first.displayedArguments.filter { argument in
      argument.kind != .positional && taking.filter { $0.takes(argument) }.count * 4 > taking.count * 3
    }
  }

  var commonIdentities: Set<String> { Set(commonArguments.map(\.identity)) }

  private func describe(_ subcommand: CommandInfo, on page: inout ManualWriter) {
    let own = subcommand.displayedArguments.filter { !commonIdentities.contains($0.identity) }
    let positionals = own.filter { $0.kind == .positional }.map { argument in
      let name = Roff.italic(argument.valueName ?? "value") + (argument.isRepeating ? " ..." : "")
      if argument.followsTerminator { return "\\-\\- " + name }
      return argument.isOptional ? "[" + name + "]" : name
    }
    page.item(([Roff.bold(subcommand.commandName)] + positionals).joined(separator: " "))
    let discussion = Discussion(subcommand.discussion)
    if let abstract = subcommand.abstract { page.paragraph(abstract) }
    write(discussion.description, to: &page)
    if !own.isEmpty {
      page.beginList()
      for argument in own where argument.abstract != nil || argument.discussion != nil {
        describe(argument, on: &page)
      }
      page.endList()
    }
  }

  private func describe(_ argument: ArgumentInfo, on page: inout ManualWriter, note: String? = nil) {
    let value = argument.valueName.map(Roff.italic) ?? ""
    let tag: String
    switch argument.kind {
    case .positional: tag = value + (argument.isRepeating ? " ..." : "")
    case .flag: tag = argument.spelledNames.map(Roff.bold).joined(separator: ", ")
    case .option: tag = argument.spelledNames.map { Roff.bold($0) + " " + value }.joined(separator: ", ")
    }
    page.item(tag)
    var text = [argument.abstract, argument.discussion].compactMap { $0 }.joined(separator: " ")
    if let values = argument.allValues, !values.isEmpty, argument.kind != .flag {
      text += " One of: " + values.map { "`\($0)`" }.joined(separator: ", ") + "."
    }
    if let defaultValue = argument.defaultValue, !defaultValue.isEmpty, argument.kind != .flag {
      text += " Default: `\(defaultValue)`."
    }
    if let note { text += " " + note }
    page.paragraph(text.trimmingCharacters(in: .whitespaces))
  }

  private func write(_ blocks: [Discussion.Block], to page: inout ManualWriter) {
    for block in blocks {
      switch block {
      case .text(let text): page.paragraph(text)
      case .example(let command):
        page.paragraph("Example:")
        page.literal([command], attached: true)
      case .list(let items):
        for item in items {
          page.item(Roff.bold(item.tag))
          page.paragraph(item.text)
        }
        page.endItems()
      }
    }
  }

  /// The subcommands a page describes: not ArgumentParser's own `help`, which `-h, --help`
  /// stands for. A group of subcommands (`consumer`) is described as its members, each
  /// named with the group's name first (`consumer create`).
  static func subcommands(of command: CommandInfo) -> [CommandInfo] {
    let own = command.displayedSubcommands.filter {
      !($0.commandName == "help" && $0.abstract == "Show subcommand help information.")
    }
    return own.flatMap { subcommand -> [CommandInfo] in
      let members = subcommands(of: subcommand)
      guard !members.isEmpty else { return [subcommand] }
      return members.map { member in
        var named = member
        named.commandName = subcommand.commandName + " " + member.commandName
        return named
      }
    }
  }

  /// The synopsis line of an argument, or nil for `--help`, which every command takes.
  static func synopsisLine(_ argument: ArgumentInfo) -> String? {
    let value = Roff.escape(argument.valueName ?? "value", code: true)
    let repeating = argument.isRepeating ? " ..." : ""
    switch argument.kind {
    case .positional:
      if argument.followsTerminator {
        return ".RI \"\\-\\- \" \(value)" + (repeating.isEmpty ? "" : " \"\(repeating)\"")
      }
      return argument.isOptional ? ".RI [ \(value)\(repeating) ]" : ".I \(value)\(repeating)"
    case .flag:
      guard argument.identity != "--help" else { return nil }
      return ".OP " + Roff.escape(argument.identity, code: true)
    case .option:
      let name = Roff.escape(argument.identity, code: true)
      return argument.isOptional ? ".OP \(name) \(value)" : ".B \(name)\n.I \(value)"
    }
  }

  /// An abstract as NAME gives it: no capital (unless the word is one), no final period.
  static func summary(_ abstract: String?) -> String {
    var text = abstract ?? ""
    if text.hasSuffix(".") { text.removeLast() }
    let firstWord = text.prefix { $0 != " " }
    if firstWord.dropFirst().allSatisfy({ !$0.isUppercase }), let first = text.first {
      text = first.lowercased() + text.dropFirst()
    }
    return text
  }

  /// `name(N)` words, comma-separated, in SEE ALSO's order.
  static func references(_ pages: [PageReference]) -> [String] {
    let sorted = Set(pages).sorted()
    return sorted.enumerated().map { index, page in
      Roff.bold(page.name) + "(\(page.section))" + (index < sorted.count - 1 ? "," : "")
    }
  }
}

extension CommandInfo {
  /// Whether the command takes `argument` (one of the same identity).
  func takes(_ argument: ArgumentInfo) -> Bool {
    displayedArguments.contains { $0.identity == argument.identity }
  }
}
