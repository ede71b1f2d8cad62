/// Numbers as text, as C's `printf` writes them, without Foundation's `String(format:)`.
public enum DecimalText {
  /// `value` with one decimal, as `%.1f` writes it: the exact value of the `Double` rounded
  /// to the nearest tenth, a tie to the even tenth (`5.25` is `5.2`, `5.35` is `5.3` since
  /// the `Double` nearest 5.35 is below it). For values from 0 to 2⁵³; others as `%.1f`
  /// would write them is not promised (`nan`, `inf` and negatives read `0.0`).
  public static func oneDecimal(_ value: Double) -> String {
    guard value.isFinite, value > 0 else { return "0.0" }
    let tenths: UInt64
    if value >= 0x1p52 {
      tenths = UInt64(min(value, 0x1p60)) * 10
    } else {
      // value = significand × 2^-shift exactly, the significand an integer below 2^53.
      let significand = UInt64(1) << 52 | value.significandBitPattern
      let shift = 52 - Int(value.exponent)
      guard value.isNormal, shift < 64 else { return "0.0" }
      let scaled = significand * 10
      let quotient = scaled >> UInt64(shift)
      let remainder = scaled - quotient << UInt64(shift)
      let half = UInt64(1) << UInt64(shift - 1)
      tenths = remainder > half || (remainder == half && quotient % 2 == 1) ? quotient + 1 : quotient
    }
    return "\(tenths / 10).\(tenths % 10)"
  }
}
