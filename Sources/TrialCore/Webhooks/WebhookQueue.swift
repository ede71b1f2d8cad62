import FoundationEssentials
import HeapModule

/// One endpoint's events on their way, in memory: the events after its position that it wants
/// and has not settled, each on its own schedule, and which may go now. The position (what the
/// store keeps as the endpoint's consumer) moves over every event settled in a row: delivered,
/// or not wanted by the endpoint. An event that fails waits for its next attempt without holding
/// back any other (with `Ordering=subject`, only the later events of its subject).
///
/// It decides; it does not write. Each change it makes that must outlive a restart comes back
/// as a `WebhookQueue.Change` for the caller to commit: an event's record (attempts made, the
/// next one's time, or delivered ahead of the position), and the position moved.
public struct WebhookQueue: Sendable {
  /// An event the queue holds: wanted by the endpoint and not settled yet.
  public struct Item: Hashable, Sendable {
    public var cursor: EventCursor
    /// Its subject, for `Ordering=subject`.
    public var subject: String
    /// Attempts made so far, each failed.
    public var attempts: Int
    /// When it may go next.
    public var dueAt: Date
    /// Handed out for an attempt whose outcome has not come back.
    public var inFlight = false
  }

  /// What must be written for a change of the queue to survive a restart.
  public struct Change: Hashable, Sendable {
    /// Events' records to put (a failure's next attempt, a delivery ahead of the position).
    public var put: [WebhookPendingEvent] = []
    /// The position moved here: the endpoint's consumer moves, its records through it go.
    public var position: EventCursor?

    public init() {}

    public var isEmpty: Bool { put.isEmpty && position == nil }

    /// This change, then `later`.
    public mutating func merge(_ later: Change) {
      put.append(contentsOf: later.put)
      if let position = later.position { self.position = position }
    }
  }

  public let endpoint: String
  public let ordering: WebhookEndpoint.Ordering
  /// How many unsettled events it holds at most: beyond, it reads no further until some settle.
  public let limit: Int
  /// Every event up to here is settled.
  public private(set) var position: EventCursor
  /// The last event of the log it has taken in.
  public private(set) var readThrough: EventCursor
  /// The unsettled events, by sequence.
  public private(set) var items: [UInt64: Item] = [:]
  /// What the store remembered of events not read yet: consumed as they are read.
  private var remembered: [UInt64: WebhookPendingEvent]
  /// Events waiting for their turn, by when; an entry whose item has changed since is passed over.
  private var due = Heap<Waiting>()
  /// The unsettled sequences, smallest first; settled ones are dropped when met.
  private var unsettled = Heap<UInt64>()
  /// With `Ordering=subject`: each subject's unsettled events, in log order; only the first may go.
  private var bySubject: [String: [UInt64]] = [:]

  private struct Waiting: Comparable, Sendable {
    var at: Date
    var sequence: UInt64
    static func < (a: Waiting, b: Waiting) -> Bool { (a.at, a.sequence) < (b.at, b.sequence) }
  }

  /// A queue at `position`, with the records the store keeps of events after it.
  public init(
    endpoint: String, position: EventCursor, remembered: [WebhookPendingEvent],
    ordering: WebhookEndpoint.Ordering = .none, limit: Int = 10_000
  ) {
    self.endpoint = endpoint
    self.ordering = ordering
    self.limit = max(limit, 1)
    self.position = position
    readThrough = position
    self.remembered = Dictionary(
      remembered.filter { $0.cursor > position }.map { ($0.cursor.sequence, $0) }, uniquingKeysWith: { $1 })
  }

  /// Whether it takes more events: it holds fewer than `limit`.
  public var wantsMore: Bool { items.count < limit }

  /// How many events it holds, unsettled, and how many of them are out for an attempt.
  public var backlog: Int { items.count }
  public private(set) var inFlight = 0

  /// The oldest unsettled event's cursor.
  public var oldest: EventCursor? { firstUnsettled.map { EventCursor($0, generation: position.generation) } }

  /// Takes in the next event of the log (after `readThrough`): one the endpoint wants becomes an
  /// item, due at once (or as the store remembered it); any other is settled as it passes.
  public mutating func read(cursor: EventCursor, subject: String, wanted: Bool, now: Date) -> Change {
    precondition(cursor > readThrough, "the log is read in order")
    readThrough = cursor
    let record = remembered.removeValue(forKey: cursor.sequence)
    guard wanted, record?.delivered != true else { return advance() }
    let item = Item(
      cursor: cursor, subject: subject, attempts: record?.attempts ?? 0, dueAt: record?.nextAttemptAt ?? now)
    items[cursor.sequence] = item
    unsettled.insert(cursor.sequence)
    if ordering == .subject {
      bySubject[subject, default: []].append(cursor.sequence)
      if bySubject[subject]!.count == 1 { due.insert(Waiting(at: item.dueAt, sequence: cursor.sequence)) }
    } else {
      due.insert(Waiting(at: item.dueAt, sequence: cursor.sequence))
    }
    return Change()
  }

  /// When the next event may go; nil when none waits (all out, or none held).
  public mutating func nextDue() -> Date? {
    dropStale()
    return due.min?.at
  }

  /// Up to `limit` events due by `now`, in the order they came due, now out for an attempt.
  public mutating func takeDue(now: Date, limit: Int) -> [Item] {
    var taken: [Item] = []
    while taken.count < limit {
      dropStale()
      guard let next = due.min, next.at <= now else { break }
      due.removeMin()
      items[next.sequence]!.inFlight = true
      inFlight += 1
      taken.append(items[next.sequence]!)
    }
    return taken
  }

  /// The attempt of `cursor` delivered: settled; the position moves when every event before it
  /// is settled too, else the delivery is remembered ahead of it.
  public mutating func delivered(_ cursor: EventCursor) -> Change {
    guard let item = items.removeValue(forKey: cursor.sequence) else { return Change() }
    if item.inFlight { inFlight -= 1 }
    releaseSubject(of: item)
    var change = advance()
    if cursor > position {
      change.put.append(
        WebhookPendingEvent(
          endpoint: endpoint, cursor: cursor, attempts: item.attempts + 1, nextAttemptAt: nil))
    }
    return change
  }

  /// The attempt of `cursor` failed: it waits until `retryAt`, remembered so.
  public mutating func failed(_ cursor: EventCursor, retryAt: Date) -> Change {
    guard var item = items[cursor.sequence] else { return Change() }
    if item.inFlight { inFlight -= 1 }
    item.attempts += 1
    item.dueAt = retryAt
    item.inFlight = false
    items[cursor.sequence] = item
    if ordering != .subject || bySubject[item.subject]?.first == cursor.sequence {
      due.insert(Waiting(at: retryAt, sequence: cursor.sequence))
    }
    var change = Change()
    change.put.append(
      WebhookPendingEvent(endpoint: endpoint, cursor: cursor, attempts: item.attempts, nextAttemptAt: retryAt)
    )
    return change
  }

  /// An attempt of `cursor` whose outcome will not come (the sender went away): it may go
  /// again at once, as the same attempt.
  public mutating func returned(_ cursor: EventCursor, now: Date) {
    guard var item = items[cursor.sequence], item.inFlight else { return }
    item.inFlight = false
    inFlight -= 1
    item.dueAt = min(item.dueAt, now)
    items[cursor.sequence] = item
    due.insert(Waiting(at: item.dueAt, sequence: cursor.sequence))
  }

  /// Every attempt out returned (`returned`).
  public mutating func returnAll(now: Date) {
    for sequence in items.keys.sorted() where items[sequence]!.inFlight {
      returned(EventCursor(sequence, generation: position.generation), now: now)
    }
  }

  /// Every event that waits for a later attempt due at `now` instead (its endpoint enabled
  /// again), remembered so.
  public mutating func dueAll(now: Date) -> Change {
    var change = Change()
    for sequence in items.keys.sorted() {
      guard var item = items[sequence], !item.inFlight, item.dueAt > now else { continue }
      item.dueAt = now
      items[sequence] = item
      if ordering != .subject || bySubject[item.subject]?.first == sequence {
        due.insert(Waiting(at: now, sequence: sequence))
      }
      change.put.append(
        WebhookPendingEvent(
          endpoint: endpoint, cursor: item.cursor, attempts: item.attempts, nextAttemptAt: now))
    }
    return change
  }

  /// The attempts of `cursor` made so far, if it is held.
  public func attempts(of cursor: EventCursor) -> Int? { items[cursor.sequence]?.attempts }

  private var firstUnsettled: UInt64? {
    var heap = unsettled
    while let first = heap.min, items[first] == nil { heap.removeMin() }
    return heap.min
  }

  /// Moves the position over the settled events in a row after it.
  private mutating func advance() -> Change {
    while let first = unsettled.min, items[first] == nil { unsettled.removeMin() }
    let through =
      unsettled.min.map { EventCursor($0 - 1, generation: position.generation) } ?? readThrough
    var change = Change()
    if through > position {
      position = through
      change.position = through
    }
    return change
  }

  private mutating func releaseSubject(of item: Item) {
    guard ordering == .subject, var queue = bySubject[item.subject] else { return }
    queue.removeAll { $0 == item.cursor.sequence }
    if let next = queue.first, let nextItem = items[next] {
      due.insert(Waiting(at: nextItem.dueAt, sequence: next))
    }
    bySubject[item.subject] = queue.isEmpty ? nil : queue
  }

  /// Drops waiting entries whose item settled, went out or was given another time.
  private mutating func dropStale() {
    while let first = due.min {
      if let item = items[first.sequence], !item.inFlight, item.dueAt == first.at { return }
      due.removeMin()
    }
  }
}
