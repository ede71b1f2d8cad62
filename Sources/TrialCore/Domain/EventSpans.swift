/// The spans a plan gives a trial's follow-ups (after its expiry) or milestones (after its
/// start), checked the same way for both: each at least a millisecond and at most 3,650 days,
/// rounded to whole milliseconds, at most 32, smallest first and without duplicates.
enum EventSpans {
  static let maximumCount = 32
  static let maximumSpan = Duration.days(3650)

  struct Invalid: Error {
    var description: String
  }

  /// `item` names one span in an error (`follow-up`), `after` what it counts from (`the end`).
  static func checked(_ spans: [Duration], item: String, after: String) throws(Invalid) -> [Duration] {
    var seen = Set<Duration>()
    var cleaned: [Duration] = []
    for span in spans {
      guard span >= .milliseconds(1) else {
        throw Invalid(description: "\(item) \(TimeSpan.format(span)) must be a positive span after \(after)")
      }
      guard span <= maximumSpan else {
        throw Invalid(
          description: "\(item) \(TimeSpan.format(span)) is longer than \(TimeSpan.format(maximumSpan))")
      }
      let rounded = Duration.milliseconds(span.roundedMilliseconds)
      if seen.insert(rounded).inserted { cleaned.append(rounded) }
    }
    guard cleaned.count <= maximumCount else {
      throw Invalid(description: "at most \(maximumCount) \(item)s per trial, got \(cleaned.count)")
    }
    return cleaned.sorted()
  }
}
