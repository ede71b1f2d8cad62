import Glibc

/// `value` with `digits` digits after the point, rounded as C's `printf("%.*f")` rounds (to the
/// nearest, ties to even, on the exact binary value): the one formatter of fractional figures
/// for people, in the daemon's reports and trialwatchctl's tables.
public func decimal(_ value: Double, digits: Int) -> String {
  withVaList([Int32(digits), value]) { arguments in
    var buffer = [CChar](repeating: 0, count: 64)
    let count = buffer.withUnsafeMutableBufferPointer { vsnprintf($0.baseAddress, 64, "%.*f", arguments) }
    guard count >= 64 else {
      return String(decoding: buffer.prefix(Int(max(count, 0))).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
    var large = [CChar](repeating: 0, count: Int(count) + 1)
    return withVaList([Int32(digits), value]) { again in
      _ = large.withUnsafeMutableBufferPointer { vsnprintf($0.baseAddress, $0.count, "%.*f", again) }
      return String(decoding: large.prefix(Int(count)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
  }
}
