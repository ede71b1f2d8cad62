import TrialControl
import TrialCore
import TrialEngine

extension TrialsHandlers {
  /// `GetStats`'s figures by variant: read from the trials of `plan` (the store groups them,
  /// `TrialRepository.cohortsByVariant`), in the order of the plan as loaded, and the z-test of
  /// two. A plan that has no variants, and no trial of it in the days asked for that has one, is
  /// `InvalidParameter` naming `plan`: there is nothing to compare.
  func addVariants(
    to reply: inout GetStatsReply, plan: String, from: Int32, through: Int32, queries: StoreQueries
  ) throws {
    let counts = try queries.repository.cohortsByVariant(plan: plan, from: from, through: through)
    let figures = TrialStats.variants(of: snapshots.current.settings.plans[plan], counts: counts)
    guard !figures.isEmpty else {
      throw ControlError.invalidParameter(
        "plan",
        problem: "plan \"\(plan)\" has no variants ([Variant] sections), and none of its trials started "
          + "from \(CalendarDay(from)) through \(CalendarDay(through)) has one")
    }
    reply.variants = figures.map(VariantCohortObject.init)
    reply.comparison = TrialStats.comparison(of: figures).map(VariantComparisonObject.init)
  }
}
