import Foundation
import Testing

@testable import TrialCore

/// The statistics of figures by variant, against values computed apart: the Wilson intervals of
/// Newcombe (1998), "Two-sided confidence intervals for the single proportion", Statistics in
/// Medicine 17, table I (to 4 places), with more places from an independent computation of the
/// same formulas in python3 (`math` only); the z-tests' p-values from python3's `math.erfc`; the
/// tail against the C library's `erfc`.
@Suite struct ProportionsTests {
  @Test(arguments: [
    // successes, trials, low, high
    (81, 263, 0.255_288_519_9, 0.366_209_577_0),
    (15, 148, 0.062_386_399_5, 0.160_487_241_7),
    (0, 20, 0.0, 0.161_125_158_1),
    (1, 29, 0.006_113_214_3, 0.171_755_218_8),
    (29, 29, 0.883_030_201_5, 1.0),
    (50, 1000, 0.038_130_262_4, 0.065_313_820_2),
    (100, 1000, 0.082_909_443_6, 0.120_151_963_2),
  ])
  func wilson_MatchesPublishedIntervals(successes: Int64, trials: Int64, low: Double, high: Double) throws {
    let interval = try #require(Proportions.wilsonInterval(successes: successes, trials: trials))
    #expect(abs(interval.lowerBound - low) < 1e-9, "\(successes)/\(trials): \(interval)")
    #expect(abs(interval.upperBound - high) < 1e-9, "\(successes)/\(trials): \(interval)")
  }

  @Test func wilson_WithoutTrials_IsNone() {
    #expect(Proportions.wilsonInterval(successes: 0, trials: 0) == nil)
    #expect(Proportions.wilsonInterval(successes: 3, trials: 2) == nil)
  }

  @Test(arguments: [
    // x1, n1, x2, n2, z, p-value
    (50, 1000, 100, 1000, 4.244_763_599_78, 2.188_239_933_61e-5),
    (45, 500, 60, 500, 1.547_337_646_06, 0.121_781_848_426),
    (81, 263, 15, 148, -4.752_688_538_52, 2.007_294_420_26e-6),
  ])
  func zTest_MatchesIndependentValues(
    x1: Int64, n1: Int64, x2: Int64, n2: Int64, z: Double, pValue: Double
  ) throws {
    let test = try #require(Proportions.twoProportionTest(successes: x1, of: n1, against: x2, of: n2))
    #expect(abs(test.z - z) < 1e-9)
    // The tail's relative error is below 1.2e-7.
    #expect(abs(test.pValue - pValue) / pValue < 2e-7, "\(test.pValue)")
  }

  @Test func zTest_OfEqualOrExtremeRates_IsOne() throws {
    #expect(
      try #require(Proportions.twoProportionTest(successes: 10, of: 100, against: 10, of: 100)) == (0, 1))
    #expect(try #require(Proportions.twoProportionTest(successes: 0, of: 40, against: 0, of: 60)) == (0, 1))
    #expect(try #require(Proportions.twoProportionTest(successes: 40, of: 40, against: 60, of: 60)) == (0, 1))
    #expect(Proportions.twoProportionTest(successes: 0, of: 0, against: 1, of: 2) == nil)
  }

  @Test func tail_FollowsTheCLibrary() {
    var x = -6.0
    while x <= 9 {
      let expected = erfc(x)
      let got = Proportions.complementaryErrorFunction(x)
      #expect(abs(got - expected) / expected < 1.2e-7, "erfc(\(x)): \(got), not \(expected)")
      x += 0.037
    }
    #expect(abs(Proportions.normalTail(1.959_963_984_540_054) - 0.025) < 1e-8)
  }

  @Test func exponential_FollowsTheCLibrary() {
    for x in stride(from: -708.0, through: 709.0, by: 0.731) {
      #expect(abs(Proportions.exponential(x) - exp(x)) <= 4 * exp(x).ulp, "exp(\(x))")
    }
    #expect(Proportions.exponential(-800) == 0)
    #expect(Proportions.exponential(800) == .infinity)
  }
}
