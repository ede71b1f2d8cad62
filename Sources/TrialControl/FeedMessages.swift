import FoundationEssentials
import TrialCore

// The parameters and replies of the event log's methods in io.trialwatch.Trials: Watch with a
// cursor, the log's bounds, and durable consumers.

extension EventCursor: WireText {
  public static let wireName =
    "an event cursor (16 hexadecimal digits, then -GGGGGGGG after a restore or an import)"
}

public struct WatchParameters: VarlinkParameters, Hashable {
  /// Replay every event logged after this cursor, then continue live; nil: live only.
  public var after: EventCursor?

  public init(after: EventCursor? = nil) {
    self.after = after
  }
}

/// `io.trialwatch.Trials.EventLog`.
public struct EventLogObject: Codable, Hashable, Sendable {
  public var last: EventCursor
  public var oldest: EventCursor?
  /// Pass as `after` to read from the oldest event kept.
  public var start: EventCursor
  public var events: Int
  public var retention: Span
  public var maxRetention: Span?

  public init(_ bounds: EventLogBounds, retention: EventRetention) {
    last = bounds.last
    oldest = bounds.first
    start = bounds.prunedThrough
    events = bounds.count
    self.retention = Span(retention.age)
    maxRetention = retention.cap.map(Span.init)
  }
}

public struct GetEventLogReply: Codable, Hashable, Sendable {
  public var log: EventLogObject

  public init(log: EventLogObject) {
    self.log = log
  }
}

/// `io.trialwatch.Trials.Consumer`.
public struct ConsumerObject: Codable, Hashable, Sendable {
  public var name: String
  public var acknowledged: EventCursor
  public var acknowledgedAt: Date?
  public var createdAt: Date
  /// Events logged after its position.
  public var lag: Int
  public var lost: Int
  public var lostAt: Date?

  public init(_ record: ConsumerRecord, last: EventCursor) {
    name = record.name
    acknowledged = record.acknowledged
    acknowledgedAt = record.acknowledgedAt
    createdAt = record.createdAt
    lag = Int(clamping: last.sequence &- min(last.sequence, record.acknowledged.sequence))
    lost = Int(clamping: record.lost)
    lostAt = record.lostAt
  }
}

public struct ConsumerReply: Codable, Hashable, Sendable {
  public var consumer: ConsumerObject

  public init(consumer: ConsumerObject) {
    self.consumer = consumer
  }
}

public struct ListConsumersReply: Codable, Hashable, Sendable {
  public var consumers: [ConsumerObject]

  public init(consumers: [ConsumerObject]) {
    self.consumers = consumers
  }
}

/// The parameters of GetConsumer and RemoveConsumer.
public struct ConsumerNameParameters: VarlinkParameters, Hashable {
  public var name: String

  public init(name: String) {
    self.name = name
  }

  public func validate() throws(WireProblem) {
    if let problem = ConsumerRecord.validateName(name) { throw .parameter("name", problem) }
  }
}

public struct CreateConsumerParameters: VarlinkParameters, Hashable {
  public var name: String
  /// Its position: it handles every event after this cursor; nil: after the newest event.
  public var after: EventCursor?

  public init(name: String, after: EventCursor? = nil) {
    self.name = name
    self.after = after
  }

  public func validate() throws(WireProblem) {
    if let problem = ConsumerRecord.validateName(name) { throw .parameter("name", problem) }
  }
}

public struct AcknowledgeEventParameters: VarlinkParameters, Hashable {
  public var consumer: String
  public var cursor: EventCursor

  public init(consumer: String, cursor: EventCursor) {
    self.consumer = consumer
    self.cursor = cursor
  }

  public func validate() throws(WireProblem) {
    if let problem = ConsumerRecord.validateName(consumer) { throw .parameter("consumer", problem) }
  }
}

/// A reply with no fields.
public struct EmptyReply: Codable, Hashable, Sendable {
  public init() {}
}
