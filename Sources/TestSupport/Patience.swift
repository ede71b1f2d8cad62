import FoundationEssentials

/// How long a test waits for what must come (a reply, a line of a log, an exit, a condition)
/// before it calls it lost. A guard against a hang, not a bound on speed: a test that passes
/// never waits it out, so it is long enough for a machine busy with other work (two shared cores,
/// builds beside the tests). That something does not happen is never shown by waiting it out.
public let patience: TimeInterval = 120
