/// The statistics of figures by variant (`GetStats` with `byVariant`): a conversion rate's 95 %
/// Wilson score interval, and the pooled two-proportion z-test of two rates. Pure arithmetic:
/// the core links no C library, so the normal distribution's tail is computed here
/// (`Proportions.normalTail`), to a relative error below 1.2e-7, ample for a p-value shown to
/// three figures.
public enum Proportions {
  /// z for a two-sided 95 % interval: the 0.975 quantile of the standard normal distribution.
  public static let z95 = 1.959_963_984_540_054

  /// The Wilson score interval of `successes` out of `trials` at `z` (95 % by default):
  /// with p̂ = successes / trials and n = trials,
  ///
  ///     centre = (p̂ + z²/2n) / (1 + z²/n)
  ///     half   = z / (1 + z²/n) × √(p̂(1 − p̂)/n + z²/4n²)
  ///
  /// and the interval is centre ± half, within 0 to 1 (it never leaves them, unlike the normal
  /// approximation's, and it is not empty at 0 or at all successes). nil without trials.
  public static func wilsonInterval(successes: Int64, trials: Int64, z: Double = z95) -> ClosedRange<Double>?
  {
    guard trials > 0, successes >= 0, successes <= trials else { return nil }
    let n = Double(trials)
    let p = Double(successes) / n
    let z2 = z * z
    let denominator = 1 + z2 / n
    let centre = (p + z2 / (2 * n)) / denominator
    let half = z / denominator * (p * (1 - p) / n + z2 / (4 * n * n)).squareRoot()
    return max(0, centre - half)...min(1, centre + half)
  }

  /// The pooled two-proportion z-test of x₁ of n₁ against x₂ of n₂: with p̂ᵢ = xᵢ/nᵢ and the
  /// pooled p = (x₁ + x₂)/(n₁ + n₂),
  ///
  ///     z = (p̂₂ − p̂₁) / √(p(1 − p)(1/n₁ + 1/n₂)),   p-value = 2 × (1 − Φ(|z|)) = erfc(|z|/√2)
  ///
  /// (two-sided). When the pooled p is 0 or 1 the two rates are equal and there is no spread:
  /// z is 0 and the p-value 1. nil when either has no trials.
  public static func twoProportionTest(
    successes first: Int64, of firstTrials: Int64, against second: Int64, of secondTrials: Int64
  ) -> (z: Double, pValue: Double)? {
    guard firstTrials > 0, secondTrials > 0, (0...firstTrials).contains(first),
      (0...secondTrials).contains(second)
    else { return nil }
    let n1 = Double(firstTrials)
    let n2 = Double(secondTrials)
    let pooled = Double(first + second) / (n1 + n2)
    let spread = (pooled * (1 - pooled) * (1 / n1 + 1 / n2)).squareRoot()
    guard spread > 0 else { return (0, 1) }
    let z = (Double(second) / n2 - Double(first) / n1) / spread
    return (z, min(1, 2 * normalTail(abs(z))))
  }

  /// 1 − Φ(x), the standard normal distribution's upper tail: erfc(x/√2)/2.
  public static func normalTail(_ x: Double) -> Double {
    complementaryErrorFunction(x / 2.0.squareRoot()) / 2
  }

  /// erfc(x), by the Chebyshev fit of W. H. Press et al., Numerical Recipes (2nd ed., §6.2,
  /// `erfcc`): relative error below 1.2e-7 everywhere.
  public static func complementaryErrorFunction(_ x: Double) -> Double {
    let z = abs(x)
    let t = 1 / (1 + 0.5 * z)
    var poly = 0.170_872_77
    for c in [
      -0.822_152_23, 1.488_515_87, -1.135_203_98, 0.278_868_07, -0.186_288_06, 0.096_784_18, 0.374_091_96,
      1.000_023_68,
    ] {
      poly = c + t * poly
    }
    let answer = t * exponential(-z * z - 1.265_512_23 + t * poly)
    return x >= 0 ? answer : 2 - answer
  }

  /// eˣ to within a few units in the last place, for the tail above: x = k ln 2 + r with
  /// |r| ≤ ln 2 / 2 (Cody and Waite's reduction), eʳ by its Taylor series, scaled by 2ᵏ. 0 far
  /// below, infinity far above.
  static func exponential(_ x: Double) -> Double {
    if x.isNaN { return x }
    if x < -745 { return 0 }
    if x > 709.8 { return .infinity }
    // ln 2 in two parts (fdlibm's), the first with its low 32 bits zero, so that k × ln2High
    // is exact and r keeps its precision for every k here (|k| ≤ 1075).
    let ln2High = 6.931_471_803_691_238_164_90e-01
    let ln2Low = 1.908_214_929_270_587_700_02e-10
    let k = (x / 0.693_147_180_559_945_3).rounded()
    let r = (x - k * ln2High) - k * ln2Low
    var term = 1.0
    var sum = 1.0
    for n in 1...24 {
      term *= r / Double(n)
      sum += term
    }
    // 2ᵏ in two steps, so that neither factor leaves the doubles' range on its own.
    let half = Int(k) / 2
    return sum * Double(sign: .plus, exponent: half, significand: 1)
      * Double(sign: .plus, exponent: Int(k) - half, significand: 1)
  }
}
