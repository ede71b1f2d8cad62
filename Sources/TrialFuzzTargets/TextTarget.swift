import FoundationEssentials
import TrialControl
import TrialCore
import TrialTesting

/// The text forms the daemon reads from its callers, its configuration and export files. The
/// first byte picks the form, the rest is the text. What must hold:
///
/// - RFC 3339 times (`RFC3339`): a time read is written in the canonical form, which reads back
///   as the same instant and is written the same again (`parse(format(parse(t))) == parse(t)`);
/// - spans (`TimeSpan`): a span read is written, in every style, and its exact form reads back
///   within the millisecond the form keeps, then stays the same; a transfer's `PreciseSpan`
///   reads back exactly;
/// - the values carried as text (`WireText`: trial ids, event ids, event cursors, Export's cursor
///   of uses, calendar days; Simulate's target; a transfer's `PreciseTime`): a value read is
///   written, and that text reads back as the same value and is written the same again;
/// - an export file, as `trialwatchd --import` reads it: each line is a record or a
///   `WireProblem`; a record written again as a line is read back, the same record, whose line
///   is written the same again; the whole file then passes the import's checks, and an
///   empty store takes it, or fails with a `TrialTransfer.Problem` naming one of its lines.
///
/// A transfer's times are exact to the microsecond within a century of 2001, where a `Date`
/// resolves microseconds; beyond, they need only read back within the `Date`'s resolution.
///
/// Errors are the forms' own (typed throws, or nil); anything else is a crash.
enum TextTarget {
  /// The forms, in the order of the first byte's value (modulo their count).
  static let forms: [(name: String, check: @Sendable (String) throws(FuzzFailure) -> Void)] = [
    ("rfc3339", rfc3339), ("span", span),
    ("trial-id", { text throws(FuzzFailure) in try wireText(TrialID.self, text) }),
    ("event-id", { text throws(FuzzFailure) in try wireText(EventID.self, text) }),
    ("cursor", { text throws(FuzzFailure) in try wireText(EventCursor.self, text) }),
    ("use-position", { text throws(FuzzFailure) in try wireText(SubjectUse.Position.self, text) }),
    ("calendar-day", { text throws(FuzzFailure) in try wireText(CalendarDay.self, text) }),
    ("simulate-target", simulateTarget), ("precise-time", preciseTime), ("export", exportFile),
  ]

  static func run(_ input: UnsafeRawBufferPointer) throws(FuzzFailure) {
    guard let selector = input.first else { return }
    let form = forms[Int(selector) % forms.count]
    try form.check(UnsafeRawBufferPointer(rebasing: input.dropFirst()).text)
  }

  static func rfc3339(_ text: String) throws(FuzzFailure) {
    guard let date = try? RFC3339.parse(text) else { return }
    let written = RFC3339.format(date)
    let again = try readBack("RFC 3339", text, written) { try RFC3339.parse($0) }
    try require(again == date, "RFC 3339: \"\(text)\" reads as \(date), its form \"\(written)\" as \(again)")
    try require(
      RFC3339.format(again) == written, "RFC 3339: \"\(written)\" is written otherwise the second time")
  }

  static func span(_ text: String) throws(FuzzFailure) {
    guard let span = try? TimeSpan.parse(text) else { return }
    try require(span >= .zero, "span: \"\(text)\" reads as a negative span \(span)")
    for style in TimeSpan.Style.allCases { _ = TimeSpan.format(span, style: style) }
    let written = TimeSpan.format(span)
    let again = try readBack("span", text, written) { try TimeSpan.parse($0) }
    try require(
      (again - span).roundedMicroseconds.magnitude < 1000,
      "span: \"\(text)\" reads as \(span), its form \"\(written)\" as \(again): more than a millisecond apart"
    )
    try require(
      TimeSpan.format(again) == written, "span: \"\(written)\" is written otherwise the second time")
    // A transfer's lateness and grace: exact to the microsecond.
    let precise = PreciseSpan(span)
    let read = try? TimeSpan.parse(precise.description)
    try require(
      read == precise.duration,
      "span: the transfer form \"\(precise.description)\" of \(span) reads as \(String(describing: read))")
  }

  /// The value `written`, the form of a value read from `text`, reads as; or the failure saying
  /// that the form is refused (`what`: the kind of text).
  static func readBack<T>(_ what: String, _ text: String, _ written: String, _ read: (String) throws -> T)
    throws(FuzzFailure) -> T
  {
    do {
      return try read(written)
    } catch {
      throw FuzzFailure("\(what): \"\(text)\" was read, but its form \"\(written)\" is refused: \(error)")
    }
  }

  static func wireText<T: WireText & Hashable>(_ type: T.Type, _ text: String) throws(FuzzFailure) {
    guard let value = T(text) else { return }
    let written = value.description
    guard let again = T(written) else {
      throw FuzzFailure("\(T.wireName): \"\(text)\" was read, but its form \"\(written)\" is refused")
    }
    try require(
      again == value, "\(T.wireName): \"\(text)\" and its form \"\(written)\" read as different values")
    try require(
      again.description == written, "\(T.wireName): \"\(written)\" is written otherwise the second time")
  }

  static func simulateTarget(_ text: String) throws(FuzzFailure) {
    guard let target = try? SimulateParameters.Target(parsing: text) else { return }
    let written = target.text
    guard let again = try? SimulateParameters.Target(parsing: written) else {
      throw FuzzFailure("Simulate: \"\(text)\" was read, but its form \"\(written)\" is refused")
    }
    try require(
      again == target, "Simulate: \"\(text)\" and its form \"\(written)\" read as different targets")
    try require(again.text == written, "Simulate: \"\(written)\" is written otherwise the second time")
  }

  /// A transfer's time: exact to the microsecond within a century of 2001; beyond, a `Date`
  /// holds it only to its resolution (some 30 µs in the year 9999), within which it must read back.
  static func preciseTime(_ text: String) throws(FuzzFailure) {
    guard let time = try? PreciseTime(parsing: text) else { return }
    let written = time.description
    guard let again = try? PreciseTime(parsing: written) else {
      throw FuzzFailure("transfer time: \"\(text)\" was read, but its form \"\(written)\" is refused")
    }
    let seconds = time.date.timeIntervalSinceReferenceDate
    guard seconds.magnitude < century else {
      try require(
        (again.date.timeIntervalSinceReferenceDate - seconds).magnitude <= max(1e-6, 2 * seconds.ulp),
        "transfer time: \"\(text)\" and its form \"\(written)\" read further apart than a Date resolves")
      return
    }
    try require(
      again == time, "transfer time: \"\(text)\" and its form \"\(written)\" read as different times")
    try require(
      again.description == written, "transfer time: \"\(written)\" is written otherwise the second time")
  }

  /// The input as an export file, read line by line as `trialwatchd --import` reads it.
  static func exportFile(_ text: String) throws(FuzzFailure) {
    var lines: [TrialTransfer.Line] = []
    var number = 0
    for line in text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
      number += 1
      if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
      guard let record = try? ExportRecord.read(line: line) else { continue }
      try exportRoundTrip(record, line: String(decoding: line, as: UTF8.self))
      lines.append(TrialTransfer.Line(number, record))
    }
    let records = { (each: (TrialTransfer.Line) throws -> Void) throws in
      for line in lines { try each(line) }
    }
    do {
      try TrialTransfer.validate(records)
    } catch let problem as TrialTransfer.Problem {
      try require(
        lines.contains { $0.number == problem.line },
        "export: the import's check blames line \(problem.line), which holds no record: \(problem)")
      return
    } catch {
      throw FuzzFailure("export: the import's check threw \(type(of: error)): \(error)")
    }
    // What the import's check passes, an empty store takes.
    do {
      _ = try TrialTransfer.run(records, into: InMemoryTrialRepository())
    } catch {
      throw FuzzFailure("export: the file passes the import's check, but an empty store refuses it: \(error)")
    }
  }

  /// A record read from `line`, written again as a line, reads back the same, and that line is
  /// written the same again.
  static let century = 100 * 365.25 * 86_400

  /// Every time a record holds.
  static func dates(of record: TrialTransfer.Record) -> [Date] {
    switch record {
    case .trial(let trial):
      [trial.period.startDate, trial.period.endDate]
        + [trial.endedAt, trial.pause?.since, trial.pause?.until]
        .compactMap { $0 }
    case .entry(let entry): [entry.event.due, entry.takenAt] + [entry.deliveredAt].compactMap { $0 }
    case .use(let use): [use.firstStartedAt]
    }
  }

  static func exportRoundTrip(_ record: TrialTransfer.Record, line: String) throws(FuzzFailure) {
    let written: ExportRecord
    switch record {
    case .trial(let trial): written = ExportRecord(trial)
    case .entry(let entry): written = ExportRecord(entry)
    case .use(let use): written = ExportRecord(use)
    }
    let text = written.jsonLine
    let again: TrialTransfer.Record
    do {
      again = try ExportRecord.read(line: text.utf8)
    } catch {
      throw FuzzFailure(
        "export: the line \(line) was read, but written again as \(text) it is refused: \(error)")
    }
    // Exact to the microsecond within a century of 2001; beyond, to a `Date`'s resolution.
    guard dates(of: record).allSatisfy({ $0.timeIntervalSinceReferenceDate.magnitude < century }) else {
      return
    }
    try require(again == record, "export: the line \(line) and its form \(text) read as different records")
    let second: ExportRecord
    switch again {
    case .trial(let trial): second = ExportRecord(trial)
    case .entry(let entry): second = ExportRecord(entry)
    case .use(let use): second = ExportRecord(use)
    }
    try require(second.jsonLine == text, "export: \(text) is written otherwise the second time")
  }
}
