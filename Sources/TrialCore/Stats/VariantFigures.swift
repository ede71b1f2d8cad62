/// The figures of one variant of a plan (`GetStats` with `byVariant`): its trials started in the
/// periods asked for, counted as the cohorts count them, and its conversion rate's 95 % Wilson
/// interval. The rate is the cohorts' own: converted ÷ ended (converted, cancelled or expired),
/// so the interval is of `converted` successes out of `ended` trials.
public struct VariantFigures: Hashable, Sendable {
  public var name: String
  /// Its weight in the plan as loaded; nil for a variant its trials have that the plan no
  /// longer has.
  public var weight: Int?
  public var counts: CohortCounts

  public init(name: String, weight: Int?, counts: CohortCounts) {
    self.name = name
    self.weight = weight
    self.counts = counts
  }

  /// The 95 % Wilson score interval of the conversion rate; nil while none has ended.
  public var interval: ClosedRange<Double>? {
    Proportions.wilsonInterval(successes: counts.converted, trials: counts.ended)
  }
}

/// Two variants' conversion rates compared by the pooled two-proportion z-test (two-sided).
public struct VariantComparison: Hashable, Sendable {
  /// The variants, in the order of the figures: the difference is the second's rate less the
  /// first's, and z has its sign.
  public var first: String
  public var second: String
  public var difference: Double
  public var z: Double
  public var pValue: Double

  public init(first: String, second: String, difference: Double, z: Double, pValue: Double) {
    self.first = first
    self.second = second
    self.difference = difference
    self.z = z
    self.pValue = pValue
  }
}

extension TrialStats {
  /// Adds what `trial` counts for to `figures` by its variant, when it is of `plan`, has a
  /// variant and started from day `from` through day `through`: what a store without a query
  /// language does for each trial it reads.
  public static func addByVariant(
    _ trial: Trial, plan: String, from: Int32, through: Int32, to figures: inout [String: CohortCounts]
  ) {
    guard let variant = trial.attributes.variant, trial.attributes.plan == plan else { return }
    let day = CohortKey.day(of: trial.period.startDate)
    guard day >= from, day <= through else { return }
    figures[variant, default: CohortCounts()].add(contribution(of: trial))
  }

  /// The figures by variant of `plan`: its variants as loaded first, in the file's order (those
  /// without trials with zeros), then the variants only its trials have, by name (bytes).
  /// Empty when the plan has no variants and no trial has one.
  public static func variants(of plan: TrialPlan?, counts: [String: CohortCounts]) -> [VariantFigures] {
    let loaded = plan?.variants ?? []
    var figures = loaded.map {
      VariantFigures(name: $0.name, weight: $0.weight, counts: counts[$0.name] ?? .init())
    }
    let names = Set(loaded.map(\.name))
    let others = counts.keys.filter { !names.contains($0) }.sorted {
      Array($0.utf8).lexicographicallyPrecedes($1.utf8)
    }
    figures += others.map { VariantFigures(name: $0, weight: nil, counts: counts[$0]!) }
    return figures
  }

  /// The z-test of the two variants' rates, when there are exactly two and each has an ended
  /// trial; nil otherwise.
  public static func comparison(of figures: [VariantFigures]) -> VariantComparison? {
    guard figures.count == 2,
      let test = Proportions.twoProportionTest(
        successes: figures[0].counts.converted, of: figures[0].counts.ended,
        against: figures[1].counts.converted, of: figures[1].counts.ended),
      let first = figures[0].counts.conversionRate, let second = figures[1].counts.conversionRate
    else { return nil }
    return VariantComparison(
      first: figures[0].name, second: figures[1].name, difference: second - first, z: test.z,
      pValue: test.pValue)
  }
}
