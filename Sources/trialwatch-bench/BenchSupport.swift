import Foundation

/// Prints one figure on a line of its own, as `name: value unit`.
func report(_ name: String, _ value: Double, _ unit: String, digits: Int = 3) {
  print("\(name): \(String(format: "%.\(digits)f", value)) \(unit)")
  fflush(nil)
}

/// Seconds `body` took, on a monotonic clock.
func measure(_ body: () throws -> Void) rethrows -> Double {
  let clock = ContinuousClock()
  let start = clock.now
  try body()
  let elapsed = clock.now - start
  return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

/// The value below which `fraction` of the sorted samples lie.
func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
  guard !sorted.isEmpty else { return .nan }
  let index = min(sorted.count - 1, Int((Double(sorted.count - 1) * fraction).rounded()))
  return sorted[index]
}

/// A fresh temporary directory, removed by the caller.
func temporaryDirectory(_ name: String) throws -> URL {
  let url = FileManager.default.temporaryDirectory.appendingPathComponent(
    "trialwatch-bench-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
  try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
  return url
}
