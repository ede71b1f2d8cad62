#!/usr/bin/python3
# The phases of the fleet figures (fleet_bench.py), each run on a system of systems.py: idle,
# steady (also beside busy loops), a burst, failover after SIGKILL and SIGSTOP, faults, and
# GetStatus with many trials.
import signal
import statistics
import subprocess
import time

import analysis
from analysis import Fault
from common import BenchError, on_cleanup
from fleet_figures import first_taken, fires_per_s, lateness_ms
from nodes import SHARDS, varlink_calls
from scenario import FaultRunner, sleep_until
from systems import note, wait_until

BUSY_LOOPS = 2  # processes keeping a core busy beside the fleet in its loaded steady phase
FAILOVER_EVENTS = 100  # per fault, due from 1 ms after it every 5 ms
POLLER_FAILOVER_JOBS = 300  # due at one instant; a worker is killed as soon as one holds some

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
    sleep_until(t0)
    loaded = statements.rate(system.database, 0, until=t0 + bench.steady)
    rows = settle(system, events)
    first = first_taken(rows)
    due = {row[0]: row[2] for row in rows}  # the due time the system recorded
    p50, p99 = lateness_ms([(due[key], taken) for key, taken in first.items()])
    note(f"{system.name}: lateness p50 {p50:.2f} ms, p99 {p99:.2f} ms, min "
         f"{min(taken - due[key] for key, taken in first.items()) * 1000:.2f} ms, max "
         f"{max(taken - due[key] for key, taken in first.items()) * 1000:.2f} ms over {len(first)} events")
    fired_rows = settle(system, events, system.fired)
    # An event taken after the settle above (a machine busier than the bench) has its due time
    # from these rows: it counts, with all its lateness, rather than failing the run.
    due.update({row[0]: row[2] for row in fired_rows if row[0] not in due})
    fired = first_taken(fired_rows)
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
            SELECT -n, n % {SHARDS}, 'bench-big-' || n, 'converted', 1, 0, 86400, 3600, '{{}}'
            FROM generate_series(1, {bench.big}) AS n""")
    note(f"fleet: {bench.big} trials written in {time.time() - started:.1f} s")
    node = fleet.nodes[0]
    times, total = [], None
    for _ in range(50):
        began = time.perf_counter()
        status = varlink_calls(node.socket, [("GetStatus", {})])[0]
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
    sleep_until(due)
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
        sleep_until(moment)
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
        sleep_until(moment)
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
    """The ids of the steady events taken during scenario.FaultRunner's faults, with repeats."""
    profile = bench.faults
    count = int(bench.rate * profile.window)
    t0 = time.time() + system.lead(count)
    events = system.schedule([t0 + index / bench.rate for index in range(count)])
    note(f"{system.name}: {len(events)} events over {profile.window:.0f} s under faults from T0 in "
         f"{t0 - time.time():.1f} s")
    runner = FaultRunner(profile, t0, workers, cluster, database)
    runner.run()
    for problem in runner.problems:
        note(f"{system.name} faults: {problem}")
    sleep_until(t0 + profile.window + 1.0)
    rows = settle(system, events)
    return events, rows

