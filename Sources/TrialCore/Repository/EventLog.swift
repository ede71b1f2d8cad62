import FoundationEssentials

/// The position of an event in the event log: a sequence number given when the event is
/// taken, one higher than the one before, never reused, and the generation of the log it is a
/// position in. Zero is the position before the first event ever logged. A restore or an
/// import starts a new generation of the log (`LogGeneration`): a cursor handed out before it
/// may name another event after it, so a cursor of another generation is refused rather than
/// read. Outside the daemon it travels as an opaque string: 16 hexadecimal digits (generation
/// 0, the log of a store never restored or imported into), or 16 digits, `-` and the
/// generation in 8 digits. Within one generation, text order is numeric order.
public struct EventCursor: Hashable, Comparable, Sendable, CustomStringConvertible {
  public var sequence: UInt64
  /// The generation of the log (`LogGeneration.number`); 0 before the first restore or import.
  public var generation: UInt32

  public init(_ sequence: UInt64, generation: UInt32 = 0) {
    self.sequence = sequence
    self.generation = generation
  }

  /// The position before the first event.
  public static let origin = EventCursor(0)

  /// `0000000000000000`, or `0000000000000000-00000002` in generation 2.
  public var description: String {
    let text = SixteenHexDigits.text(sequence)
    guard generation != 0 else { return text }
    return text + "-" + zeroPadded(UInt64(generation), width: 8, radix: 16)
  }

  /// Parses exactly 16 hexadecimal digits, optionally followed by `-` and 8 hexadecimal
  /// digits of a generation other than 0.
  public init?(_ text: some StringProtocol) {
    let utf8 = text.utf8
    if utf8.count == 16 {
      guard let value = SixteenHexDigits.value(text, digits: 16...16) else { return nil }
      self.init(value)
      return
    }
    guard utf8.count == 25, utf8[utf8.index(utf8.startIndex, offsetBy: 16)] == UInt8(ascii: "-") else {
      return nil
    }
    let split = text.index(text.startIndex, offsetBy: 16)
    guard let value = SixteenHexDigits.value(text[..<split], digits: 16...16),
      let generation = SixteenHexDigits.value(text[text.index(after: split)...], digits: 8...8),
      generation != 0
    else { return nil }
    self.init(value, generation: UInt32(generation))
  }

  /// The next position, in the same generation.
  public var next: EventCursor { EventCursor(sequence &+ 1, generation: generation) }

  /// The same position in another generation.
  public func of(generation: UInt32) -> EventCursor { EventCursor(sequence, generation: generation) }

  /// By position; cursors of one generation are compared (a cursor of another is refused
  /// before it is compared with anything).
  public static func < (a: EventCursor, b: EventCursor) -> Bool { a.sequence < b.sequence }
}

/// Which log the cursors of a store are positions in. A store's log starts in generation 0;
/// `trialwatchd --restore` and `--import` start a new one, recorded with the store, so that a
/// cursor handed out by the log before is told apart from one of the log after.
public struct LogGeneration: Hashable, Sendable {
  /// 0 for a log never restored or imported into.
  public var number: UInt32
  /// The newest event the log held when this generation began: events after it were taken in
  /// this generation.
  public var began: UInt64
  /// After a restore, the generation of the backup: its log up to `began` is this log's, so a
  /// cursor of it at or before `began` names the same event here. Nil after an import.
  public var parent: UInt32?

  public init(number: UInt32 = 0, began: UInt64 = 0, parent: UInt32? = nil) {
    self.number = number
    self.began = began
    self.parent = parent
  }

  /// The first generation.
  public static let initial = LogGeneration()

  /// Where a reader holding `cursor`, of another generation, resumes in this one: at its own
  /// position when that names the same event here, else after the newest event the log held
  /// when this generation began. Events up to `began` it may not have seen are read from the
  /// log's start; repeats are told by their event ids.
  public func resumePoint(for cursor: EventCursor) -> EventCursor {
    if let parent, parent == cursor.generation, cursor.sequence <= began {
      return cursor.of(generation: number)
    }
    return EventCursor(began, generation: number)
  }

  /// The generation after this one and `other` (the replaced store's, say): a number neither has
  /// had, beginning at `began`.
  public func successor(began: UInt64, parent: UInt32?, other: LogGeneration? = nil) -> LogGeneration {
    let highest = max(number, other?.number ?? 0)
    return LogGeneration(number: highest &+ 1 == 0 ? 1 : highest &+ 1, began: began, parent: parent)
  }

  /// `3 began 0000000000000102 from 2`: the text of the store's record.
  public var record: String {
    "\(number) began \(SixteenHexDigits.text(began))" + (parent.map { " from \($0)" } ?? "")
  }

  /// Parses `record`.
  public init?(record: String) {
    let words = record.split(separator: " ", omittingEmptySubsequences: false)
    guard words.count == 3 || words.count == 5, words[1] == "began", let number = UInt32(words[0]),
      let began = SixteenHexDigits.value(words[2], digits: 16...16)
    else { return nil }
    var parent: UInt32?
    if words.count == 5 {
      guard words[3] == "from", let value = UInt32(words[4]) else { return nil }
      parent = value
    }
    self.init(number: number, began: began, parent: parent)
  }
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
  /// The log's generation: `last` and `prunedThrough` are of it.
  public var generation: LogGeneration

  public init(
    last: EventCursor = .origin, prunedThrough: EventCursor = .origin, count: Int = 0,
    generation: LogGeneration = .initial
  ) {
    self.last = last.of(generation: generation.number)
    self.prunedThrough = prunedThrough.of(generation: generation.number)
    self.count = count
    self.generation = generation
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
