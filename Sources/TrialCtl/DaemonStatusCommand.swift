import ArgumentParser
import TrialControl

/// `daemon-status`: GetStatus, and GetOutlook for the trials due within `--due-within`.
struct DaemonStatus: ParsableCommand, SessionCommand {
  static let configuration = CommandConfiguration(
    commandName: "daemon-status",
    abstract:
      "Show the daemon's version, uptime, trial counts, next event, trials due soon, events held back and "
      + "writes the store refuses.")

  @OptionGroup var global: GlobalOptions
  @Option(
    name: .customLong("due-within"),
    help: ArgumentHelp(
      "Count the trials with an event due within these spans from now, comma-separated (1 to 16).",
      valueName: "span[,span...]"))
  var dueWithin = "24h,7d"

  func validate() throws {
    _ = try outlook()
  }

  /// The spans of `--due-within`, checked as the daemon checks them.
  func outlook() throws -> GetOutlookParameters {
    let texts = Arguments.trimmingWhitespace(dueWithin).split(separator: ",").map {
      Arguments.trimmingWhitespace(String($0))
    }
    do {
      var spans: [GivenSpan] = []
      for text in texts { spans.append(try GivenSpan(parsing: text)) }
      let parameters = GetOutlookParameters(within: spans)
      try parameters.validate()
      return parameters
    } catch {
      throw ValidationError("--due-within: \(error.problem)")
    }
  }

  /// With `--json`, GetStatus's reply with GetOutlook's windows as `outlook`, one object.
  func run(_ session: Session) throws {
    let status = try session.quietly(Trials.getStatus, NoParameters())
    let outlook = try session.outlook(try outlook())
    if session.json {
      session.environment.output.write(
        line: WireCoding.text(StatusWithOutlook(status: status, outlook: outlook)))
    } else {
      session.presenter.present(status: status, outlook: outlook)
    }
  }
}

/// `daemon-status --json`: the status, and the trials due within each span (absent from a
/// daemon without GetOutlook).
struct StatusWithOutlook: Encodable {
  var status: GetStatusReply
  var outlook: [DueWithin]?

  private enum CodingKeys: String, CodingKey {
    case outlook
  }

  func encode(to encoder: any Encoder) throws {
    try status.encode(to: encoder)
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encodeIfPresent(outlook, forKey: .outlook)
  }
}

extension Session {
  /// The trials due within each span; nil from a daemon that has no GetOutlook (an older one).
  func outlook(_ parameters: GetOutlookParameters) throws -> [DueWithin]? {
    do {
      return try client.call(Trials.getOutlook, parameters).windows
    } catch  where error.remoteError?.name == ControlError.Name.methodNotFound {
      return nil
    } catch {
      throw CtlFailure(error)
    }
  }
}
