#!/usr/bin/python3
# The fleet figures of `make bench` (`make bench-fleet`): three trialwatchd nodes in fleet mode
# on a private PostgreSQL, and side by side, on the same cluster and the same workloads, a
# db-scheduler-style poller (poller.py) with three workers polling every 1 s and every 10 s.
#
#   fleet_bench.py --daemon PATH/trialwatchd --scratch DIR [--quick] [--keep]
#
# Every figure on a line of its own, `name: value unit`, once everything ran; nothing else on
# stdout (progress on stderr). The pieces of the fleet fault test (Tests/fleet/: the cluster and
# the ledger in cluster.py; the nodes, their configuration, the Varlink calls and the start of a
# run in nodes.py; the workload and the fault runner in scenario.py; analysis.py) are imported,
# not copied. Here: fleet_figures.py (the figures' names and lines, the measures; unit-tested by
# test_fleet_bench.py), systems.py (the fleet and the poller, the statement counts), phases.py
# (the phases) and this driver. Per system (fleet, poller1s, poller10s):
#   idle          statements per second the database runs with nothing due (fleet: also per node)
#   steady        events at a steady rate: lateness p50/p99 (taken - due) and statements per second
#                 (fleet: also per event, every statement of the window over the events in it)
#   loaded        fleet only: the steady phase again beside two busy loops (`yes > /dev/null`)
#   burst         N events due at one instant: events / (last fired - due), fired: the fleet's
#                 ledger delivered_at (its taken_at precedes the committing transaction), the
#                 poller's execution time
#   failover      the victim's first orphaned event's (taken - due) after a SIGKILL (fleet also
#                 SIGSTOP), the median over a few; poller: a worker killed while it holds jobs
#   faults        steady events while node3 is SIGKILLed twice and node2 SIGSTOPped for 5 s
#                 (scenario.FaultRunner, without its PostgreSQL restart; the poller's workers
#                 carry the nodes' names): event ids taken more than once (fleet: ledger rows,
#                 poller: executions rows), and seen twice in the nodes' or workers' logs (a worker
#                 logs a job before the transaction that records it)
#   get status    fleet only, last: 1,000,000 ended trials written into the database, then the
#                 median time of GetStatus (it counts every trial of the fleet)
# The poller's failover and faults run for poller1s only (its rescue takes 4 heartbeats: 40 s
# and more at 10 s). Full run: 30 s idle, 60 s at 100 events/s, 20,000 at once, 3 kills and 3
# stops, 30 s of faults, 1,000,000 trials (about 10 minutes); --quick: 10 s, 15 s, 2,000, 1 and 1,
# 12 s, 20,000.
import os
import statistics
import sys
import time
from collections import namedtuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "Tests", "fleet"))

# nodes first: with cluster, it puts bench/peers (common) on the path.
from nodes import arguments, prepare, read_deliveries  # noqa: E402
from common import run_main  # noqa: E402
from fleet_figures import check_output, duplicates, figure_line, figure_names, first_taken  # noqa: E402
from phases import (phase_burst, phase_faults, phase_fleet_failover, phase_get_status, phase_idle,  # noqa: E402
                    phase_loaded, phase_poller_failover, phase_steady)
from scenario import Profile  # noqa: E402
from systems import Fleet, PollerSystem, Statements, note  # noqa: E402
import poller as pollers  # noqa: E402

Bench = namedtuple("Bench", "idle rate steady burst kills stops faults big")
# faults: scenario.Profile for FaultRunner (offsets after the first due event; no pg restart).
FULL = Bench(idle=30.0, rate=100, steady=60.0, burst=20_000, kills=3, stops=3,
             faults=Profile(trials=0, burst=0, lead=0.0, window=30.0, kills=(5.0, 20.0),
                            restart_after=2.0, stop_at=11.0, stop_for=5.0, pg_at=None),
             big=1_000_000)
QUICK = Bench(idle=10.0, rate=100, steady=15.0, burst=2_000, kills=1, stops=1,
              faults=Profile(trials=0, burst=0, lead=0.0, window=12.0, kills=(2.0, 10.0),
                             restart_after=2.0, stop_at=4.0, stop_for=5.0, pg_at=None),
              big=20_000)
POLLERS = ((1.0, "poller1s"), (10.0, "poller10s"))

# --- The run -------------------------------------------------------------------------------


def run_fleet(cluster, statements, scratch, daemon, bench, figures):
    fleet = Fleet(cluster, scratch, daemon)
    fleet.start()
    kind = statements.kind
    idle = phase_idle(fleet, statements, bench)
    figures["fleet_db_%s_idle_per_s" % kind] = idle
    figures[f"fleet_db_{kind}_idle_per_node_per_s"] = idle / len(fleet.nodes)
    p50, p99, loaded = phase_steady(fleet, statements, bench)
    figures["fleet_lateness_p50"], figures["fleet_lateness_p99"] = p50, p99
    figures[f"fleet_db_{kind}_loaded_per_s"] = loaded
    # Everything the database ran while the events fell due, idle rounds included, per event.
    figures[f"fleet_db_{kind}_per_event"] = loaded / bench.rate
    figures["fleet_lateness_p50_loaded"], figures["fleet_lateness_p99_loaded"] = phase_loaded(fleet, statements, bench)
    figures["fleet_fires_per_s"] = phase_burst(fleet, bench)
    failovers = phase_fleet_failover(fleet, bench)
    figures["fleet_failover_kill"] = statistics.median(failovers["kill"]) if failovers["kill"] else -1.0
    figures["fleet_failover_stop"] = statistics.median(failovers["stop"]) if failovers["stop"] else -1.0
    events, rows = phase_faults(fleet, fleet.nodes, fleet.db, cluster, bench)
    ids = {event_id for event_id, _ in events}
    figures["fleet_duplicates_under_faults"] = duplicates(row[0] for row in rows)
    delivered = []
    for node in fleet.nodes:
        delivered += [event_id for event_id in read_deliveries(node) if event_id in ids]
    figures["fleet_redeliveries_under_faults"] = duplicates(delivered)
    note(f"fleet faults: {len(first_taken(rows))} of {len(ids)} taken, {len(delivered)} delivery lines")
    statements.top("trialwatch")
    figures["fleet_get_status_ms_1m"] = phase_get_status(fleet, bench)
    fleet.halt()


def run_poller(cluster, statements, scratch, interval, name, bench, figures):
    system = PollerSystem(cluster, scratch, interval, name)
    system.start()
    kind = statements.kind
    figures[f"{name}_db_{kind}_idle_per_s"] = phase_idle(system, statements, bench)
    p50, p99, loaded = phase_steady(system, statements, bench)
    figures[f"{name}_lateness_p50"], figures[f"{name}_lateness_p99"] = p50, p99
    figures[f"{name}_db_{kind}_loaded_per_s"] = loaded
    figures[f"{name}_fires_per_s"] = phase_burst(system, bench)
    if name == "poller1s":
        failovers = phase_poller_failover(system, bench)
        figures[f"{name}_failover_kill"] = statistics.median(failovers) if failovers else -1.0
        events, rows = phase_faults(system, system.poller.workers, pollers.NoShards(), cluster, bench)
        figures[f"{name}_duplicates_under_faults"] = duplicates(row[0] for row in rows)
        ids = {event_id for event_id, _ in events}
        fires = [key for worker in system.poller.workers for key in worker.fires() if key in ids]
        figures[f"{name}_redeliveries_under_faults"] = duplicates(fires)
        note(f"{name} faults: {len(first_taken(rows))} of {len(events)} executed, {len(rows)} executions")
    statements.top(name, 5)
    system.halt()


def main():
    parser = arguments("The fleet figures: three trialwatchd nodes against a db-scheduler-style poller on the "
                       "same private PostgreSQL.", "measure", ".build-bench/fleet-bench",
                       "small workloads (under 3 minutes)")
    args = parser.parse_args()
    bench = QUICK if args.quick else FULL
    began = time.time()
    daemon, scratch, cluster = prepare(args, note)
    statements = Statements(cluster)
    note(f"PostgreSQL {cluster.version}, counting {statements.kind}")

    figures = {}
    run_fleet(cluster, statements, scratch, daemon, bench, figures)
    for interval, name in POLLERS:
        run_poller(cluster, statements, scratch, interval, name, bench, figures)

    for name, unit in figure_names(statements.kind):
        print(figure_line(name, figures[name], unit), flush=True)
    note(f"done in {time.time() - began:.0f} s")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        # fleet_bench.py --check OUTPUT: the sanity check of bench-fleet-check
        with open(sys.argv[2]) as output:
            found = check_output(output.readlines())
        for problem in found:
            print(f"FAIL: bench-fleet-check: {problem}", file=sys.stderr)
        sys.exit(1 if found else 0)
    run_main(main, "fleet-bench")
