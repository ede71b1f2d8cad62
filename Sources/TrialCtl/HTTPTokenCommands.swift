import ArgumentParser
import FoundationEssentials
import TrialConfiguration
import TrialControl
import TrialCore

// The HTTP gateway's access tokens: http token add, list and remove. They work on the token file
// alone: the daemon is not asked, and need not run.

struct Http: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "http",
    abstract: "The HTTP gateway, trialwatch-http: add, list or remove its access tokens.",
    subcommands: [HttpToken.self])
}

struct HttpToken: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "token",
    abstract: "Add, list or remove the HTTP gateway's access tokens.",
    discussion: """
      The tokens are the lines of the gateway's token file, \(HTTPTokenFile.defaultPath) (--tokens \
      names another): NAME SCOPE sha256:HEX, the SHA-256 of each token's secret, never the secret \
      itself. The gateway reads the file again when it changes: a token added or removed takes effect \
      at its next request. These commands change the file alone and do not need the daemon.

      Example: sudo trialwatchctl http token add billing-app --scope change
      """,
    subcommands: [HttpTokenAdd.self, HttpTokenList.self, HttpTokenRemove.self],
    defaultSubcommand: HttpTokenList.self)
}

/// The options of every `http token` command.
struct TokenFileOptions: ParsableArguments {
  @Option(
    name: .long, help: ArgumentHelp("The gateway's token file.", valueName: "path"), completion: .file())
  var tokens = HTTPTokenFile.defaultPath

  @Flag(name: .long, help: "Print the result as one JSON object.")
  var json = false

  func validate() throws {
    if tokens.isEmpty { throw ValidationError("--tokens: the path is empty") }
  }
}

/// The token NAME argument.
struct TokenName: ParsableArguments {
  @Argument(
    help: ArgumentHelp(
      "The token's name, which the journal gives for each change it makes: 1 to 64 of A-Z, a-z, 0-9, "
        + "'.', '_' and '-'.", valueName: "name"))
  var name: String

  func validate() throws {
    if let problem = HTTPTokenFile.nameProblem(name) { throw ValidationError("NAME: \(problem)") }
  }
}

struct HttpTokenAdd: ParsableCommand, CtlCommand {
  static let configuration = CommandConfiguration(
    commandName: "add",
    abstract: "Add an access token to the HTTP gateway's token file and print its secret, once.",
    discussion: """
      Makes a new secret, twh_ and the base64url of 32 random bytes from the system's random source \
      through OpenSSL's libcrypto, and adds the line NAME SCOPE sha256:HEX to the token file, HEX being \
      the SHA-256 of the secret. Prints the secret on standard output, and nothing else there, so that \
      it can be piped to where the client keeps it; it is shown this once, as the file keeps only its \
      hash. The client sends it with each request: Authorization: Bearer SECRET. A read token may call \
      only the methods that change nothing; a change token, any.

      The file is replaced whole, keeping its owner, group and mode and its other lines: the new \
      content is written to a temporary file in the same directory, flushed to the disk, then renamed \
      over it. A file that does not exist is created, mode 0640, group trialwatch-http when that group \
      exists, and its directory too (mode 0755) when that is missing. A name the file holds already is \
      refused, and a file that cannot be read as tokens is left as it is, the error naming it and its \
      line. Needs the right to write the file's directory (root, usually). With --json, prints {"name", \
      "scope", "secret", "tokens" (how many the file holds now)}.

      Example: trialwatchctl http token add shop --scope change | ssh shop 'cat > tw.token'
      """)

  @OptionGroup var token: TokenName
  @Option(
    help: ArgumentHelp(
      "What the token may do: read (calls that change nothing) or change (any call).", valueName: "scope"),
    completion: .list(HTTPTokenFile.Scope.allCases.map(\.rawValue)))
  var scope: String
  @OptionGroup var file: TokenFileOptions

  /// `--scope`, read.
  var tokenScope: HTTPTokenFile.Scope { HTTPTokenFile.Scope(rawValue: scope) ?? .read }

  func validate() throws {
    if HTTPTokenFile.Scope(rawValue: scope) == nil {
      throw ValidationError("--scope: \"\(scope)\" is not one of: read, change")
    }
  }

  func run(in environment: CtlEnvironment) throws {
    let name = token.name
    let found = try HTTPTokenFileWriter.find(file.tokens)
    if found.token(named: name) != nil {
      throw CtlFailure(
        "\(found.path) has a token named \"\(name)\" already: choose another name, or remove it first "
          + "(trialwatchctl http token remove \(name))", exitCode: .failure)
    }
    let (secret, new) = try HTTPTokenFileWriter.newSecret(name: name, scope: tokenScope)
    let created = try HTTPTokenFileWriter.write(HTTPTokenFileWriter.adding(new, to: found), over: found)
    if file.json {
      environment.output.write(
        line: WireCoding.text(
          HTTPTokenAddReply(name: name, scope: scope, secret: secret, tokens: found.tokens.count + 1)))
    } else {
      environment.output.write(line: secret)
    }
    var written = found.path
    if let (ownership, group) = created {
      written +=
        " (a new file, mode \(String(ownership.mode, radix: 8))\(group.map { ", group \($0)" } ?? ""))"
    }
    environment.errors.write(
      line: "Added token \(name) (scope \(scope)) to \(written). Its secret is shown this once: the file "
        + "keeps only its SHA-256. A client sends it with each request, as the header "
        + "Authorization: Bearer SECRET")
  }
}

struct HttpTokenList: ParsableCommand, CtlCommand {
  static let configuration = CommandConfiguration(
    commandName: "list",
    abstract: "List the HTTP gateway's access tokens: NAME and SCOPE.",
    discussion: """
      What trialwatchctl http token alone does. Reads the token file (never printing a hash): NAME, \
      what the journal gives for each change the token makes, and SCOPE, read (calls that change \
      nothing) or change (any call). With --json, prints {"tokens": [{"name", "scope"}, ...]}.

      Example: sudo trialwatchctl http token list
      """)

  @OptionGroup var file: TokenFileOptions

  func run(in environment: CtlEnvironment) throws {
    let found = try HTTPTokenFileWriter.find(file.tokens)
    if file.json {
      let tokens = found.tokens.map { HTTPTokenEntry(name: $0.name, scope: $0.scope.rawValue) }
      environment.output.write(line: WireCoding.text(HTTPTokenListReply(tokens: tokens)))
      return
    }
    let view = TerminalView(output: environment.output, notices: environment.errors)
    view.showList(
      ListViewModel(
        table: TableViewModel(
          columns: ["NAME", "SCOPE"], rows: found.tokens.map { [$0.name, $0.scope.rawValue] }),
        emptyMessage: found.existing == nil
          ? "No tokens: \(found.path) does not exist." : "No tokens in \(found.path)."))
  }
}

struct HttpTokenRemove: ParsableCommand, CtlCommand {
  static let configuration = CommandConfiguration(
    commandName: "remove",
    abstract: "Remove an access token from the HTTP gateway's token file.",
    discussion: """
      Takes the token's line out of the token file, which is replaced whole as by add, its other \
      lines, owner, group and mode kept. The gateway refuses the token's secret from its next request. \
      A name the file does not hold is an error (exit status 3). With --json, prints {"name", "scope", \
      "tokens" (how many the file holds now)}.

      Example: sudo trialwatchctl http token remove billing-app
      """)

  @OptionGroup var token: TokenName
  @OptionGroup var file: TokenFileOptions

  func run(in environment: CtlEnvironment) throws {
    let name = token.name
    let found = try HTTPTokenFileWriter.find(file.tokens)
    guard let removed = found.token(named: name) else {
      throw CtlFailure(
        "\(found.path) has no token named \"\(name)\"; the tokens: trialwatchctl http token list",
        exitCode: .notFound)
    }
    try HTTPTokenFileWriter.write(HTTPTokenFileWriter.removing(name, from: found), over: found)
    if file.json {
      environment.output.write(
        line: WireCoding.text(
          HTTPTokenRemoveReply(name: name, scope: removed.scope.rawValue, tokens: found.tokens.count - 1)))
    }
    environment.errors.write(
      line: "Removed token \(name) from \(found.path): the gateway refuses its secret from its next request.")
  }
}

/// `http token add --json`: the token, its secret, and how many tokens the file holds now.
struct HTTPTokenAddReply: Codable, Hashable, Sendable {
  var name: String
  var scope: String
  var secret: String
  var tokens: Int
}

/// `http token list --json`.
struct HTTPTokenListReply: Codable, Hashable, Sendable {
  var tokens: [HTTPTokenEntry]
}

/// A token as `http token list --json` shows it: no hash.
struct HTTPTokenEntry: Codable, Hashable, Sendable {
  var name: String
  var scope: String
}

/// `http token remove --json`: the token removed, and how many the file holds now.
struct HTTPTokenRemoveReply: Codable, Hashable, Sendable {
  var name: String
  var scope: String
  var tokens: Int
}
