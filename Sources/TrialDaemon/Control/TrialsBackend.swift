import TrialControl

/// What the control server asks of the daemon: one operation per `io.trialwatch.Trials`
/// method, with parameters already read and validated.
///
/// Every operation is asynchronous: it must return at once (the server calls it on a
/// connection's queue) and call `completion` exactly once, on any thread, when the answer is
/// known. A changing operation completes only once its change is durable. Errors are the
/// replies clients receive: `ControlError.trialNotFound`, `.subjectAlreadyActive`,
/// `.trialNotActive`, `.invalidParameter` (for example an end that is not in the future),
/// `.internalError`, or `ControlError(TrialError)` for the domain's refusals.
///
/// The server has already checked authorization: changing operations reach the backend only
/// from permitted callers.
public protocol TrialsBackend: AnyObject, Sendable {
  typealias Completion<T> = @Sendable (Result<T, ControlError>) -> Void

  /// Starts a trial. `duration` and `endsAt` are never both set; with neither, the configured
  /// default length applies, and `reminders == nil` means the configured reminders.
  func startTrial(_ parameters: StartTrialParameters, completion: @escaping Completion<TrialObject>)

  /// One trial by id, or the subject's active trial (exactly one of the two is set).
  func getTrial(_ parameters: GetTrialParameters, completion: @escaping Completion<TrialObject>)

  /// A page of trials in id order after `parameters.after`, at most `parameters.pageSize`,
  /// filtered with `parameters.matches(_:now:)`; `next` is set when more may follow.
  func listTrials(_ parameters: ListTrialsParameters, completion: @escaping Completion<ListTrialsReply>)

  /// Moves an active trial's end (`parameters.change.newEnd(from:)`).
  func extendTrial(_ parameters: ExtendTrialParameters, completion: @escaping Completion<TrialObject>)

  /// Ends an active trial as converted or cancelled.
  func endTrial(_ parameters: EndTrialParameters, completion: @escaping Completion<TrialObject>)

  /// Every event of a trial, past and future (see `EventObject.plan(of:ledger:)`).
  func getPlan(_ parameters: GetPlanParameters, completion: @escaping Completion<[EventObject]>)

  /// What would be taken between now and `parameters.at.resolve(now:)`, changing nothing.
  func simulate(_ parameters: SimulateParameters, completion: @escaping Completion<[EventObject]>)

  /// The daemon's state; the server adds the version and its connection counts.
  func getStatus(completion: @escaping Completion<DaemonStatus>)

  /// Registers a watcher: from now on, every event taken is handed to
  /// `subscriber.deliver(_:)` until the subscription is cancelled. `deliver` never blocks and
  /// may be called on the backend's queue; the server buffers and cuts off slow watchers.
  func watch(_ subscriber: any WatchSubscriber) -> any WatchSubscription
}

/// The receiving end of a Watch: implemented by the server, called by the backend.
public protocol WatchSubscriber: AnyObject, Sendable {
  /// One event as it is taken (fired or skipped). Cheap and non-blocking.
  func deliver(_ event: EventObject)

  /// The backend ends the stream (for example, the daemon is stopping). No more `deliver`.
  func finish()
}

/// A running Watch, as the backend holds it.
public protocol WatchSubscription: AnyObject, Sendable {
  /// Stops delivery to the subscriber. Idempotent; callable from any thread.
  func cancel()
}
