import Foundation

/// What swift-argument-parser says about a command with `--experimental-dump-help`: the
/// command-line pages are generated from it. Only the fields the pages use are decoded; the
/// format is ArgumentParser's `ToolInfoV0`, serialization version 0.
public struct ToolInfo: Decodable, Hashable, Sendable {
  public var serializationVersion: Int
  public var command: CommandInfo

  public struct Failure: Error, CustomStringConvertible {
    public var description: String
  }

  /// Decodes the dump of one command.
  /// - Throws: `Failure` when the text is not a dump, or of a version this does not read.
  public init(dump: String) throws(Failure) {
    let decoded: ToolInfo
    do {
      decoded = try JSONDecoder().decode(ToolInfo.self, from: Data(dump.utf8))
    } catch {
      throw Failure(description: "not a dump of a command's help: \(error)")
    }
    guard decoded.serializationVersion == 0 else {
      throw Failure(
        description: "dump-help serialization version \(decoded.serializationVersion); 0 expected")
    }
    self = decoded
  }
}

public struct CommandInfo: Decodable, Hashable, Sendable {
  public var commandName: String
  public var abstract: String?
  public var discussion: String?
  public var shouldDisplay: Bool?
  public var arguments: [ArgumentInfo]?
  public var subcommands: [CommandInfo]?

  /// The arguments shown in help, in declaration order.
  public var displayedArguments: [ArgumentInfo] { (arguments ?? []).filter { $0.shouldDisplay ?? true } }

  /// The subcommands shown in help.
  public var displayedSubcommands: [CommandInfo] { (subcommands ?? []).filter { $0.shouldDisplay ?? true } }
}

public struct ArgumentInfo: Decodable, Hashable, Sendable {
  public enum Kind: String, Decodable, Hashable, Sendable {
    case positional, option, flag
  }

  public struct Name: Decodable, Hashable, Sendable {
    public enum Kind: String, Decodable, Hashable, Sendable {
      case long, short, longWithSingleDash
    }
    public var kind: Kind
    public var name: String

    /// As typed: `--socket`, `-h`.
    public var spelled: String { kind == .long ? "--\(name)" : "-\(name)" }
  }

  public var kind: Kind
  public var names: [Name]?
  public var preferredName: Name?
  public var valueName: String?
  public var isOptional: Bool
  public var isRepeating: Bool
  public var abstract: String?
  public var discussion: String?
  public var defaultValue: String?
  public var allValues: [String]?
  public var shouldDisplay: Bool?
  /// `postTerminator` for the words after `--` (`consume NAME -- COMMAND ...`).
  public var parsingStrategy: String?

  /// Whether the argument is the words after `--`.
  public var followsTerminator: Bool { parsingStrategy == "postTerminator" }

  /// What identifies the argument within its command: its preferred name, else its value name.
  public var identity: String { preferredName?.spelled ?? valueName ?? "" }

  /// Short names first, then long ones, as help lists them.
  public var spelledNames: [String] {
    let all = names ?? preferredName.map { [$0] } ?? []
    return (all.filter { $0.kind == .short } + all.filter { $0.kind != .short }).map(\.spelled)
  }
}
