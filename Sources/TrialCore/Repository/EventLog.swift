import FoundationEssentials

/// The position of an event in the event log: a sequence number given when the event is
/// taken, one higher than the one before, never reused. Zero is the position before the
/// first event ever logged. Outside the daemon it travels as an opaque string of 16
/// hexadecimal digits, whose text order is its numeric order.
public struct EventCursor: Hashable, Comparable, Sendable, CustomStringConvertible {
  public var sequence: UInt64

  public init(_ sequence: UInt64) {
    self.sequence = sequence
  }

  /// The position before the first event.
  public static let origin = EventCursor(0)

  /// `0000000000000000`.
  public var description: String { SixteenHexDigits.text(sequence) }

  /// Parses exactly 16 hexadecimal digits.
  public init?(_ text: some StringProtocol) {
    guard let value = SixteenHexDigits.value(text, digits: 16...16) else { return nil }
    self.init(value)
  }

  public var next: EventCursor { EventCursor(sequence &+ 1) }

  public static func < (a: EventCursor, b: EventCursor) -> Bool { a.sequence < b.sequence }
}

/// One event of the log: a taken event (fired or skipped), its cursor, and the attributes of
/// its trial (subject, labels) when it was taken.
public struct LoggedEvent: Hashable, Sendable {
  public var cursor: EventCursor
  public var entry: LedgerEntry
  public var attributes: TrialAttributes

  public init(cursor: EventCursor, entry: LedgerEntry, attributes: TrialAttributes) {
    self.cursor = cursor
    self.entry = entry
    self.attributes = attributes
  }

  public init(cursor: EventCursor, entry: LedgerEntry, subject: String) {
    self.init(cursor: cursor, entry: entry, attributes: TrialAttributes(subject: subject))
  }

  public var subject: String { attributes.subject }
  public var labels: TrialLabels { attributes.labels }

  public var id: EventID { entry.id }
  public var event: TrialEvent { entry.event }
  public var fired: Bool { entry.fired }
  public var outcome: LedgerEntry.Outcome { entry.outcome }
  public var takenAt: Date { entry.takenAt }
  public var isLate: Bool { entry.isLate }
  public var lateness: Duration { entry.lateness }
  public var trialEnd: Date { entry.event.trialEnd }
}

/// Where the log stands: the cursor of the newest event, and how far it has been pruned.
public struct EventLogBounds: Hashable, Sendable {
  /// The newest event's cursor; `.origin` when nothing was ever logged.
  public var last: EventCursor
  /// Events up to this cursor have been pruned; `.origin` when none.
  public var prunedThrough: EventCursor
  /// Events kept.
  public var count: Int

  public init(last: EventCursor = .origin, prunedThrough: EventCursor = .origin, count: Int = 0) {
    self.last = last
    self.prunedThrough = prunedThrough
    self.count = count
  }

  /// The oldest event kept, when any is.
  public var first: EventCursor? { count > 0 ? prunedThrough.next : nil }
}

/// A named reader of the log whose position the daemon keeps: every event after
/// `acknowledged` is still to be handled by it.
public struct ConsumerRecord: Hashable, Sendable {
  public var name: String
  public var acknowledged: EventCursor
  public var createdAt: Date
  /// When it last acknowledged an event.
  public var acknowledgedAt: Date?
  /// Events pruned before it acknowledged them (the retention cap was reached), in all.
  public var lost: UInt64
  /// When it last lost events to the cap.
  public var lostAt: Date?

  public init(
    name: String, acknowledged: EventCursor, createdAt: Date, acknowledgedAt: Date? = nil, lost: UInt64 = 0,
    lostAt: Date? = nil
  ) {
    self.name = name
    self.acknowledged = acknowledged
    self.createdAt = createdAt
    self.acknowledgedAt = acknowledgedAt
    self.lost = lost
    self.lostAt = lostAt
  }

  /// Why `name` cannot name a consumer, or nil: 1 to 100 characters of ASCII letters,
  /// digits and `-_.@:`, starting with a letter or digit (it becomes a systemd instance name).
  public static func validateName(_ name: String) -> String? {
    guard !name.isEmpty else { return "must not be empty" }
    guard name.utf8.count <= 100 else { return "is longer than 100 characters" }
    let allowed = name.utf8.allSatisfy { byte in
      byte.isASCIILetterOrDigit || "-_.@:".utf8.contains(byte)
    }
    guard allowed else { return "may only contain letters, digits and -_.@:" }
    guard name.utf8.first!.isASCIILetterOrDigit else { return "must start with a letter or a digit" }
    return nil
  }
}

extension UInt8 {
  fileprivate var isASCIILetterOrDigit: Bool {
    (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self)
      || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self)
      || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self)
  }
}

/// How long the log keeps events.
public struct EventRetention: Hashable, Sendable {
  /// Events older than this (by when they were taken) are pruned once every consumer has
  /// acknowledged them.
  public var age: Duration
  /// Events older than this are pruned even when a consumer has not acknowledged them; the
  /// consumer's position then moves past them and its `lost` count grows. Nil: never.
  public var cap: Duration?

  public init(age: Duration = .seconds(90 * 86_400), cap: Duration? = .seconds(365 * 86_400)) {
    self.age = age
    self.cap = cap
  }
}
