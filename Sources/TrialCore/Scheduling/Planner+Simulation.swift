import FoundationEssentials

/// What would fall due, and the catch-up policy applied to what does.
extension Planner {
  /// What `takeDue` would return if the clock ran from `now` to `date` with the daemon
  /// awake: events overdue at `now` as a wake at `now` would take them, later ones on time.
  /// Changes nothing. Far trials' events are not held here: see `holdsFarTrials(dueThrough:)`.
  public func simulate(now: Date, through date: Date) -> [DueEvent] {
    let limit = date.timeIntervalSinceReferenceDate
    var upcoming: [(due: Double, order: UInt64, event: TrialEvent)] = []
    for slot in slots where slot.plan != 0 {
      let total = scheduleSeconds[Int(slot.schedule)].count
      for next in Int(slot.next)..<total {
        let due = due(of: slot, index: UInt8(next))
        guard due <= limit else { break }
        // Plan first, then the event's place in it: the order takeDue takes equal due times in.
        upcoming.append((due, UInt64(slot.plan) << 8 | UInt64(next), event(of: slot, index: UInt8(next))))
      }
    }
    for resume in resumes.due(through: limit) + milestones.due(through: limit) {
      upcoming.append((resume.due.timeIntervalSinceReferenceDate, 0, resume))
    }
    upcoming.sort { $0.due != $1.due ? $0.due < $1.due : $0.order < $1.order }
    let nowValue = now.timeIntervalSinceReferenceDate
    let overdue = upcoming.prefix { $0.due <= nowValue }.map(\.event)
    var result = applyPolicy(to: overdue, at: now)
    for (_, _, event) in upcoming.dropFirst(overdue.count) {
      result.append(DueEvent(event: event, takenAt: event.due, disposition: .fire, isLate: false))
    }
    return result
  }

  func applyPolicy(to taken: [TrialEvent], at now: Date) -> [DueEvent] {
    // The last event taken for each trial in this wake: later reminders supersede earlier ones.
    // Only needed when some reminder is late.
    // Lateness is compared as `DueEvent.lateness` reports it, to the microsecond.
    var last: [TrialID: TrialEvent] = [:]
    if policy.reminders == .latest,
      taken.contains(where: {
        $0.kind.reminderOffset != nil && now.duration(since: $0.due) > policy.lateThreshold
      })
    {
      for event in taken { last[event.trialID] = event }
    }
    return taken.map { event in
      let lateness = now.duration(since: event.due)
      let isLate = lateness > policy.lateThreshold
      var disposition = DueEvent.Disposition.fire
      if case .reminder = event.kind, isLate {
        switch policy.reminders {
        case .all:
          break
        case .skip:
          if lateness > policy.grace {
            disposition = .skip(.beyondGrace(lateness: lateness, grace: policy.grace))
          }
        case .latest:
          if let final = last[event.trialID], final.id != event.id {
            disposition = .skip(
              // The trial's end came in the same wake: its expiry, or the start of its grace.
              final.kind.reminderOffset == nil ? .supersededByExpiry : .supersededByReminder(final.id))
          }
        }
      }
      return DueEvent(event: event, takenAt: now, disposition: disposition, isLate: isLate)
    }
  }
}
