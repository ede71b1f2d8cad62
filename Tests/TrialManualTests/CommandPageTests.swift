import ArgumentParser
import Foundation
import Testing
import TrialCtl
import TrialDaemon
import TrialHTTP
import TrialWebhookSender

@testable import TrialManual

/// trialwatchctl(1), trialwatchd(8), trialwatch-webhooks(8) and trialwatch-http(8) against the
/// command-line definitions they are made from.
@Suite struct CommandPageTests {
  static let standardSections = [
    "NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "FILES", "EXIT STATUS", "SEE ALSO",
  ]

  @Test(arguments: [
    ("trialwatchctl", 1), ("trialwatchd", 8), ("trialwatch-webhooks", 8), ("trialwatch-http", 8),
  ])
  func commandPage_Sections_AreTheStandardOnesWithTheVersion(name: String, section: Int) throws {
    let page = try Pages.page(name)
    #expect(page.section == section)
    #expect(page.fileName == "\(name).\(section)")
    let sections = Pages.sections(page.source)
    for title in Self.standardSections { #expect(sections[title] != nil, "\(name): \(title)") }
    #expect(
      page.source.contains(
        ".TH \(name.uppercased()) \(section) \(Pages.date) \"trialwatch \(Daemon.version)\""))
    #expect(Pages.text(sections["NAME"] ?? []).hasPrefix("\(name) - "))
    let seeAlso = Pages.text(sections["SEE ALSO"] ?? [])
    for other in ["trialwatchctl(1)", "trialwatch.conf(5)", "trialwatchd(8)"]
    where !other.hasPrefix(name + "(") {
      #expect(seeAlso.contains(other), "\(name) refers to \(other)")
    }
    #expect(seeAlso.contains("systemctl(1)"))
  }

  @Test func ctlPage_EveryCommandAndItsOptions_AreDescribed() throws {
    let info = try ToolInfo(dump: TrialwatchCtl._dumpHelp())
    let sections = Pages.sections(try Pages.page("trialwatchctl").source)
    let commands = Pages.items(sections["COMMANDS"] ?? [])
    let outer = Pages.outerItems(sections["COMMANDS"] ?? [])
    let synopsis = sections["SYNOPSIS"] ?? []
    // The members of a group (consumer) are described one by one, as `consumer create`.
    let subcommands = CommandPage.subcommands(of: info.command)
    #expect(subcommands.count == 36)
    #expect(
      subcommands.filter { $0.commandName.hasPrefix("consumer ") }.map(\.commandName) == [
        "consumer create", "consumer show", "consumer remove", "consumer ack",
      ])
    #expect(
      subcommands.filter { $0.commandName.hasPrefix("webhooks ") }.map(\.commandName) == [
        "webhooks list", "webhooks show", "webhooks attempts", "webhooks enable", "webhooks replay",
        "webhooks test", "webhooks secret",
      ])
    #expect(
      subcommands.filter { $0.commandName.hasPrefix("http ") }.map(\.commandName) == [
        "http token add", "http token list", "http token remove",
      ])
    #expect(outer.count == subcommands.count)
    for (item, subcommand) in zip(outer, subcommands) {
      #expect(item.tag.hasPrefix(subcommand.commandName), "\(item.tag) describes \(subcommand.commandName)")
    }
    for subcommand in subcommands {
      #expect(synopsis.contains(".B \(subcommand.commandName)"), "\(subcommand.commandName) in SYNOPSIS")
      for argument in subcommand.displayedArguments {
        let described = (commands + Pages.items(sections["OPTIONS"] ?? [])).contains { item in
          item.tag.split(separator: " ").contains {
            $0.trimmingCharacters(in: CharacterSet(charactersIn: ",")) == argument.identity
          }
            || (argument.kind == .positional && item.tag == argument.valueName)
        }
        #expect(described, "\(subcommand.commandName) \(argument.identity)")
      }
    }
    // Options every command takes are described once, under OPTIONS.
    let options = Pages.items(sections["OPTIONS"] ?? []).map(\.tag)
    #expect(options == ["--socket path", "--json", "-h, --help"])
    // http token needs no daemon: --socket says so.
    let socket = Pages.items(sections["OPTIONS"] ?? []).first?.body ?? []
    #expect(
      Pages.plain(socket.joined(separator: " ")).contains(
        "Not taken by http token add, http token list, http token remove."), "\(socket)")
  }

  @Test func ctlPage_ExitStatus_ListsEveryExitCode() throws {
    let sections = Pages.sections(try Pages.page("trialwatchctl").source)
    let tags = Pages.items(sections["EXIT STATUS"] ?? []).map(\.tag)
    #expect(tags == CtlExitCode.allCases.map { String($0.rawValue) })
    // Said once: not in DESCRIPTION too.
    #expect(!Pages.text(sections["DESCRIPTION"] ?? []).contains("EXIT STATUS"))
  }

  @Test func daemonPage_EveryOption_IsDescribed() throws {
    let info = try ToolInfo(dump: TrialwatchdCommand._dumpHelp())
    let sections = Pages.sections(try Pages.page("trialwatchd").source)
    let options = Pages.items(sections["OPTIONS"] ?? []).map(\.tag)
    let synopsis = sections["SYNOPSIS"] ?? []
    #expect(info.command.displayedArguments.contains { $0.identity == "--check-config" })
    for argument in info.command.displayedArguments {
      #expect(
        options.contains {
          $0.split(separator: " ").contains {
            $0.trimmingCharacters(in: CharacterSet(charactersIn: ",")) == argument.identity
          }
        }, "\(argument.identity)")
      if argument.kind == .positional {
        let value = argument.valueName ?? ""
        #expect(
          synopsis.contains { $0.hasPrefix(".RI [ \(value)") || $0.hasPrefix(".I \(value)") },
          "\(value) in SYNOPSIS")
      } else if argument.identity != "--help" {
        #expect(
          synopsis.contains { $0.hasPrefix(".OP \(argument.identity)") }, "\(argument.identity) in SYNOPSIS")
      }
    }
    #expect(sections["COMMANDS"] == nil)
    #expect(Pages.items(sections["EXIT STATUS"] ?? []).map(\.tag) == ["0", "1", "2", "3", "64"])
  }

  @Test func senderPage_EveryOption_IsDescribed() throws {
    let info = try ToolInfo(dump: WebhookSenderCommand._dumpHelp())
    let sections = Pages.sections(try Pages.page("trialwatch-webhooks").source)
    let options = Pages.items(sections["OPTIONS"] ?? []).map(\.tag)
    let identities = info.command.displayedArguments.map(\.identity)
    #expect(identities.contains("--workers") && identities.contains("--ca-file"))
    for identity in identities {
      #expect(
        options.contains {
          $0.split(separator: " ").contains {
            $0.trimmingCharacters(in: CharacterSet(charactersIn: ",")) == identity
          }
        }, "\(identity)")
    }
    #expect(Pages.items(sections["EXIT STATUS"] ?? []).map(\.tag) == ["0", "64"])
    #expect(Pages.text(sections["FILES"] ?? []).contains("trialwatch-webhooks.service"))
  }

  @Test func gatewayPage_EveryOptionAndExitStatus_AreDescribed() throws {
    let info = try ToolInfo(dump: GatewayCommand._dumpHelp())
    let sections = Pages.sections(try Pages.page("trialwatch-http").source)
    let options = Pages.items(sections["OPTIONS"] ?? []).map(\.tag)
    let identities = info.command.displayedArguments.map(\.identity)
    #expect(identities.contains("--listen") && identities.contains("--tokens"))
    for identity in identities {
      #expect(
        options.contains {
          $0.split(separator: " ").contains {
            $0.trimmingCharacters(in: CharacterSet(charactersIn: ",")) == identity
          }
        }, "\(identity)")
    }
    #expect(Pages.items(sections["EXIT STATUS"] ?? []).map(\.tag) == ["0", "64", "69", "78"])
    let files = Pages.text(sections["FILES"] ?? [])
    for file in ["/etc/trialwatch/http/tokens", "trialwatch-http.socket", "trialwatch-http.service"] {
      #expect(files.contains(file), "\(file) in FILES")
    }
    #expect(Pages.text(sections["SEE ALSO"] ?? []).contains("systemd.socket(5)"))
  }

  @Test func pages_EveryLine_IsWhatMandocAccepts() throws {
    let requests: Set<Substring> = [
      ".\\\"", ".TH", ".SH", ".SS", ".PP", ".IP", ".TP", ".RS", ".RE", ".EX", ".EE", ".SY", ".YS", ".OP",
      ".B",
      ".I", ".RI",
    ]
    for page in try Pages.all() {
      for (number, line) in page.source.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
      {
        let place = "\(page.fileName):\(number + 1)"
        // The title line takes its five arguments on one line: trialwatch-webhooks(8)'s needs 81.
        #expect(line.utf8.count <= 80 || line.hasPrefix(".TH "), "\(place): longer than 80 bytes")
        #expect(line.last != " " && line.last != "\t", "\(place): trailing white space")
        #expect(line.unicodeScalars.allSatisfy { $0.isASCII }, "\(place): not ASCII")
        if line.hasPrefix(".") || line.hasPrefix("'") {
          #expect(requests.contains(line.prefix { $0 != " " }), "\(place): \(line)")
        }
      }
      #expect(page.source.hasSuffix("\n") && !page.source.hasSuffix("\n\n"))
      #expect(!page.source.contains("\n\n"), "\(page.fileName): a blank line")
    }
  }
}
