#!/usr/bin/python3
# The fleet fault test (`make fleet-test`): three trialwatchd nodes sharing their trials in a
# private PostgreSQL cluster, a workload of reminders and expiries over about a minute, and
# faults in the window: node3 SIGKILLed and restarted five times, node2 SIGSTOPped for 5 s,
# PostgreSQL restarted once. Then the ledger, the shard history and the nodes' logs are
# checked: nothing lost, nothing taken twice, every fired event delivered, failover (within a
# bound that follows from the lease, not from a measured run), no stale owner firing, and a clean
# SIGTERM exit. The lateness of the untouched events is printed, never checked: it is a figure of
# `make bench-fleet`, where its target lives; a test may not fail because the machine is busy.
#
#   fleet_test.py --daemon PATH/trialwatchd --scratch DIR [--quick] [--keep]
#
# One line per check, `PASS name: detail` or `FAIL name: detail`, then `N passed, N failed`;
# the status is 1 when a check failed, 2 when the harness itself could not run.
#
# What the test assumes of a node (standin_node.py does all of it, to check the harness):
# - it takes [Store] Backend=postgresql and [PostgreSQL] Connection=, NodeName=, Shards= without
#   a warning, creates the trialwatch schema itself, and answers GetStatus once it can take calls;
# - every shard gets an owner within 30 s of the three nodes answering, spread so that node2
#   owns some; a restarted node3 gets shards again (else the later kills measure nothing);
# - StartTrial works on any node for any shard and its reply carries trial.id and trial.revision;
# - the tables and columns of the SQL section of cluster.py, times as timestamptz, ledger.node the
#   taking node's NodeName=, shard_history.owner a node name, one history row per owner change;
# - each taken event (fired or skipped) is one notice line on stderr with `event=<id>` metadata,
#   and ledger.delivered_at is set once it is; SIGTERM ends a node with status 0.
#
# The parts: cluster.py (PostgreSQL and every query), nodes.py (the nodes, their Varlink calls,
# the start of a run), scenario.py (the two sizes, the workload, the faults), checks.py (the
# Watch and the checks) and analysis.py (the analysis, unit-tested by test_analysis.py).
# bench/fleet/ runs the same cluster, nodes and faults for the fleet figures.
import os
import random
import time

# nodes first: with cluster, it puts bench/peers (common) on the path.
from nodes import arguments, check_alive, make_nodes, note, prepare, read_deliveries, start_nodes
from checks import Watcher, analyse, check_watch
from cluster import SQL_LEDGER_TWICE, SQL_UNDELIVERED, Database, tail
from common import BenchError, Report, on_cleanup, run_main
from scenario import FULL, QUICK, FaultRunner, sleep_until, start_trials, workload

SETTLE_TIMEOUT = 60.0  # after the last due time + 10 s, for the undelivered count to reach 0


def main():
    parser = arguments("The fleet fault test: three trialwatchd nodes on a private PostgreSQL, nodes "
                       "killed and stopped and the cluster restarted under load.", "test", ".build-fleet",
                       "a small, faster variant")
    parser.add_argument("--seed", type=int, default=None, help="the workload's random seed")
    args = parser.parse_args()
    profile = QUICK if args.quick else FULL
    daemon, scratch, cluster = prepare(args, note)
    database = Database(cluster)
    on_cleanup(database.close)
    note(f"PostgreSQL {cluster.version} on {cluster.directory}")

    nodes = make_nodes(scratch, daemon, cluster)
    owners = start_nodes(nodes, database)
    note("nodes ready; shards per owner: " + ", ".join(f"{name} {count}" for name, count in owners.items()))

    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    t0 = time.time() + profile.lead
    specs = workload(profile, t0, random.Random(seed))
    started = time.time()
    expected = start_trials(nodes, specs)
    took = time.time() - started
    with open(os.path.join(scratch, "expected.tsv"), "w") as file:
        for event in expected:
            file.write(f"{event.event_id}\t{event.trial_id}\t{event.kind}\t{event.due:.6f}\n")
    note(f"{len(specs)} trials started in {took:.1f} s (seed {seed}), {len(expected)} events expected; "
         f"T0 in {t0 - time.time():.1f} s")
    if time.time() > t0:
        note(f"warning: the trials took longer than the {profile.lead:.0f} s lead: early reminders may be "
             "skipped as already due")
    check_alive(nodes)

    watcher = Watcher(nodes[0].socket)
    watcher.start()
    runner = FaultRunner(profile, t0, nodes, cluster, database)
    runner.run()

    last_due = max(event.due for event in expected)
    sleep_until(last_due + 10.0)
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while True:
        try:
            undelivered = database.query(SQL_UNDELIVERED)[0][0]
        except BenchError as error:
            undelivered = str(error)
        if undelivered == 0:
            break
        if time.monotonic() > deadline:
            note(f"still {undelivered} undelivered ledger rows {SETTLE_TIMEOUT:.0f} s after the last due time + 10 s")
            break
        time.sleep(0.2)

    # The Watch streams what the log readers of node1 read: wait until it has every event of
    # the ledger (or stopped, or the settle time is over; the watch check then says what is
    # missing).
    wanted = {row[0] for row in database.query("SELECT event_id FROM trialwatch.ledger")}
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while watcher.is_alive() and time.monotonic() < deadline:
        if wanted <= {event_id for _, event_id in list(watcher.events)}:
            break
        time.sleep(0.1)
    watcher.stop()
    exits = {}
    for node in nodes:
        if node.process.poll() is not None:
            runner.problems.append(f"{node.name} had exited with {node.process.returncode} before the SIGTERM: "
                                   f"{tail(node.log, 3)}")
        exits[node.name] = node.terminate()

    rows = database.ledger()
    twice = database.query(SQL_LEDGER_TWICE)
    history = database.history()
    database.close()
    logs = {node.name: read_deliveries(node) for node in nodes}

    report = Report()
    analyse(report, profile, t0, expected, rows, twice, history, logs, runner.faults, runner.problems, exits)
    check_watch(report, nodes[0].name, watcher, rows)
    print(f"{report.passed} passed, {report.failed} failed", flush=True)
    if report.failed:
        note("rerun with --keep (make fleet-test FLEET_ARGS=--keep) to keep the nodes' logs and the cluster"
             if not args.keep else f"the nodes' logs and the cluster in {scratch}")
    return 1 if report.failed else 0


if __name__ == "__main__":
    run_main(main, "fleet-test")
