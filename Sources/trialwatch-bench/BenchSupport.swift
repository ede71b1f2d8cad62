import Foundation
import Histogram

/// Four labels whose values are 32 bytes each, as the labelled figures give every trial.
let benchLabels: [String: String] = Dictionary(
  uniqueKeysWithValues: ["customer", "email", "region", "tier"].map { key in
    (key, String(repeating: "v", count: 32))
  })

/// Prints one figure on a line of its own, as `name: value unit`.
func report(_ name: String, _ value: Double, _ unit: String, digits: Int = 3) {
  print("\(name): \(String(format: "%.\(digits)f", value)) \(unit)")
  fflush(nil)
}

/// A note for the reader on stderr, which figures never go to.
func note(_ text: String) {
  FileHandle.standardError.write(Data("note: \(text)\n".utf8))
}

/// A failure of the bench, in words.
struct BenchError: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

/// Seconds `body` took, on a monotonic clock.
func measure(_ body: () throws -> Void) rethrows -> Double {
  let clock = ContinuousClock()
  let start = clock.now
  try body()
  let elapsed = clock.now - start
  return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

/// Durations recorded into one HDR histogram, in nanoseconds to three significant digits:
/// every percentile and maximum the bench prints is read from one of these, the same way.
/// Coded as JSON, it travels from a client process to the bench.
struct Latencies: Codable, Sendable {
  private var histogram = Histogram<UInt64>(numberOfSignificantValueDigits: .three)

  /// How many durations were recorded.
  var count: Int { Int(histogram.totalCount) }

  mutating func record(nanoseconds: UInt64) {
    histogram.record(nanoseconds)
  }

  /// Records a duration in seconds; a negative one counts as zero.
  mutating func record(seconds: Double) {
    record(nanoseconds: UInt64((Swift.max(0, seconds) * 1e9).rounded()))
  }

  /// Adds every duration `other` recorded.
  mutating func add(_ other: Latencies) {
    histogram.add(other.histogram)
  }

  /// The duration at or below which `percent` of those recorded lie, in milliseconds; 100
  /// gives the longest recorded. NaN when nothing was recorded.
  func milliseconds(atPercentile percent: Double) -> Double {
    guard count > 0 else { return .nan }
    let nanoseconds = percent >= 100 ? histogram.maxRecorded : histogram.valueAtPercentile(percent)
    return Double(nanoseconds) / 1e6
  }

  var p50: Double { milliseconds(atPercentile: 50) }
  var p99: Double { milliseconds(atPercentile: 99) }
  var max: Double { milliseconds(atPercentile: 100) }

  /// Prints the named figures, each in milliseconds with three decimals.
  func reportFigures(p50 p50Name: String? = nil, p99 p99Name: String? = nil, max maxName: String? = nil) {
    for (name, value) in [(p50Name, p50), (p99Name, p99), (maxName, max)] {
      if let name { report(name, value, "ms", digits: Latencies.digits) }
    }
  }

  /// Decimals of every millisecond figure.
  static let digits = 3
}
