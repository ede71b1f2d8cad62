#!/usr/bin/python3
# The failover test (`make fleet-test`, after fleet_test.py): three trialwatchd nodes on a
# PostgreSQL primary and its streaming standby (two servers on this machine, replicas.py),
# connected to both with `host=A,B ... target_session_attrs=read-write`. Under a steady load
# (trials due through the run, a client per node starting trials one at a time) the primary is
# stopped, the standby promoted a second later and the old primary's server made a standby of
# the new one, four times: with synchronous replication `-m fast`, then `-m immediate`; then
# with asynchronous replication, the same two (--quick: the asynchronous `-m immediate` only).
#
# The synchronous switches are checked: every expected event fired once (0 lost, 0 taken
# twice, redeliveries only with the same EVENT_ID), every acknowledged start kept, commands
# failing only during a switch and, once the daemon names the error, only as StoreUnavailable,
# the fleet firing again within 5 s of each promotion, a clean exit. The asynchronous ones are
# a measurement of what a failover loses (figures `name: value unit`), checked only for the
# fleet firing again. What a switch lost is found by starting the stopped primary's data folder
# alone after the run and comparing its ledger with the new primary's.
#
#   failover_test.py --daemon PATH/trialwatchd --scratch DIR [--quick] [--keep] [--seed N]
#
# One line per check, `PASS name: detail` or `FAIL name: detail`, the figures, then `N passed,
# N failed`; the status is 1 when a check failed, 2 when the harness itself could not run.
import os
import random
import time
from collections import Counter

import analysis
import failover_analysis as fa
from nodes import Node, NODES, arguments, note, prepare_run, read_deliveries, start_nodes  # first: bench/peers on the path
from cluster import SQL_LEDGER_TWICE, SQL_UNDELIVERED, Database, tail
from checks import ALLOWED_SKIPS
from common import BenchError, Report, on_cleanup, run_main
from failover_load import (FULL, QUICK, Switcher, interface_errors, join_commanders, start_commanders,
                           workload)
from replicas import Pair
from scenario import Spec, expected_events, sleep_until, start_trials

SETTLE_TIMEOUT = 60.0  # after the last due time + 3 s, for the undelivered count to reach 0
SQL_RECORDS = "SELECT event_id, node, epoch, taken_at::text, delivered_at IS NOT NULL FROM trialwatch.ledger"
SQL_SUBJECTS = "SELECT subject FROM trialwatch.trial WHERE starts_with(subject, 'cmd-')"


def figure(switch, name, value, unit):
    text = str(value) if isinstance(value, int) else f"{value:.2f}"
    print(f"failover_{switch}_{name}: {text} {unit}", flush=True)


def run(daemon, scratch, profile, seed):
    pair = Pair(os.path.join(scratch, "postgresql"), profile.switches[0][2])
    pair.start()
    database = Database(pair)
    on_cleanup(database.close)
    nodes = [Node(name, os.path.join(scratch, name), daemon, pair.connection_string()) for name in NODES]
    owners = start_nodes(nodes, database)
    named = interface_errors(nodes[0].socket)
    note(f"nodes ready on {pair.primary.name} with its standby {pair.standby.name}; shards per owner: "
         + ", ".join(f"{name} {count}" for name, count in owners.items()))

    t0 = time.time() + profile.lead
    specs = workload(profile, t0, random.Random(seed))
    expected = start_trials(nodes, specs)
    commanders = start_commanders(nodes, profile, t0, seed)
    switcher = Switcher(profile, t0, pair, nodes)
    switcher.run()
    sleep_until(switcher.switches[-1].promote_done + fa.AFTER_PROMOTION)
    join_commanders(commanders)
    commands = [command for commander in commanders for command in commander.commands]
    owner_of = {}  # expected event id -> the subject of its commanded trial
    for commander in commanders:
        for subject, (trial, ends) in commander.trials.items():
            for event in expected_events(Spec(subject, ends, []), trial):
                expected.append(event)
                owner_of[event.event_id] = subject
    note(f"{len(specs)} trials started before T0, {len(commands)} commands during the run; "
         f"{len(expected)} events expected")

    sleep_until(max(event.due for event in expected) + 3.0)
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while time.monotonic() < deadline:
        try:
            if database.query(SQL_UNDELIVERED)[0][0] == 0:
                break
        except BenchError:
            pass
        time.sleep(0.2)
    exits = {node.name: node.terminate() for node in nodes}
    rows = database.ledger()
    twice = database.query(SQL_LEDGER_TWICE)
    new_records = [fa.Record(*row) for row in database.query(SQL_RECORDS)]
    subjects = {subject for (subject,) in database.query(SQL_SUBJECTS)}
    database.close()
    old = [[fa.Record(*row) for row in pair.read_stopped(index, [SQL_RECORDS])[0]]
           for index in range(len(pair.stopped))]
    pair.halt()
    logs = {node.name: read_deliveries(node) for node in nodes}
    problems = switcher.problems + [commander.problem for commander in commanders if commander.problem]
    return dict(expected=expected, owner_of=owner_of, rows=rows, twice=twice, commands=commands,
                subjects=subjects, new_records=new_records, old=old, switches=switcher.switches, logs=logs,
                exits=exits, named=named, problems=problems, nodes=nodes)


def by_switch(items, switch_of):
    """{switch name or None: [items]}, by `switch_of(item)` (a Switch or None)."""
    found = {}
    for item in items:
        switch = switch_of(item)
        found.setdefault(None if switch is None else fa.name(switch), []).append(item)
    return found


def strict(key, switches):
    """Whether losses put on `key` (a switch name, or None: no switch) fail the test: all but
    those of an asynchronous switch, which are measured."""
    return key is None or any(fa.name(switch) == key and switch.synchronous for switch in switches)


def report(checks, run):
    switches, rows, commands = run["switches"], run["rows"], run["commands"]
    ledger = {row.event_id: row for row in rows}
    lost, skipped, fired = analysis.classify(run["expected"], ledger, ALLOWED_SKIPS)
    acknowledged = [command for command in commands if command.error is None]
    missing = fa.missing_starts(commands, run["subjects"])
    acked_at = {command.subject: command.replied for command in acknowledged}
    # An acknowledged start lost, and its events, go to the switch that came after its reply.
    missing_by = by_switch(missing, lambda command: fa.losing_switch(command.replied, switches))
    lost_by = by_switch(lost, lambda event_id: fa.losing_switch(acked_at[run["owner_of"][event_id]], switches)
                        if event_id in run["owner_of"] and run["owner_of"][event_id] not in run["subjects"] else None)
    failing = [event_id for key, ids in lost_by.items() if strict(key, switches) for event_id in ids]
    checks.check("failover_lost", not failing,
                 f"{len(lost)} of {len(run['expected'])} expected events lost ("
                 + ", ".join(f"{key or 'no switch'} {len(ids)}" for key, ids in sorted(lost_by.items(), key=str))
                 + f"{'none' if not lost else ''}; asynchronous switches measured), {len(fired)} fired, "
                 f"{len(skipped)} skipped" + (f" (lost: {', '.join(sorted(failing)[:5])})" if failing else ""))
    failing = [command for key, items in missing_by.items() if strict(key, switches) for command in items]
    kept = fa.unacknowledged_kept(commands, run["subjects"])
    checks.check("failover_acknowledged", not failing,
                 f"{len(missing)} of {len(acknowledged)} acknowledged starts missing afterwards ("
                 + (", ".join(f"{key or 'no switch'} {len(items)}"
                              for key, items in sorted(missing_by.items(), key=str)) or "none") + f"); {len(kept)} failed starts kept all the same (their reply was lost with the "
                 "connection)" + (f" (missing: {', '.join(c.subject for c in failing[:5])})" if failing else ""))

    counts = Counter(event_id for ids in run["logs"].values() for event_id in ids)
    redelivered = [event_id for event_id, count in counts.items() if count > 1]
    per_switch = []
    for old_records, switch in zip(run["old"], switches):
        gone = fa.lost_records(old_records, run["new_records"])
        per_switch.append((switch, gone, fa.fired_twice(gone, counts)))
    failing = [record for switch, _, twice in per_switch if switch.synchronous for record in twice]
    checks.check("failover_twice", not run["twice"] and not failing,
                 f"{len(run['twice'])} event ids more than once in the ledger; "
                 + "; ".join(f"{fa.name(switch)}: {len(gone)} ledger records of the old primary lost, {len(twice)} of "
                             f"them delivered before and taken again" for switch, gone, twice in per_switch)
                 + f"; {len(redelivered)} events delivered more than once, with their ids (at least once is allowed)")

    fired_all = {row.event_id for row in rows if row.outcome == "fired"}
    undelivered = fired_all - counts.keys()
    unmarked = [row.event_id for row in rows if row.delivered is None]
    checks.check("failover_delivered", not undelivered and not unmarked,
                 f"{len(fired_all) - len(undelivered)} of {len(fired_all)} fired events in the nodes' logs, "
                 f"{len(unmarked)} ledger rows without delivered_at"
                 + (f" (not delivered: {', '.join(sorted(undelivered)[:5])})" if undelivered else ""))

    succeeded, by_name, outside = fa.command_outcomes(commands, switches)
    names = ", ".join(f"{name} {count}" for name, count in sorted(by_name.items())) or "none"
    checks.check("failover_commands", not outside,
                 f"{len(succeeded)} of {len(commands)} commands succeeded; failed: {names}; "
                 f"{len(outside)} failed outside a switch (stop to promotion + {fa.AFTER_PROMOTION:.0f} s)"
                 + (f" ({outside[0].subject}: {outside[0].error})" if outside else ""))
    if fa.STORE_UNAVAILABLE in run["named"]:
        wrong = {name: count for name, count in by_name.items() if name != fa.STORE_UNAVAILABLE}
        example = next((c for c in commands if c.error is not None and c.error != fa.STORE_UNAVAILABLE), None)
        checks.check("failover_errors", not wrong, f"every failed command named {fa.STORE_UNAVAILABLE}"
                     if not wrong else f"failed commands not named {fa.STORE_UNAVAILABLE}: {wrong}; the first, "
                     f"{example.subject} on {example.node}: {example.error} {example.detail}")
    else:
        checks.info(f"failover_errors waits for the daemon to name the error: io.trialwatch declares no "
                    f"StoreUnavailable (failed: {names})")

    for switch, gone, twice in per_switch:
        catch_up, first, count = fa.recovery(switch, rows)
        follow = fa.followed(switch)
        key = fa.name(switch)
        checks.check(f"failover_recovery_{key}", catch_up is not None and catch_up <= fa.RECOVERY_BOUND
                     and follow is not None,
                     f"limit {fa.RECOVERY_BOUND:.0f} s after the promotion's request; {count} events due before it "
                     "taken after the stop, the last " + ("-" if catch_up is None else f"{catch_up:.2f} s")
                     + " after it; first taking " + ("-" if first is None else f"{first:.2f} s")
                     + "; every node renewing on the new primary " + ("- (not all did)" if follow is None
                                                                         else f"{follow:.2f} s")
                     + f"; stop {switch.stop_done - switch.stop_start:.2f} s, promotion "
                     f"{switch.promote_done - switch.promote_start:.2f} s")
        figure(key, "fire_again", catch_up if catch_up is not None else -1.0, "s")
        figure(key, "nodes_follow", follow if follow is not None else -1.0, "s")
        figure(key, "records_lost", len(gone), "events")
        figure(key, "fired_twice", len(twice), "events")
        figure(key, "acknowledged_starts_lost", len(missing_by.get(key, [])), "trials")
        figure(key, "events_lost", len(lost_by.get(key, [])), "events")
    figure("all", "commands", len(commands), "commands")
    figure("all", "commands_failed", len(commands) - len(acknowledged), "commands")
    figure("all", "redelivered", len(redelivered), "events")

    bad = {name: (status, why) for name, (status, why) in run["exits"].items() if status != 0}
    checks.check("failover_nodes_exit", not bad and not run["problems"],
                 ", ".join(f"{name} {status}" + (f" ({why})" if why else "") for name, (status, why) in
                           run["exits"].items()) + ("; " + "; ".join(run["problems"]) if run["problems"] else ""))
    if bad:
        for node in run["nodes"]:
            note(f"{node.name}'s log: {tail(node.log, 5)}")


def main():
    parser = arguments("The failover test: three trialwatchd nodes on a PostgreSQL primary and standby, the "
                       "primary stopped and the standby promoted under load.", "test", ".build-fleet",
                       "a small, faster variant")
    parser.add_argument("--seed", type=int, default=None, help="the workload's random seed")
    args = parser.parse_args()
    profile = QUICK if args.quick else FULL
    daemon, scratch = prepare_run(args, note, prefix="failover-")
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    note(f"seed {seed}")
    checks = Report()
    report(checks, run(daemon, scratch, profile, seed))
    print(f"{checks.passed} passed, {checks.failed} failed", flush=True)
    if checks.failed:
        note("rerun with --keep (make fleet-test FLEET_ARGS=--keep) to keep the nodes' logs and the servers"
             if not args.keep else f"the nodes' logs and the servers in {scratch}")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    run_main(main, "failover-test")
