import FoundationEssentials

// Spans other than a trial's length (reminder offsets, the catch-up grace and threshold,
// lateness, timeouts, uptime) are the standard library's `Duration`. Foundation's dates
// count in `TimeInterval` seconds; these conversions are the one place the two meet.

extension Duration {
  /// A span of whole days of 86,400 seconds (as systemd's `d`).
  public static func days(_ days: some BinaryInteger) -> Duration {
    .seconds(Int64(days) * 86_400)
  }

  /// A span of whole hours.
  public static func hours(_ hours: some BinaryInteger) -> Duration {
    .seconds(Int64(hours) * 3_600)
  }

  /// A span of whole minutes.
  public static func minutes(_ minutes: some BinaryInteger) -> Duration {
    .seconds(Int64(minutes) * 60)
  }

  /// The span in seconds, for Foundation's date arithmetic.
  ///
  /// A span of whole microseconds (every span parsed or converted from seconds is one)
  /// gives the `Double` nearest to it, so `Duration(timeInterval:)` gives the span back for
  /// spans up to about 70 years.
  public var timeInterval: TimeInterval {
    let total = attosecondCount
    let (microseconds, rest) = total.quotientAndRemainder(dividingBy: Self.attosecondsPerMicrosecond)
    if rest == 0 {
      // Through Int64 when it fits (the same Double): converting from Int128 is slow.
      if let small = Int64(exactly: microseconds) { return Double(small) / 1e6 }
      return Double(microseconds) / 1e6
    }
    return Double(total) / 1e18
  }

  /// A span of `timeInterval` seconds, rounded to the nearest microsecond (systemd's
  /// resolution; half a microsecond rounds away from zero). Not a number is zero; spans
  /// beyond `Int64.max` seconds either way are clamped to that.
  public init(timeInterval: TimeInterval) {
    guard !timeInterval.isNaN else {
      self = .zero
      return
    }
    let limit = 9.2e18
    let seconds = min(max(timeInterval, -limit), limit)
    let whole = seconds.rounded(.towardZero)
    let microseconds = ((seconds - whole) * 1e6).rounded()
    self = Duration(
      secondsComponent: Int64(whole), attosecondsComponent: Int64(microseconds) * 1_000_000_000_000)
  }

  /// The span in whole milliseconds, rounded to the nearest (half a millisecond away from
  /// zero); clamped to the range of `Int64`.
  public var roundedMilliseconds: Int64 {
    count(of: Self.attosecondsPerMillisecond)
  }

  /// The span in whole microseconds, rounded to the nearest (half a microsecond away from
  /// zero); clamped to the range of `Int64`.
  public var roundedMicroseconds: Int64 {
    count(of: Self.attosecondsPerMicrosecond)
  }

  private func count(of unit: Int128) -> Int64 {
    let total = attosecondCount
    let half = unit / 2
    return Int64(clamping: (total + (total < 0 ? -half : half)) / unit)
  }

  /// The whole span in attoseconds (10⁻¹⁸ s): the standard library's own count, read as it is
  /// stored (`components` divides it by 10¹⁸ and the sum multiplies it back, both in software).
  var attosecondCount: Int128 { attoseconds }

  /// The span of `attoseconds`, clamped to `Int64.max` seconds either way.
  init(attosecondCount attoseconds: Int128) {
    let largest = Int128(Int64.max) * Self.attosecondsPerSecond + (Self.attosecondsPerSecond - 1)
    let smallest = Int128(Int64.min) * Self.attosecondsPerSecond - (Self.attosecondsPerSecond - 1)
    if attoseconds > largest {
      self = .seconds(Int64.max)
    } else if attoseconds < smallest {
      self = .seconds(Int64.min)
    } else {
      self = Duration(attoseconds: attoseconds)
    }
  }

  static let attosecondsPerSecond: Int128 = 1_000_000_000_000_000_000
  static let attosecondsPerMillisecond: Int128 = 1_000_000_000_000_000
  static let attosecondsPerMicrosecond: Int128 = 1_000_000_000_000
}

extension Date {
  /// The date `span` later (earlier for a negative span).
  public func adding(_ span: Duration) -> Date {
    addingTimeInterval(span.timeInterval)
  }

  /// How long after `earlier` this date is, to the microsecond; negative when it is before.
  public func duration(since earlier: Date) -> Duration {
    Duration(timeInterval: timeIntervalSince(earlier))
  }
}
