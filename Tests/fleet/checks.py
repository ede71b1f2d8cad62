#!/usr/bin/python3
# The fault test's checks: the Watch kept open on an untouched node through the run, and what
# the ledger, the shard history, the nodes' logs and exits must show (nothing lost, nothing
# taken twice, every fired event delivered, failover within its bound, no stale owner firing, a
# clean exit), one line per check; the lateness as information only.
import json
import socket
import threading

import analysis
from scenario import STOPPED  # first: through nodes, it puts bench/peers, with common, on the path
from common import frames

# Late reminders fire (LateReminders=all): the only skip the policy allows is an event already
# due when its trial started (the workload leaves time for none).
ALLOWED_SKIPS = {"already-due-at-start"}

# The fleet's lease settings (FleetMembership.Settings): a renewed lease lasts LEASE on the
# database's clock, and every node renews it and reads the fleet every ROUND.
LEASE = 1.5
ROUND = 0.25
# A shard whose owner was killed or paused must have a new owner taking its events before the
# owner's lease could have run out twice: its lease runs out at most LEASE after its last renewal
# (a killed node's life lock goes at once, so it is normally noticed within a ROUND), another node
# notices within a ROUND, and a second LEASE is the allowance for the takeover's own work (the
# claim, reading the shards' trials, the fenced commit) on a busy machine. Anything later means
# the failover did not work, not that the machine was slow.
FAILOVER_BOUND = 2 * LEASE + ROUND


class Watcher(threading.Thread):
    """A Watch on one node from the start of the log (`after` the origin), kept open through
    the whole run: it records every event the node streams, with its cursor. The node is one
    no fault touches, so it must see every node's events, in cursor order, with no gap."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.path = path
        self.events = []  # (cursor, event id)
        self.problem = None
        self.connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.connection.connect(path)
        call = {"method": "io.trialwatch.Trials.Watch", "parameters": {"after": "0" * 16}, "more": True}
        self.connection.sendall(json.dumps(call).encode() + b"\0")

    def run(self):
        try:
            for complete in frames(self.connection):
                for reply in complete:
                    if "error" in reply:
                        self.problem = f"{reply['error']} {json.dumps(reply.get('parameters', {}))[:200]}"
                        return
                    event = reply.get("parameters", {}).get("event")
                    if event:
                        self.events.append((event["cursor"], event["id"]))
        except OSError as error:
            self.problem = self.problem or str(error)

    def stop(self):
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.join(10)
        self.connection.close()


def ms(seconds):
    return f"{seconds * 1000:.1f} ms"


def sample(ids, count=5):
    ids = sorted(ids)
    return ", ".join(ids[:count]) + (", ..." if len(ids) > count else "")


def check_watch(report, name, watcher, rows):
    """Every event in the ledger reached the Watch on `name`, each once, in cursor order."""
    cursors = [cursor for cursor, _ in watcher.events]
    seen = [event_id for _, event_id in watcher.events]
    missing = {row.event_id for row in rows} - set(seen)
    in_order = all(a < b for a, b in zip(cursors, cursors[1:]))
    report.check("watch", not missing and in_order and len(seen) == len(set(seen)) and not watcher.problem,
                 f"a Watch on {name} streamed {len(seen)} events of every node, {len(missing)} of the ledger's "
                 f"missing, {len(seen) - len(set(seen))} twice, cursors {'in order' if in_order else 'OUT OF ORDER'}"
                 + (f" (missing: {sample(sorted(missing))})" if missing else "")
                 + (f"; ended with {watcher.problem}" if watcher.problem else ""))


def analyse(report, profile, t0, expected, rows, twice_in_ledger, history, logs, faults, problems, exits):
    ledger = {row.event_id: row for row in rows}
    expected_ids = {event.event_id for event in expected}
    lost, skipped, fired = analysis.classify(expected, ledger, ALLOWED_SKIPS)
    report.check("lost", not lost,
                 f"{len(lost)} of {len(expected)} expected events lost, {len(fired)} fired, {len(skipped)} skipped"
                 + (f" (lost: {sample(lost)})" if lost else ""))
    for event_id, reason in sorted(skipped.items())[:20]:
        report.info(f"skipped {event_id}: {reason}")
    unexpected = [row.event_id for row in rows if row.event_id not in expected_ids]
    if unexpected:
        report.info(f"{len(unexpected)} ledger rows for events the workload did not make: {sample(unexpected)}")

    delivered_by = {}  # event id -> [node]
    for name, ids in logs.items():
        for event_id in ids:
            delivered_by.setdefault(event_id, []).append(name)
    repeats = {event_id: nodes for event_id, nodes in delivered_by.items() if len(nodes) > 1}
    report.check("twice", not twice_in_ledger,
                 f"{len(twice_in_ledger)} event ids more than once in the ledger"
                 + (f" ({sample([event_id for event_id, _ in twice_in_ledger])})" if twice_in_ledger else "")
                 + f"; {len(repeats)} delivered more than once in the logs (at least once is allowed)")

    fired_all = {row.event_id for row in rows if row.outcome == "fired"}
    undelivered = fired_all - delivered_by.keys()
    strangers = delivered_by.keys() - ledger.keys()
    unmarked = [row.event_id for row in rows if row.delivered is None]
    report.check("delivered", not undelivered and not strangers and not unmarked,
                 f"{len(fired_all) - len(undelivered)} of {len(fired_all)} fired events in the nodes' logs, "
                 f"{len(unmarked)} ledger rows without delivered_at, "
                 f"{sum(len(ids) for ids in logs.values())} delivery lines, {len(strangers)} of them for events "
                 f"not in the ledger"
                 + (f" (not delivered: {sample(undelivered)})" if undelivered else "")
                 + (f" (not in the ledger: {sample(strangers)})" if strangers else "")
                 + (f" (without delivered_at: {sample(unmarked)})" if unmarked else ""))

    limit = FAILOVER_BOUND
    for kind, name in (("kill", "failover_kill"), ("stop", "failover_stop")):
        parts, ok, measured = [], True, 0
        for number, fault in enumerate(fault for fault in faults if fault.kind == kind):
            result = analysis.failover(fault, rows)
            if not fault.shards:
                parts.append(f"#{number + 1}: {fault.victim} owned no shard")
            elif result is None:
                parts.append(f"#{number + 1}: no event due after it in its {len(fault.shards)} shards")
            else:
                row, seconds = result
                measured += 1
                ok = ok and seconds <= limit
                parts.append(f"#{number + 1}: {ms(seconds)} ({row.event_id} of shard {row.shard}, taken by {row.node})")
        expected_faults = len(profile.kills) if kind == "kill" else 1
        faults_seen = sum(1 for fault in faults if fault.kind == kind)
        if faults_seen != expected_faults or measured == 0:
            ok = False
        report.check(name, ok, f"limit {ms(limit)}, {measured} of {faults_seen} measured; " + "; ".join(parts))

    stop = next((fault for fault in faults if fault.kind == "stop"), None)
    if stop is None or stop.end is None:
        report.check("stale_owner", False, "the SIGSTOP did not run")
    else:
        stale = analysis.stale_rows(rows, history, STOPPED, stop.start + LEASE, stop.end + 1.0, stop.start, stop.end)
        changed = {change.shard for change in history if stop.start <= change.changed_at <= stop.end}
        report.check("stale_owner", not stale,
                     f"{len(stale)} events taken by {STOPPED} under an epoch it had lost "
                     f"({len(changed)} shards changed owner during the stop)"
                     + (f": {sample([row.event_id for row in stale])}" if stale else ""))

    # Information only: the lateness target is a figure of make bench-fleet.
    lateness = analysis.untouched_lateness(rows, faults, history)
    if lateness:
        counted = sorted((row.taken - row.due, row) for row in analysis.untouched_rows(rows, faults, history))
        for seconds, row in counted[-3:][::-1]:
            report.info(f"latest counted: {row.event_id} (shard {row.shard}, due T0{row.due - t0:+.3f} s, "
                        f"taken by {row.node}) {ms(seconds)}")
        report.info(f"lateness of the events no fault touched: p50 {ms(analysis.percentile(lateness, 0.5))}, "
                    f"p99 {ms(analysis.percentile(lateness, 0.99))}, max {ms(max(lateness))} over "
                    f"{len(lateness)} events (a figure, not a check: make bench-fleet)")

    bad = {name: (status, why) for name, (status, why) in exits.items() if status != 0}
    report.check("nodes_exit", not bad and not problems,
                 ", ".join(f"{name} {status}" + (f" ({why})" if why else "") for name, (status, why) in exits.items())
                 + ("; " + "; ".join(problems) if problems else ""))
