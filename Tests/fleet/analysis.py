# The pure part of the fleet fault test: parsing the nodes' event log lines, percentiles, the
# windows a fault excludes from the lateness figure, the failover of each fault, the stale-owner
# search and the classification of expected events against the ledger. No I/O, no clock: every
# time is a float of seconds since the epoch (time.time()'s and EXTRACT(EPOCH FROM ...)'s).
import re
from collections import namedtuple

# One ledger row; due, taken and delivered in seconds since the epoch (delivered None while
# undelivered). outcome is 'fired' or 'skipped:<reason>'.
Row = namedtuple("Row", "event_id trial_id shard kind outcome due taken late node epoch delivered")

# One change of a shard's owner (owner: a node name, None when it has none).
Change = namedtuple("Change", "shard epoch owner changed_at reason")

# One fault. kind: 'kill' (end: the restarted node answered), 'stop' (end: SIGCONT) or 'pg'
# (end: pg_ctl restart returned; victim None, shards empty: it touches every shard). shards: the
# shards the victim owned just before the fault.
Fault = namedtuple("Fault", "kind victim start end shards")

# An expected event: due in seconds since the epoch.
Expected = namedtuple("Expected", "event_id trial_id kind due")

# The console log line of a delivered event (Sources/Systemd/LogHandlers.swift, StderrLogHandler):
#   notice   trialwatchd.events: Trial s (id X) expired at ... event=<id> kind=expiry late=false
# the level padded to 9 columns, the label and a colon, the message, then the metadata sorted by
# key as ` key=value` (a value with a space, a quote or `=` in double quotes).
EVENT_ID = r"[0-9a-f]{16}-r[0-9]+-(?:expiry|reminder-[0-9]+ms)"
_LINE = re.compile(r"^(?P<level>[a-z]+) +(?P<label>[^\s:]+): (?P<rest>.*)$")
_EVENT = re.compile(r' event="?(?P<id>' + EVENT_ID + r')"?(?= |$)')
_PAIR = re.compile(r' ([A-Za-z0-9_.-]+)=("(?:[^"\\]|\\.)*"|[^\s"]*)')


def parse_event_line(line):
    """The delivery a log line reports: (event_id, metadata) or None for any other line. A
    delivery is a notice with an `event=` metadata pair whose value is an event id."""
    match = _LINE.match(line.rstrip("\n"))
    if not match or match.group("level") != "notice":
        return None
    rest = match.group("rest")
    events = list(_EVENT.finditer(rest))
    if not events:
        return None
    # The metadata come last: the last event= pair is the metadata one, even if the message
    # (a subject) happened to contain the same text.
    event = events[-1]
    metadata = {key: value.strip('"') for key, value in _PAIR.findall(rest[event.start():])}
    metadata["label"] = match.group("label")
    return event.group("id"), metadata


def deliveries(lines):
    """The event ids of the delivery lines among `lines`, in order (repeats kept)."""
    found = []
    for line in lines:
        parsed = parse_event_line(line)
        if parsed is not None:
            found.append(parsed[0])
    return found


def percentile(values, fraction):
    """The nearest-rank percentile of a non-empty sequence (fraction 0.99 for p99)."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("percentile of no values")
    rank = -(-round(fraction * 1_000_000) * len(ordered) // 1_000_000)  # ceil, exact for fractions
    return ordered[min(max(rank, 1), len(ordered)) - 1]


# --- Lateness: the windows faults exclude -------------------------------------------------

# Margins (seconds): before a fault, after its end, after a change of a shard's owner.
BEFORE_FAULT = 0.2
AFTER_FAULT = 3.0
AFTER_OWNER_CHANGE = 1.0


def exclusion_windows(faults):
    """[(start, end, shards)] for the faults: shards None for a fault on every shard (pg)."""
    windows = []
    for fault in faults:
        end = fault.end if fault.end is not None else float("inf")
        shards = None if fault.kind == "pg" else frozenset(fault.shards)
        windows.append((fault.start - BEFORE_FAULT, end + AFTER_FAULT, shards))
    return windows


def owner_changes_by_shard(history):
    """{shard: sorted changed_at times} from the shard history."""
    changes = {}
    for change in history:
        changes.setdefault(change.shard, []).append(change.changed_at)
    for times in changes.values():
        times.sort()
    return changes


def excluded(due, shard, windows, changes):
    """True when an event due at `due` in `shard` falls in a fault's window or within
    AFTER_OWNER_CHANGE after a change of its shard's owner."""
    for start, end, shards in windows:
        if start <= due <= end and (shards is None or shard in shards):
            return True
    for changed_at in changes.get(shard, ()):
        if changed_at <= due <= changed_at + AFTER_OWNER_CHANGE:
            return True
    return False


def untouched_rows(rows, faults, history):
    """The fired rows no fault touched."""
    windows = exclusion_windows(faults)
    changes = owner_changes_by_shard(history)
    return [row for row in rows if row.outcome == "fired" and not excluded(row.due, row.shard, windows, changes)]


def untouched_lateness(rows, faults, history):
    """taken − due of the fired rows no fault touched, in seconds."""
    return [row.taken - row.due for row in untouched_rows(rows, faults, history)]


# --- Failover -------------------------------------------------------------------------------


def failover(fault, rows):
    """(row, taken − due) of the earliest-due row in the fault's shards due after its start
    (the first event its victim left orphaned), or None when there is none."""
    orphans = [row for row in rows if row.shard in fault.shards and row.due > fault.start]
    if not orphans:
        return None
    first = min(orphans, key=lambda row: (row.due, row.event_id))
    return first, first.taken - first.due


# --- Stale owners ---------------------------------------------------------------------------


def stale_rows(rows, history, node, start, end, stop_start, stop_end):
    """The rows `node` took with taken in [start, end] for a shard whose epoch changed during
    [stop_start, stop_end], under an epoch older than one the shard already had when it was
    taken, or under an epoch the history does not give to the node: the node fired without
    owning the shard any more."""
    changed = {change.shard for change in history if stop_start <= change.changed_at <= stop_end}
    epochs, owners = {}, {}
    for change in history:
        epochs.setdefault(change.shard, []).append((change.changed_at, change.epoch))
        owners[(change.shard, change.epoch)] = change.owner
    stale = []
    for row in rows:
        if row.node != node or row.shard not in changed or not start <= row.taken <= end:
            continue
        newest = max((epoch for at, epoch in epochs[row.shard] if at <= row.taken), default=None)
        if row.epoch is None or (newest is not None and row.epoch < newest) or owners.get((row.shard, row.epoch)) != node:
            stale.append(row)
    return stale


# --- Expected events against the ledger -----------------------------------------------------


def classify(expected, ledger, allowed_skips):
    """(lost, skipped, fired): lost are the expected ids absent from the ledger or skipped for
    a reason not in allowed_skips; skipped {id: reason} the allowed skips; fired the ids fired.
    ledger: {event_id: Row}."""
    lost, skipped, fired = [], {}, []
    for event in expected:
        row = ledger.get(event.event_id)
        if row is None:
            lost.append(event.event_id)
        elif row.outcome == "fired":
            fired.append(event.event_id)
        elif row.outcome.startswith("skipped:") and row.outcome[len("skipped:"):] in allowed_skips:
            skipped[event.event_id] = row.outcome[len("skipped:"):]
        else:
            lost.append(event.event_id)
    return lost, skipped, fired


def repeated(ids):
    """{id: count} of the ids that occur more than once."""
    counts = {}
    for key in ids:
        counts[key] = counts.get(key, 0) + 1
    return {key: count for key, count in counts.items() if count > 1}
