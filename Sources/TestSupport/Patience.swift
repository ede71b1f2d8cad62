import Dispatch
import FoundationEssentials

/// How long a test waits for what must come (a reply, a line of a log, an exit, a condition)
/// before it calls it lost. A guard against a hang, not a bound on speed: a test that passes
/// never waits it out, so it is long enough for a machine busy with other work (two shared cores,
/// builds beside the tests). That something does not happen is never shown by waiting it out.
public let patience: TimeInterval = 120

/// Waits until `condition` holds, asking again each time `interval` passes, at most `timeout`;
/// whether it held. For a state another thread or process reaches on its own (a reply arriving,
/// an outcome reported): the test waits for the state, never for a time.
public func waitUntil(
  timeout: TimeInterval = patience, interval: DispatchTimeInterval = .milliseconds(2),
  _ condition: () throws -> Bool
) rethrows -> Bool {
  let deadline = DispatchTime.now() + timeout
  let never = DispatchSemaphore(value: 0)
  while DispatchTime.now() < deadline {
    if try condition() { return true }
    _ = never.wait(timeout: min(.now() + interval, deadline))
  }
  return try condition()
}
