#!/usr/bin/python3
# The fleet figures of `make bench` (`make bench-fleet`): three trialwatchd nodes in fleet mode
# on a private PostgreSQL, and side by side, on the same cluster and the same workloads, a
# db-scheduler-style poller (poller.py) with three workers polling every 1 s and every 10 s.
#
#   fleet_bench.py --daemon PATH/trialwatchd --scratch DIR [--quick] [--keep]
#
# Every figure on a line of its own, `name: value unit`, once everything ran; nothing else on
# stdout (progress on stderr). The pieces of the fleet fault test (Tests/fleet/: the cluster, the
# nodes, their configuration, the Varlink calls, the workload, the ledger, the fault runner and
# analysis.py) are imported, not copied. Per system (fleet, poller1s, poller10s):
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
#                 (fleet_test.FaultRunner, without its PostgreSQL restart; the poller's workers
#                 carry the nodes' names): event ids taken more than once (fleet: ledger rows,
#                 poller: executions rows), and seen twice in the nodes' or workers' logs (a worker
#                 logs a job before the transaction that records it)
#   get status    fleet only, last: 1,000,000 ended trials written into the database, then the
#                 median time of GetStatus (it counts every trial of the fleet)
# The poller's failover and faults run for poller1s only (its rescue takes 4 heartbeats: 40 s
# and more at 10 s). Full run: 30 s idle, 60 s at 100 events/s, 20,000 at once, 3 kills and 3
# stops, 30 s of faults, 1,000,000 trials (about 10 minutes); --quick: 10 s, 15 s, 2,000, 1 and 1,
# 12 s, 20,000.
import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import namedtuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "Tests", "fleet"))

import fleet_test  # noqa: E402  (puts bench/peers on the path)
import analysis  # noqa: E402
from analysis import Fault  # noqa: E402
from common import BenchError, on_cleanup, run_main  # noqa: E402
import poller as pollers  # noqa: E402

Bench = namedtuple("Bench", "idle rate steady burst kills stops faults big")
# faults: fleet_test.Profile for FaultRunner (offsets after the first due event; no pg restart).
FULL = Bench(idle=30.0, rate=100, steady=60.0, burst=20_000, kills=3, stops=3,
             faults=fleet_test.Profile(trials=0, burst=0, lead=0.0, window=30.0, kills=(5.0, 20.0),
                                       restart_after=2.0, stop_at=11.0, stop_for=5.0, pg_at=None),
             big=1_000_000)
QUICK = Bench(idle=10.0, rate=100, steady=15.0, burst=2_000, kills=1, stops=1,
              faults=fleet_test.Profile(trials=0, burst=0, lead=0.0, window=12.0, kills=(2.0, 10.0),
                                        restart_after=2.0, stop_at=4.0, stop_for=5.0, pg_at=None),
              big=20_000)
POLLERS = ((1.0, "poller1s"), (10.0, "poller10s"))
BUSY_LOOPS = 2  # processes keeping a core busy beside the fleet in its loaded steady phase
FAILOVER_EVENTS = 100  # per fault, due from 1 ms after it every 5 ms
POLLER_FAILOVER_JOBS = 300  # due at one instant; a worker is killed as soon as one holds some

# --- The figures: names, units, formatting (pure) ------------------------------------------


def figure_names(statements="statements"):
    """[(name, unit)] in the order they are printed. statements: 'statements' when
    pg_stat_statements counts them, 'transactions' when pg_stat_database's counters stand in."""
    per_s = f"{statements}/s"
    names = []
    for system in ("fleet", "poller1s", "poller10s"):
        names += [(f"{system}_fires_per_s", "events/s"), (f"{system}_lateness_p50", "ms"),
                  (f"{system}_lateness_p99", "ms"), (f"{system}_db_{statements}_idle_per_s", per_s),
                  (f"{system}_db_{statements}_loaded_per_s", per_s)]
        if system == "fleet":
            names += [("fleet_lateness_p50_loaded", "ms"), ("fleet_lateness_p99_loaded", "ms"),
                      (f"fleet_db_{statements}_idle_per_node_per_s", per_s),
                      (f"fleet_db_{statements}_per_event", f"{statements}/event"),
                      ("fleet_failover_kill", "ms"), ("fleet_failover_stop", "ms"),
                      ("fleet_duplicates_under_faults", "events"), ("fleet_redeliveries_under_faults", "events"),
                      ("fleet_get_status_ms_1m", "ms")]
        elif system == "poller1s":
            names += [("poller1s_failover_kill", "ms"), ("poller1s_duplicates_under_faults", "events"),
                      ("poller1s_redeliveries_under_faults", "events")]
    return names


def figure_line(name, value, unit):
    """`name: value unit`: counts as integers, other values with two decimals below 100 and
    one from there."""
    if isinstance(value, int):
        text = str(value)
    else:
        text = f"{value:.2f}" if abs(value) < 100 else f"{value:.1f}"
    return f"{name}: {text} {unit}"


_FIGURE = re.compile(r"^([a-z0-9_]+): (-?[0-9]+(?:\.[0-9]+)?) (\S+)$")


def parse_figure(line):
    """(name, value, unit) of a figure line, None for anything else."""
    match = _FIGURE.match(line.rstrip("\n"))
    return (match.group(1), float(match.group(2)), match.group(3)) if match else None


def check_output(lines):
    """The problems of a run's stdout: every line a figure, each figure once, none missing."""
    problems, seen = [], {}
    for line in lines:
        parsed = parse_figure(line)
        if parsed is None:
            problems.append(f"not a figure line: {line.rstrip()!r}")
        elif parsed[0] in seen:
            problems.append(f"{parsed[0]} twice")
        else:
            seen[parsed[0]] = parsed[2]
    kind = "transactions" if any("_db_transactions_" in name for name in seen) else "statements"
    for name, unit in figure_names(kind):
        if name not in seen:
            problems.append(f"{name} missing")
        elif seen[name] != unit:
            problems.append(f"{name} in {seen[name]}, not {unit}")
    return problems


def lateness_ms(pairs):
    """(p50, p99) in ms of taken - due over [(due, taken)] (analysis.percentile, nearest rank)."""
    late = [taken - due for due, taken in pairs]
    return analysis.percentile(late, 0.5) * 1000, analysis.percentile(late, 0.99) * 1000


def first_taken(rows):
    """{id: earliest time taken} of [(id, time, ...)] (repeats kept apart by duplicates())."""
    first = {}
    for key, taken, *_ in rows:
        if key not in first or taken < first[key]:
            first[key] = taken
    return first


def duplicates(ids):
    """How many distinct ids occur more than once (analysis.repeated)."""
    return len(analysis.repeated(ids))


def fires_per_s(count, due, last_taken):
    """events / (last taken - due), as the burst figure."""
    return count / max(last_taken - due, 1e-6)


# --- Helpers -------------------------------------------------------------------------------


def note(message):
    print(f"fleet-bench: {message}", file=sys.stderr, flush=True)


def wait_until(condition, seconds, step=0.2):
    deadline = time.monotonic() + seconds
    while True:
        if condition():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(step)


class Statements:
    """Counts of the statements each database ran: pg_stat_statements, loaded by a restart of the
    cluster; pg_stat_database's transactions when that fails."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.kind = "statements"
        try:
            cluster.sql("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
            cluster.restart()
            cluster.sql("CREATE EXTENSION pg_stat_statements")
        except Exception as error:
            note(f"no pg_stat_statements ({str(error).strip()}): counting transactions instead")
            self.kind = "transactions"
        self.connection = cluster.connect("postgres")
        self.connection.autocommit = True
        on_cleanup(self.connection.close)

    def count(self, database):
        cursor = self.connection.cursor()
        if self.kind == "statements":
            cursor.execute("SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements s "
                           "JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = %s", (database,))
        else:
            cursor.execute("SELECT pg_stat_force_next_flush()")
            cursor.execute("SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s", (database,))
        return cursor.fetchone()[0]

    def top(self, database, count=8):
        """The `count` statements the database ran most (notes on stderr), with pg_stat_statements."""
        if self.kind != "statements":
            return
        cursor = self.connection.cursor()
        cursor.execute("SELECT calls, regexp_replace(left(query, 90), '\\s+', ' ', 'g') FROM pg_stat_statements s "
                       "JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = %s ORDER BY calls DESC LIMIT %s",
                       (database, count))
        for calls, query in cursor.fetchall():
            note(f"{database}: {calls} calls of {query}")

    def calls(self, database):
        """{query: calls} (pg_stat_statements only; else empty)."""
        if self.kind != "statements":
            return {}
        cursor = self.connection.cursor()
        cursor.execute("SELECT regexp_replace(left(query, 80), '\\s+', ' ', 'g'), sum(calls)::bigint "
                       "FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = %s "
                       "GROUP BY 1", (database,))
        return dict(cursor.fetchall())

    def rate(self, database, seconds, until=None):
        """Statements per second over `seconds` from now (or up to the time `until`); the most
        frequent ones noted on stderr."""
        before, start, began = self.calls(database), self.count(database), time.time()
        fleet_test.sleep_until(until if until is not None else began + seconds)
        rate = (self.count(database) - start) / (time.time() - began)
        elapsed = time.time() - began
        after = self.calls(database)
        deltas = sorted(((calls - before.get(query, 0), query) for query, calls in after.items()), reverse=True)
        for calls, query in deltas[:5]:
            note(f"{database}: {calls / elapsed:.1f}/s {query}")
        return rate


# --- The systems: how each schedules events and reports what it took ----------------------


class Fleet:
    name, database = "fleet", "trialwatch"

    def __init__(self, cluster, scratch, daemon):
        self.cluster = cluster
        self.db = fleet_test.Database(cluster)
        on_cleanup(self.db.close)
        self.nodes = [fleet_test.Node(name, os.path.join(scratch, name), daemon, cluster.connection_string())
                      for name in fleet_test.NODES]
        self.by_name = {node.name: node for node in self.nodes}
        self.count = 0

    def start(self):
        for node in self.nodes:
            node.start()
        for node in self.nodes:
            node.wait_ready()
        for node in self.nodes:
            node.check_configuration()
        fleet_test.wait_owned(self.db, self.nodes)
        if not wait_until(self.balanced, 30.0, 0.25):
            note("the shards are not balanced 30 s after the nodes answered")
        owners = self.db.owners()
        note("fleet ready; shards per owner: " + ", ".join(f"{name} {count}" for name, count in owners.items()))

    def lead(self, count):
        return 2.0 + count / 1500

    def schedule(self, dues):
        """Starts a trial ending at each due time (no reminders); returns [(event id, due)]."""
        specs = []
        for due in dues:
            self.count += 1
            specs.append(fleet_test.Spec(f"bench-{self.count}", round(due, 6), []))
        started = time.time()
        expected = fleet_test.start_trials(self.nodes, specs)
        note(f"fleet: {len(specs)} trials started in {time.time() - started:.1f} s")
        return [(event.event_id, event.due) for event in expected]

    def taken(self, ids):
        """[(id, taken, due)] of the ledger rows of `ids`."""
        return self.db.query("SELECT event_id, EXTRACT(EPOCH FROM taken_at)::float8, "
                             "EXTRACT(EPOCH FROM due_at)::float8 FROM trialwatch.ledger WHERE event_id = ANY(%s)", (list(ids),))

    def fired(self, ids):
        """[(id, delivered, due)]: the ledger's taken_at is when the node took the event, before the
        fenced transaction committed it; delivered_at, set once it committed and was delivered,
        is when the fire took effect (the poller's execution time)."""
        return self.db.query("SELECT event_id, EXTRACT(EPOCH FROM delivered_at)::float8, "
                             "EXTRACT(EPOCH FROM due_at)::float8 FROM trialwatch.ledger "
                             "WHERE event_id = ANY(%s) AND delivered_at IS NOT NULL", (list(ids),))

    def rows(self, ids):
        return [analysis.Row(*row) for row in self.db.query(fleet_test.SQL_LEDGER + " WHERE event_id = ANY(%s)",
                                                             (list(ids),))]

    def settle_timeout(self):
        return 60.0

    def balanced(self):
        owners = self.db.owners()
        return len(owners) == len(self.nodes) and min(owners.values()) >= fleet_test.SHARDS // len(self.nodes) - 2

    def halt(self):
        for node in self.nodes:
            status, why = node.terminate()
            if status != 0:
                note(f"{node.name} exited with {status} {why}")
        self.db.close()


class PollerSystem:
    def __init__(self, cluster, scratch, interval, name):
        self.name, self.database, self.interval = name, name, interval
        self.poller = pollers.Poller(cluster, name, os.path.join(scratch, name), interval, fleet_test.NODES)
        on_cleanup(self.poller.halt)
        self.count = 0

    def start(self):
        self.poller.start()
        note(f"{self.name}: {len(self.poller.workers)} workers polling every {self.interval:g} s")

    def lead(self, count):
        return 1.0 + count / 20000

    def schedule(self, dues):
        jobs = []
        for due in dues:
            self.count += 1
            jobs.append((f"{self.name}-{self.count}", round(due, 6)))
        self.poller.schedule(jobs)
        return jobs

    def taken(self, ids):
        return [(job_id, at, due) for job_id, _worker, at, due in self.poller.executions(ids)]

    fired = taken

    def settle_timeout(self):
        return 6 * self.interval + 30.0

    def halt(self):
        self.poller.halt()


# --- The phases ----------------------------------------------------------------------------


def settle(system, events, read=None):
    """Waits until every event was taken (by `read`, system.taken by default); returns
    [(id, taken, due)] (due as the system recorded it), the repeats kept."""
    ids = [event_id for event_id, _ in events]
    rows = []
    read = read or system.taken

    def complete():
        nonlocal rows
        rows = read(ids)
        return len(first_taken(rows)) == len(ids)

    if not wait_until(complete, system.settle_timeout(), 0.5):
        note(f"{system.name}: {len(ids) - len(first_taken(rows))} of {len(ids)} events not taken "
             f"{system.settle_timeout():.0f} s after the last due time")
    return rows


def steady_events(system, bench):
    count = int(bench.rate * bench.steady)
    t0 = time.time() + system.lead(count)
    return t0, system.schedule([t0 + index / bench.rate for index in range(count)])


def phase_idle(system, statements, bench):
    note(f"{system.name}: idle for {bench.idle:.0f} s")
    return statements.rate(system.database, bench.idle)


def phase_steady(system, statements, bench):
    t0, events = steady_events(system, bench)
    note(f"{system.name}: {len(events)} events at {bench.rate}/s from T0 in {t0 - time.time():.1f} s")
    fleet_test.sleep_until(t0)
    loaded = statements.rate(system.database, 0, until=t0 + bench.steady)
    rows = settle(system, events)
    first = first_taken(rows)
    due = {row[0]: row[2] for row in rows}  # the due time the system recorded
    p50, p99 = lateness_ms([(due[key], taken) for key, taken in first.items()])
    note(f"{system.name}: lateness p50 {p50:.2f} ms, p99 {p99:.2f} ms, min "
         f"{min(taken - due[key] for key, taken in first.items()) * 1000:.2f} ms, max "
         f"{max(taken - due[key] for key, taken in first.items()) * 1000:.2f} ms over {len(first)} events")
    fired = first_taken(settle(system, events, system.fired))
    p50_fired, p99_fired = lateness_ms([(due[key], taken) for key, taken in fired.items()])
    note(f"{system.name}: fired (delivered or executed) - due: p50 {p50_fired:.2f} ms, p99 {p99_fired:.2f} ms")
    return p50, p99, loaded


def phase_loaded(system, statements, bench):
    """The steady phase again beside BUSY_LOOPS processes that each keep a core busy (`yes`
    writing to /dev/null), as a machine running other work: (p50, p99) lateness in ms."""
    loops = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(BUSY_LOOPS)]
    on_cleanup(lambda: [loop.kill() for loop in loops])
    try:
        note(f"{system.name}: the steady phase beside {BUSY_LOOPS} busy loops")
        p50, p99, _ = phase_steady(system, statements, bench)
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    return p50, p99


def phase_get_status(fleet, bench):
    """GetStatus on a node with `bench.big` more trials (ended, so no node plans them) written
    into the shared database: the median milliseconds of 50 calls, each a connection of its own,
    as trialwatchctl makes it."""
    started = time.time()
    with fleet.cluster.connect("trialwatch") as connection:
        connection.autocommit = True
        connection.cursor().execute(f"""
            INSERT INTO trialwatch.trial (trial_id, shard, subject, state, revision, start_s, end_s, ended_s,
              reminders_ms)
            SELECT -n, n % {fleet_test.SHARDS}, 'bench-big-' || n, 'converted', 1, 0, 86400, 3600, '{{}}'
            FROM generate_series(1, {bench.big}) AS n""")
    note(f"fleet: {bench.big} trials written in {time.time() - started:.1f} s")
    node = fleet.nodes[0]
    times, total = [], None
    for _ in range(50):
        began = time.perf_counter()
        status = fleet_test.varlink_calls(node.socket, [("GetStatus", {})])[0]
        times.append((time.perf_counter() - began) * 1000)
        total = sum(status["trials"].values())
    note(f"fleet: GetStatus counts {total} trials; p50 {statistics.median(times):.2f} ms, max {max(times):.2f} ms")
    if total is None or total < bench.big:
        raise BenchError(f"GetStatus counts {total} trials, fewer than the {bench.big} written")
    return statistics.median(times)


def phase_burst(system, bench):
    due = time.time() + system.lead(bench.burst) + 1.0
    events = system.schedule([due] * bench.burst)
    note(f"{system.name}: {len(events)} events due at once in {due - time.time():.1f} s")
    fleet_test.sleep_until(due)
    taken = first_taken(settle(system, events))
    first = first_taken(settle(system, events, system.fired))
    last = max(first.values())
    rate = fires_per_s(len(first), due, last)
    note(f"{system.name}: burst of {len(first)}: the last taken {max(taken.values()) - due:.3f} s and fired "
         f"(delivered or executed) {last - due:.3f} s after its due time")
    return rate


def phase_fleet_failover(fleet, bench):
    """[ms] for the SIGKILLs and [ms] for the SIGSTOPs of the owner of shards with events due
    just after: the first orphaned event's taken - due (analysis.failover)."""
    results = {"kill": [], "stop": []}
    plan = ["kill"] * bench.kills + ["stop"] * bench.stops
    for number, kind in enumerate(plan):
        victim = fleet.nodes[(number + 2) % len(fleet.nodes)]
        shards = fleet.db.owned_shards(victim.name)
        moment = time.time() + 2.0
        events = fleet.schedule([moment + 0.001 + index * 0.005 for index in range(FAILOVER_EVENTS)])
        fleet_test.sleep_until(moment)
        start = time.time()
        if kind == "kill":
            victim.kill()
        else:
            victim.signal(signal.SIGSTOP)
        fault = Fault(kind, victim.name, start, None, shards)
        time.sleep(3.0 if kind == "kill" else 4.0)
        if kind == "kill":
            victim.start()
            victim.wait_ready()
        else:
            victim.signal(signal.SIGCONT)
        settle(fleet, events)
        result = analysis.failover(fault, fleet.rows([event_id for event_id, _ in events]))
        if result is None:
            note(f"failover {kind} #{number + 1}: no event of {victim.name}'s {len(shards)} shards due after it")
        else:
            row, seconds = result
            results[kind].append(seconds * 1000)
            moved = [change.changed_at for change in fleet.db.history()
                     if change.shard in shards and change.changed_at >= start and change.owner != victim.name]
            takeover = f"{(min(moved) - start) * 1000:.1f} ms" if moved else "none"
            note(f"failover {kind} of {victim.name} ({len(shards)} shards): {seconds * 1000:.1f} ms "
                 f"({row.event_id} of shard {row.shard}, due {(row.due - start) * 1000:.1f} ms after the fault, "
                 f"taken by {row.node}); first of its shards taken over {takeover} after the fault")
        if not wait_until(fleet.balanced, 30.0, 0.25):
            note(f"the shards are not balanced 30 s after the {kind}: {fleet.db.owners()}")
    return results


def phase_poller_failover(system, bench):
    """[ms]: a worker killed as soon as it holds picked jobs; the first execution by another
    worker of the jobs it held, minus their due time."""
    poller, results = system.poller, []
    workers = {worker.name: worker for worker in poller.workers}
    for number in range(bench.kills):
        moment = time.time() + 1.0
        events = system.schedule([moment] * POLLER_FAILOVER_JOBS)
        ids = [event_id for event_id, _ in events]
        fleet_test.sleep_until(moment)
        victim, orphans = None, []
        deadline = time.time() + 2 * system.interval + 2.0
        while time.time() < deadline:
            held = poller.held(ids)
            if held:
                victim = workers[max(held, key=lambda name: len(held[name]))]
                victim.kill()
                orphans = poller.held(ids).get(victim.name, [])
                break
        if not orphans:
            note(f"{system.name} failover #{number + 1}: no worker caught holding jobs")
        else:
            note(f"{system.name} failover #{number + 1}: killed {victim.name} holding {len(orphans)} jobs")
        settle(system, events)
        if orphans:
            executions = poller.executions(orphans)
            first = min(at - due for _id, worker, at, due in executions if worker != victim.name)
            results.append(first * 1000)
            note(f"{system.name} failover #{number + 1}: {first * 1000:.1f} ms")
        if victim is not None:
            victim.start()
            victim.wait_ready()
    return results


def phase_faults(system, workers, database, cluster, bench):
    """The ids of the steady events taken during fleet_test.FaultRunner's faults, with repeats."""
    profile = bench.faults
    count = int(bench.rate * profile.window)
    t0 = time.time() + system.lead(count)
    events = system.schedule([t0 + index / bench.rate for index in range(count)])
    note(f"{system.name}: {len(events)} events over {profile.window:.0f} s under faults from T0 in "
         f"{t0 - time.time():.1f} s")
    runner = fleet_test.FaultRunner(profile, t0, workers, cluster, database)
    runner.run()
    for problem in runner.problems:
        note(f"{system.name} faults: {problem}")
    fleet_test.sleep_until(t0 + profile.window + 1.0)
    rows = settle(system, events)
    return events, rows


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
        delivered += [event_id for event_id in fleet_test.read_deliveries(node) if event_id in ids]
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
    parser = argparse.ArgumentParser(description="The fleet figures: three trialwatchd nodes against a "
                                     "db-scheduler-style poller on the same private PostgreSQL.")
    parser.add_argument("--daemon", required=True, help="the trialwatchd to measure")
    parser.add_argument("--scratch", default=".build-bench/fleet-bench", help="folder for the run's scratch folder")
    parser.add_argument("--quick", action="store_true", help="small workloads (under 3 minutes)")
    parser.add_argument("--keep", action="store_true", help="leave the scratch folder (logs, cluster)")
    args = parser.parse_args()
    bench = QUICK if args.quick else FULL
    daemon = os.path.abspath(args.daemon)
    if not os.access(daemon, os.X_OK):
        raise BenchError(f"{args.daemon} is not an executable trialwatchd (make release builds it)")
    began = time.time()
    os.makedirs(args.scratch, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="run-", dir=os.path.abspath(args.scratch))
    os.chmod(scratch, 0o755)  # the cluster runs as nobody
    if args.keep:
        note(f"scratch folder {scratch} (kept)")
    else:
        on_cleanup(lambda: shutil.rmtree(scratch, ignore_errors=True))

    cluster = fleet_test.Cluster(os.path.join(scratch, "postgresql"))
    cluster.start()
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
