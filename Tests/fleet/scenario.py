#!/usr/bin/python3
# The fault test's scenario, shared with the fleet figures (bench/fleet/): the two sizes of the
# run, the workload of trials and the events it is to bring, their start through the nodes, and
# the faults at their times (node3 SIGKILLed and restarted, node2 SIGSTOPped, PostgreSQL
# restarted).
import datetime
import signal
import threading
import time
from collections import namedtuple

from analysis import Expected, Fault
from nodes import note, varlink_calls  # first: it puts bench/peers, with common, on the path
from common import BenchError

REMINDER = 10.0  # seconds before the end: every trial's one reminder, "10s"
KILLED, STOPPED = "node3", "node2"

# The two sizes. Offsets in seconds after T0; trials end at T0 + 10 s + uniform(0, window).
Profile = namedtuple("Profile", "trials burst lead window kills restart_after stop_at stop_for pg_at")
FULL = Profile(trials=10_000, burst=1_000, lead=8.0, window=60.0, kills=(12, 20, 28, 44, 52),
               restart_after=2.0, stop_at=30.0, stop_for=5.0, pg_at=60.0)
QUICK = Profile(trials=2_000, burst=200, lead=5.0, window=40.0, kills=(6, 12, 18, 28, 34),
                restart_after=2.0, stop_at=20.0, stop_for=5.0, pg_at=40.0)


def rfc3339(seconds):
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# --- Workload ----------------------------------------------------------------------------------

Spec = namedtuple("Spec", "subject ends reminders")


def workload(profile, t0, rng):
    """The trials to start: `trials` ending over the window with a 10 s reminder, and `burst`
    ending all at T0 + stop_at + stop_for with none. ends in seconds, to the microsecond."""
    specs = []
    for index in range(profile.trials):
        ends = round(t0 + REMINDER + rng.uniform(0, profile.window), 6)
        specs.append(Spec(f"fleet-{index}", ends, ["10s"]))
    burst = round(t0 + profile.stop_at + profile.stop_for, 6)
    for index in range(profile.burst):
        specs.append(Spec(f"fleet-burst-{index}", burst, []))
    return specs


def expected_events(spec, trial):
    """The event ids and due times of one started trial (its reply's id and revision)."""
    prefix = f"{trial['id']}-r{trial['revision']}"
    events = [Expected(f"{prefix}-expiry", trial["id"], "expiry", spec.ends)]
    for _ in spec.reminders:
        events.append(Expected(f"{prefix}-reminder-{int(REMINDER * 1000)}ms", trial["id"], "reminder",
                               round(spec.ends - REMINDER, 6)))
    return events


def start_trials(nodes, specs, connections_per_node=2, depth=64):
    """Starts the trials through the nodes round robin, `connections_per_node` pipelined
    connections each; returns the expected events."""
    lanes = [[] for _ in range(len(nodes) * connections_per_node)]
    for index, spec in enumerate(specs):
        node = index % len(nodes)
        lane = node * connections_per_node + (index // len(nodes)) % connections_per_node
        lanes[lane].append(spec)
    results, errors = [None] * len(lanes), []

    def lane_worker(number):
        node = nodes[number // connections_per_node]
        calls = [("StartTrial", {"subject": spec.subject, "endsAt": rfc3339(spec.ends), "reminders": spec.reminders})
                 for spec in lanes[number]]
        try:
            results[number] = varlink_calls(node.socket, calls, depth=depth)
        except Exception as error:
            errors.append(f"{node.name}: {error}")

    threads = [threading.Thread(target=lane_worker, args=(number,)) for number in range(len(lanes))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise BenchError("StartTrial failed: " + "; ".join(errors[:3]))
    expected = []
    for lane, replies in zip(lanes, results):
        for spec, reply in zip(lane, replies):
            expected.extend(expected_events(spec, reply["trial"]))
    return expected


# --- Faults ------------------------------------------------------------------------------------


def sleep_until(moment):
    while True:
        left = moment - time.time()
        if left <= 0:
            return
        time.sleep(min(left, 0.05))


class FaultRunner:
    """Runs the faults at their times and records each one's start, end and the victim's
    shards just before it."""

    def __init__(self, profile, t0, nodes, cluster, database):
        self.profile, self.t0 = profile, t0
        self.nodes = {node.name: node for node in nodes}
        self.cluster, self.database = cluster, database
        self.faults = []  # [Fault], in the order they started
        self.problems = []  # restarts that did not answer, and the like
        self.ready_threads = []

    def plan(self):
        """[(offset, action, argument)] sorted by offset."""
        p = self.profile
        steps = []
        for number, at in enumerate(p.kills):
            steps.append((at, "kill", number))
            steps.append((at + p.restart_after, "restart", number))
        steps.append((p.stop_at, "stop", None))
        steps.append((p.stop_at + p.stop_for, "cont", None))
        if p.pg_at is not None:  # None: no PostgreSQL restart (bench/fleet runs the same faults without it)
            steps.append((p.pg_at, "pg", None))
        return sorted(steps, key=lambda step: step[0])

    def run(self):
        kills, stop = {}, None
        for offset, action, number in self.plan():
            sleep_until(self.t0 + offset)
            if action == "kill":
                node = self.nodes[KILLED]
                shards = self.database.owned_shards(KILLED)
                start = time.time()
                node.kill()
                kills[number] = len(self.faults)
                self.faults.append(Fault("kill", KILLED, start, None, shards))
                note(f"T0+{start - self.t0:.1f} s: SIGKILL {KILLED} ({len(shards)} shards)")
            elif action == "restart":
                node = self.nodes[KILLED]
                node.start()
                index = kills[number]
                thread = threading.Thread(target=self.await_restart, args=(node, index), daemon=True)
                thread.start()
                self.ready_threads.append(thread)
            elif action == "stop":
                node = self.nodes[STOPPED]
                shards = self.database.owned_shards(STOPPED)
                start = time.time()
                node.signal(signal.SIGSTOP)
                stop = len(self.faults)
                self.faults.append(Fault("stop", STOPPED, start, None, shards))
                note(f"T0+{start - self.t0:.1f} s: SIGSTOP {STOPPED} ({len(shards)} shards)")
            elif action == "cont":
                self.nodes[STOPPED].signal(signal.SIGCONT)
                self.faults[stop] = self.faults[stop]._replace(end=time.time())
                note(f"T0+{time.time() - self.t0:.1f} s: SIGCONT {STOPPED}")
            elif action == "pg":
                start = time.time()
                self.database.close()
                try:
                    self.cluster.restart()
                except BenchError as error:
                    self.problems.append(f"PostgreSQL restart: {error}")
                self.faults.append(Fault("pg", None, start, time.time(), frozenset()))
                note(f"T0+{start - self.t0:.1f} s: PostgreSQL restarted in {time.time() - start:.1f} s")
        for thread in self.ready_threads:
            thread.join()

    def await_restart(self, node, index):
        try:
            ready = node.wait_ready(30.0)
            self.faults[index] = self.faults[index]._replace(end=ready)
            note(f"T0+{ready - self.t0:.1f} s: {node.name} answers again")
        except BenchError as error:
            self.problems.append(f"restart {index + 1}: {error}")
