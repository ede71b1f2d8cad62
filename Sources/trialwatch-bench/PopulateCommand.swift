import Foundation
import TestSupport
import TrialCore
import TrialStore

/// `trialwatch-bench populate-plans --state DIR --trials N [--plans pro,team,edu]`: writes a
/// year of trials into the LMDB store in `DIR` (created if missing; no daemon may have it
/// open), as the daemon writes them (`TrialBook.write`: each trial with its cohort's
/// figures), for the benches of other harnesses (bench/http/dashboard_bench.py). Prints
/// `populated N trials` and returns 0, or names the failure on stderr and returns 1.
///
/// The trials start over the 365 days before now, 14 days long, a plan each in turn. A trial
/// whose end has passed ended: converted (3 in 10, at a random time within its period),
/// cancelled (2 in 10, likewise) or expired (at its end). Of the others (about 14 days of
/// starts), 1 in 10 converted and 1 in 10 was cancelled early; the rest are active, each with
/// those of the reminders 7 days, 3 days and 1 day before its end that are still to come, so
/// that the daemon started on the store has nothing overdue to catch up with.
enum PopulateCommand {
  static let name = "populate-plans"

  static func main(_ arguments: [String]) -> Int32 {
    do {
      let options = try Options(arguments)
      let trials = try populatePlans(
        state: options.state, trials: options.trials, plans: options.plans, now: SystemWallClock().now())
      print("populated \(trials) trials")
      return 0
    } catch {
      FileHandle.standardError.write(Data("trialwatch-bench \(name): \(error)\n".utf8))
      return 1
    }
  }

  private struct Options {
    var state = ""
    var trials = 0
    var plans = ["pro", "team", "edu"]

    init(_ arguments: [String]) throws {
      let usage = "usage: \(PopulateCommand.name) --state DIR --trials N [--plans NAME,NAME...]"
      var rest = arguments[...]
      while let option = rest.popFirst() {
        guard let value = rest.popFirst() else { throw BenchError(usage) }
        switch option {
        case "--state": state = value
        case "--trials": trials = Int(value) ?? 0
        case "--plans": plans = value.split(separator: ",").map(String.init)
        default: throw BenchError(usage)
        }
      }
      guard !state.isEmpty, trials > 0, !plans.isEmpty else { throw BenchError(usage) }
      for plan in plans {
        if let problem = TrialPlan.validateName(plan) { throw BenchError("plan \(plan): \(problem)") }
      }
    }
  }

  /// Writes the trials described above, in batches; returns how many.
  static func populatePlans(state: String, trials: Int, plans: [String], now: Date) throws -> Int {
    let repository = try LMDBTrialRepository(directory: state)
    defer { repository.close() }
    var generator = SeededGenerator(seed: 11)
    let length = 14.0 * 86_400
    try writeInBatches(repository, count: trials) { txn, index in
      let start = now.addingTimeInterval(-Double.random(in: 0..<365 * 86_400, using: &generator))
      let end = start.addingTimeInterval(length)
      var trial = Trial(
        id: TrialID(generator.next() | 1),
        attributes: TrialAttributes(subject: "plans-\(index)", plan: plans[index % plans.count]),
        period: TrialPeriod(startDate: start, endDate: end), reminders: .none)
      // Within the period and before now.
      let latest = min(end, now).timeIntervalSince(start)
      let early = start.addingTimeInterval(Double.random(in: 0...latest, using: &generator))
      let draw = Int.random(in: 0..<10, using: &generator)
      if end <= now {
        switch draw {
        case 0..<3: trial.end(.converted, at: early)
        case 3..<5: trial.end(.cancelled, at: early)
        default: trial.end(.expired, at: end)
        }
      } else {
        switch draw {
        case 0: trial.end(.converted, at: early)
        case 1: trial.end(.cancelled, at: early)
        default:
          trial.reminders = try ReminderSchedule(
            [.days(7), .days(3), .days(1)].filter { end.addingTimeInterval(-$0.seconds) > now })
        }
      }
      try TrialBook.write(trial, was: nil, in: txn)
    }
    return trials
  }
}

extension Trial {
  fileprivate mutating func end(_ state: TrialState, at date: Date) {
    self.state = state
    endedAt = date
  }
}

/// `trialwatch-bench populate --state DIR --trials N [--ending-from S] [--ending-to S]`:
/// writes `N` active trials into the LMDB store in `DIR` (created if missing; no daemon may
/// have it open), as `make bench` writes the daemon's (each with the default reminders), their
/// ends drawn evenly between `S` seconds from now (default 10 and 40 days; a negative `S` is in
/// the past, and the daemon started on the store catches up with those trials). For measuring
/// a daemon's start by hand (docs/install.md, "Memory"). Prints `populated N trials`
/// and returns 0, or names the failure on stderr and returns 1.
enum PopulateActiveCommand {
  static let name = "populate"

  static func main(_ arguments: [String]) -> Int32 {
    let usage = "usage: \(name) --state DIR --trials N [--ending-from SECONDS] [--ending-to SECONDS]"
    var state = ""
    var trials = 0
    var from = 10.0 * 86_400
    var to = 40.0 * 86_400
    var rest = arguments[...]
    while let option = rest.popFirst() {
      guard let value = rest.popFirst() else { return fail(usage) }
      switch option {
      case "--state": state = value
      case "--trials": trials = Int(value) ?? 0
      case "--ending-from": from = Double(value) ?? .nan
      case "--ending-to": to = Double(value) ?? .nan
      default: return fail(usage)
      }
    }
    guard !state.isEmpty, trials > 0, from <= to else { return fail(usage) }
    do {
      let repository = try LMDBTrialRepository(directory: state)
      defer { repository.close() }
      let now = SystemWallClock().now()
      var generator = SeededGenerator(seed: 42)
      try writeInBatches(repository, count: trials) { txn, index in
        // Started a day before the earliest end, so that no end comes before its start.
        let end = now.addingTimeInterval(Double.random(in: from...to, using: &generator))
        try txn.putTrial(
          Trial(
            id: TrialID(generator.next() | 1), subject: "bench-\(index)",
            period: TrialPeriod(startDate: now.addingTimeInterval(min(from, 0) - 86_400), endDate: end)))
      }
      print("populated \(trials) trials")
      return 0
    } catch {
      return fail("\(error)")
    }
  }

  private static func fail(_ message: String) -> Int32 {
    FileHandle.standardError.write(Data("trialwatch-bench \(name): \(message)\n".utf8))
    return 1
  }
}
