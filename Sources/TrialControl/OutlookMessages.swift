import FoundationEssentials
import TrialCore

/// A span as a caller gave it: its text, carried back as it came (`24h` stays `24h`, where
/// `Span` would write `1d`), and the span it reads as.
public struct GivenSpan: Codable, Hashable, Sendable, CustomStringConvertible {
  public var text: String
  public var duration: Duration

  /// Reads `text` in systemd's span syntax.
  public init(parsing text: String) throws(WireProblem) {
    do {
      duration = try TimeSpan.parse(text)
    } catch {
      throw WireProblem(path: [], problem: error.description)
    }
    self.text = text
  }

  public var description: String { text }

  public init(from decoder: any Decoder) throws {
    self = try decoder.decodeText { try GivenSpan(parsing: $0) }
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.singleValueContainer()
    try container.encode(text)
  }
}

public struct GetOutlookParameters: VarlinkParameters, Hashable {
  /// The most spans one call may ask for.
  public static let maximumSpans = 16
  /// The shortest span: the trials are counted in whole seconds.
  public static let shortestSpan = Duration.seconds(1)

  /// The spans from now, in the order the windows come back.
  public var within: [GivenSpan]

  public init(within: [GivenSpan]) {
    self.within = within
  }

  public func validate() throws(WireProblem) {
    guard (1...Self.maximumSpans).contains(within.count) else {
      throw .parameter("within", "give 1 to \(Self.maximumSpans) spans, got \(within.count)")
    }
    for (index, span) in within.enumerated() where span.duration < Self.shortestSpan {
      throw WireProblem(
        path: ["within", String(index)], problem: "must be at least 1s, got \"\(span.text)\"")
    }
  }
}

/// `io.trialwatch.Trials.DueWithin`: the open trials whose next pending event falls due within a
/// span from now.
public struct DueWithin: Codable, Hashable, Sendable {
  /// The span, as given.
  public var within: String
  public var trials: Int

  public init(within: String, trials: Int) {
    self.within = within
    self.trials = trials
  }
}

public struct GetOutlookReply: Codable, Hashable, Sendable {
  /// One for each span asked for, in their order.
  public var windows: [DueWithin]

  public init(windows: [DueWithin]) {
    self.windows = windows
  }
}
