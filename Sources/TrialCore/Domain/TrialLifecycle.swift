import FoundationEssentials

/// A trial cancelled at its end: it stays open (active or paused) until its end, where it is
/// cancelled instead of expired (`Trial.stateAtEnd`). Moving the end (an extension, a resume)
/// keeps the mark: it then cancels at the new end.
public struct TrialCancelMark: Hashable, Sendable {
  /// When the cancel was asked.
  public var askedAt: Date
  /// Whether its reminders still fire: its plan's `RemindAfterCancel=` when the cancel was asked
  /// (a plan's later change does not touch it).
  public var remindAfterCancel: Bool

  public init(askedAt: Date, remindAfterCancel: Bool = false) {
    self.askedAt = askedAt
    self.remindAfterCancel = remindAfterCancel
  }
}

/// What a trial carries of the lifecycle beyond its reminders and its end: its extensions, its
/// cancel at the end, its grace, follow-ups and milestones. Most trials carry none of it (a
/// plain trial: `isPlain`), so `Trial` keeps it out of line (`TrialLifecycle.Storage`).
public struct TrialLifecycle: Hashable, Sendable {
  /// How many times an extension moved the end later (`Trial.extensions`).
  public var extensions = 0
  /// The cancel at the end (`Trial.cancelMark`).
  public var cancelMark: TrialCancelMark?
  /// The grace its plan gave it (`Trial.grace`).
  public var grace = Duration.zero
  /// Its plan's follow-ups (`Trial.followUps`).
  public var followUps = FollowUpSchedule.none
  /// Its plan's milestones less those cut (`Trial.milestones`).
  public var milestones = MilestoneSchedule.none

  public init(
    extensions: Int = 0, cancelMark: TrialCancelMark? = nil, grace: Duration = .zero,
    followUps: FollowUpSchedule = .none, milestones: MilestoneSchedule = .none
  ) {
    self.extensions = extensions
    self.cancelMark = cancelMark
    self.grace = grace
    self.followUps = followUps
    self.milestones = milestones
  }

  /// None of it: no extension, no cancel at the end, no grace, follow-up or milestone.
  public var isPlain: Bool {
    Self.isPlain(
      extensions: extensions, cancelMark: cancelMark, grace: grace, followUps: followUps,
      milestones: milestones)
  }

  static func isPlain(
    extensions: Int, cancelMark: TrialCancelMark?, grace: Duration, followUps: FollowUpSchedule,
    milestones: MilestoneSchedule
  ) -> Bool {
    extensions == 0 && cancelMark == nil && followUps.spans.isEmpty && milestones.spans.isEmpty
      && grace == .zero
  }

  /// The out-of-line home of a trial's lifecycle: nothing for a plain trial, else one shared,
  /// immutable box. A plain trial's copy, comparison and hash then cost what they did before
  /// the lifecycle came (a copy of a trial is on every start's and fire's path, and its size
  /// decides whether it is moved in registers or by `memcpy`).
  struct Storage: Hashable, Sendable {
    private final class Box: Sendable {
      let value: TrialLifecycle
      init(_ value: TrialLifecycle) { self.value = value }
    }

    /// Nil exactly when the lifecycle is plain.
    private var box: Box?

    /// From its parts, building nothing for a plain trial (each trial read is one).
    init(
      extensions: Int, cancelMark: TrialCancelMark?, grace: Duration, followUps: FollowUpSchedule,
      milestones: MilestoneSchedule
    ) {
      let plain = TrialLifecycle.isPlain(
        extensions: extensions, cancelMark: cancelMark, grace: grace, followUps: followUps,
        milestones: milestones)
      box =
        plain
        ? nil
        : Box(
          TrialLifecycle(
            extensions: extensions, cancelMark: cancelMark, grace: grace, followUps: followUps,
            milestones: milestones))
    }

    var value: TrialLifecycle {
      get { box?.value ?? TrialLifecycle() }
      set { box = newValue.isPlain ? nil : Box(newValue) }
    }

    /// The lifecycle, nil when plain.
    @inline(__always)
    var unlessPlain: TrialLifecycle? { box?.value }

    /// Whether the trial enters grace at its end: it has a grace and is not cancelled at its end.
    @inline(__always)
    var entersGrace: Bool {
      guard let box else { return false }
      return box.value.grace > .zero && box.value.cancelMark == nil
    }

    /// How many follow-ups it plans.
    @inline(__always)
    var followUpCount: Int { box?.value.followUps.spans.count ?? 0 }

    static func == (lhs: Storage, rhs: Storage) -> Bool {
      switch (lhs.box, rhs.box) {
      case (nil, nil): true
      case (let left?, let right?): left === right || left.value == right.value
      default: false
      }
    }

    func hash(into hasher: inout Hasher) {
      // A plain lifecycle hashes as nothing at all; any other as its value.
      if let box { hasher.combine(box.value) }
    }
  }
}
