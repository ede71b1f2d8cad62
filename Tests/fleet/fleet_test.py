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
# - the tables and columns of the SQL section below, times as timestamptz, ledger.node the
#   taking node's NodeName=, shard_history.owner a node name, one history row per owner change;
# - each taken event (fired or skipped) is one notice line on stderr with `event=<id>` metadata,
#   and ledger.delivered_at is set once it is; SIGTERM ends a node with status 0.
import argparse
import datetime
import json
import os
import random
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from collections import namedtuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "peers"))

import analysis  # noqa: E402
from analysis import Change, Expected, Fault, Row  # noqa: E402
from common import BenchError, on_cleanup, run_main  # noqa: E402
import servers  # noqa: E402

SHARDS = 64
REMINDER = 10.0  # seconds before the end: every trial's one reminder, "10s"
NODES = ("node1", "node2", "node3")
KILLED, STOPPED = "node3", "node2"
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

# The two sizes. Offsets in seconds after T0; trials end at T0 + 10 s + uniform(0, window).
Profile = namedtuple("Profile", "trials burst lead window kills restart_after stop_at stop_for pg_at")
FULL = Profile(trials=10_000, burst=1_000, lead=8.0, window=60.0, kills=(12, 20, 28, 44, 52),
               restart_after=2.0, stop_at=30.0, stop_for=5.0, pg_at=60.0)
QUICK = Profile(trials=2_000, burst=200, lead=5.0, window=40.0, kills=(6, 12, 18, 28, 34),
                restart_after=2.0, stop_at=20.0, stop_for=5.0, pg_at=40.0)
SETTLE_TIMEOUT = 60.0  # after the last due time + 10 s, for the undelivered count to reach 0


def note(message):
    print(f"fleet: {message}", file=sys.stderr, flush=True)


def rfc3339(seconds):
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# --- SQL: every query the harness makes, in one place ----------------------------------------

SQL_OWNED_SHARDS = """
    SELECT s.shard FROM trialwatch.shard s JOIN trialwatch.node n ON n.node_id = s.owner
    WHERE n.name = %s ORDER BY s.shard"""
SQL_OWNERS = """
    SELECT n.name, count(*) FROM trialwatch.shard s JOIN trialwatch.node n ON n.node_id = s.owner
    GROUP BY n.name ORDER BY n.name"""
SQL_UNOWNED = "SELECT count(*) FROM trialwatch.shard WHERE owner IS NULL"
SQL_SHARD_COUNT = "SELECT count(*) FROM trialwatch.shard"
SQL_UNDELIVERED = "SELECT count(*) FROM trialwatch.ledger WHERE delivered_at IS NULL"
SQL_LEDGER = """
    SELECT event_id, trial_id, shard, kind, outcome,
           EXTRACT(EPOCH FROM due_at)::float8, EXTRACT(EPOCH FROM taken_at)::float8, late, node,
           epoch, EXTRACT(EPOCH FROM delivered_at)::float8
    FROM trialwatch.ledger"""
SQL_LEDGER_TWICE = "SELECT event_id, count(*) FROM trialwatch.ledger GROUP BY event_id HAVING count(*) > 1"
SQL_HISTORY = """
    SELECT shard, epoch, owner, EXTRACT(EPOCH FROM changed_at)::float8, reason
    FROM trialwatch.shard_history ORDER BY changed_at, shard"""


class Database:
    """One autocommit connection to the trialwatch database, made again after a failure (the
    cluster restarts once during the test)."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.connection = None

    def query(self, statement, parameters=(), attempts=3):
        import psycopg2

        for attempt in range(attempts):
            try:
                if self.connection is None:
                    self.connection = self.cluster.connect("trialwatch")
                    self.connection.autocommit = True
                cursor = self.connection.cursor()
                cursor.execute(statement, parameters)
                return cursor.fetchall()
            except psycopg2.Error as error:
                self.close()
                if attempt == attempts - 1:
                    raise BenchError(f"PostgreSQL: {str(error).strip()}")
                time.sleep(0.2)

    def close(self):
        if self.connection is not None:
            try:
                self.connection.close()
            except Exception:
                pass
            self.connection = None

    def owned_shards(self, node):
        return frozenset(shard for (shard,) in self.query(SQL_OWNED_SHARDS, (node,)))

    def owners(self):
        return dict(self.query(SQL_OWNERS))

    def ledger(self):
        return [Row(*row) for row in self.query(SQL_LEDGER)]

    def history(self):
        return [Change(*row) for row in self.query(SQL_HISTORY)]


# --- PostgreSQL --------------------------------------------------------------------------------


class Cluster(servers.Postgres):
    """The peers harness's private cluster (initdb and pg_ctl in a folder, a Unix socket only,
    as nobody when run as root), without its job table and poller; a trialwatch database owned
    by nobody."""

    PORT = 54341

    def __init__(self, directory):
        super().__init__("postgresql", directory, 0)
        self.log = os.path.join(directory, "server.log")

    def as_nobody(self, args, what, **kwargs):
        if os.geteuid() == 0:
            return super().as_nobody(args, what, **kwargs)
        return servers.run(args, what, **kwargs)  # not root: the cluster runs as this user

    def start(self):
        versions = sorted(os.listdir("/usr/lib/postgresql")) if os.path.isdir("/usr/lib/postgresql") else []
        if not versions:
            raise BenchError("no PostgreSQL server under /usr/lib/postgresql (make deps installs postgresql)")
        self.version = versions[-1]
        if os.geteuid() == 0:
            import pwd

            nobody = pwd.getpwnam("nobody")
            os.chown(self.directory, nobody.pw_uid, nobody.pw_gid)
        self.as_nobody([self.bin("initdb"), "-D", self.data, "-U", "nobody", "--auth=trust", "-E", "UTF8"], "initdb")
        options = f"-c listen_addresses='' -c unix_socket_directories={self.directory} -p {self.PORT}"
        self.cleanup = on_cleanup(self.halt)
        try:
            self.as_nobody([self.bin("pg_ctl"), "-D", self.data, "-w", "-l", self.log, "-o", options, "start"],
                           "pg_ctl start")
        except BenchError as error:
            raise BenchError(f"{error}; its log: {tail(self.log, 4)}")
        self.sql("CREATE DATABASE trialwatch OWNER nobody")

    def restart(self):
        """pg_ctl restart -m fast -w (the options of the start are kept in postmaster.opts)."""
        self.as_nobody([self.bin("pg_ctl"), "-D", self.data, "-w", "-m", "fast", "-l", self.log, "restart"],
                       "pg_ctl restart")

    def connect(self, dbname="postgres"):
        import psycopg2

        return psycopg2.connect(host=self.directory, port=self.PORT, user="nobody", dbname=dbname)

    def connection_string(self):
        return f"host={self.directory} port={self.PORT} dbname=trialwatch user=nobody"


# --- Nodes -------------------------------------------------------------------------------------

CONFIG = """[Daemon]
LogLevel=notice
LogTarget=console
IdleTimeout=infinity
[Journal]
RateLimitBurst=0
[CatchUp]
LateReminders=all
ReminderGrace=1h
[Store]
Backend=postgresql
[PostgreSQL]
Connection={connection}
NodeName={name}
Shards={shards}
"""


def varlink_calls(path, calls, depth=64, timeout=60.0):
    """Makes the calls [(method, parameters)] of io.trialwatch.Trials over one connection to
    the socket at `path`, `depth` in flight; returns the replies' parameters in order. An
    error reply raises BenchError."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.settimeout(timeout)
    try:
        connection.connect(path)
        encoded = [json.dumps({"method": "io.trialwatch.Trials." + method, "parameters": parameters}).encode()
                   + b"\0" for method, parameters in calls]
        replies, buffer, sent = [], b"", 0
        while len(replies) < len(calls):
            if sent < len(calls) and sent - len(replies) < depth:
                batch = encoded[sent:len(replies) + depth]
                connection.sendall(b"".join(batch))
                sent += len(batch)
            data = connection.recv(1 << 16)
            if not data:
                raise BenchError(f"{path}: the daemon closed the connection after {len(replies)} replies")
            buffer += data
            *complete, buffer = buffer.split(b"\0")
            for text in complete:
                reply = json.loads(text)
                if "error" in reply:
                    raise BenchError(f"{path}: {reply['error']} {json.dumps(reply.get('parameters', {}))[:300]}")
                replies.append(reply.get("parameters", {}))
        return replies
    finally:
        connection.close()


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
        buffer = b""
        try:
            while True:
                data = self.connection.recv(1 << 16)
                if not data:
                    return
                buffer += data
                *complete, buffer = buffer.split(b"\0")
                for text in complete:
                    reply = json.loads(text)
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


def tail(path, lines=8):
    try:
        with open(path, errors="replace") as file:
            return " | ".join(file.read().strip().splitlines()[-lines:]) or "(empty log)"
    except OSError:
        return "(no log)"


class Node:
    """One trialwatchd of the fleet: its own state folder, socket and log (stdout and stderr,
    appended across restarts)."""

    def __init__(self, name, directory, daemon, connection):
        self.name = name
        self.directory = directory
        self.daemon = daemon
        os.makedirs(directory, exist_ok=True)
        self.config = os.path.join(directory, "trialwatch.conf")
        self.state = os.path.join(directory, "state")
        self.socket = os.path.join(directory, "io.trialwatch")
        self.log = os.path.join(directory, "trialwatchd.log")
        if len(self.socket.encode()) > 107:
            raise BenchError(f"{self.socket} is too long for a Unix socket: give a shorter --scratch")
        with open(self.config, "w") as file:
            file.write(CONFIG.format(connection=connection, name=name, shards=SHARDS))
        self.process = None
        self.stopped = False
        self.unexpected = []  # exits the harness did not cause, noticed while it ran
        on_cleanup(self.halt)

    def start(self):
        env = {key: value for key, value in os.environ.items()
               if key not in ("NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "WATCHDOG_USEC", "JOURNAL_STREAM")}
        with open(self.log, "a") as log:
            self.process = subprocess_popen(
                [self.daemon, "--config", self.config, "--state-dir", self.state, "--socket", self.socket],
                log, env)

    def answers(self):
        try:
            varlink_calls(self.socket, [("GetStatus", {})], timeout=2.0)
            return True
        except (OSError, BenchError, ValueError):
            return False

    def wait_ready(self, seconds=60.0):
        """Waits until GetStatus answers; raises when the process exits first or at the timeout."""
        deadline = time.monotonic() + seconds
        while True:
            if self.process.poll() is not None:
                raise BenchError(f"{self.name} exited with {self.process.returncode} before answering: "
                                 f"{tail(self.log)}")
            if self.answers():
                return time.time()
            if time.monotonic() > deadline:
                raise BenchError(f"{self.name} did not answer on {os.path.basename(self.socket)} within "
                                 f"{seconds:.0f} s: {tail(self.log)}")
            time.sleep(0.02)

    def check_configuration(self):
        """Raises when the node warned about its configuration (a daemon without fleet mode
        ignores [Store] and [PostgreSQL] with a warning, and would run alone)."""
        with open(self.log, errors="replace") as file:
            warnings = [line.strip() for line in file if "unknown section" in line or "unknown key" in line
                        or "invalid value" in line]
        if warnings:
            raise BenchError(f"{self.name} does not take its fleet configuration: " + " | ".join(warnings))

    def alive(self):
        return self.process is not None and self.process.poll() is None

    def signal(self, number):
        self.process.send_signal(number)
        if number == signal.SIGSTOP:
            self.stopped = True
        elif number == signal.SIGCONT:
            self.stopped = False

    def kill(self):
        self.process.kill()
        self.process.wait()

    def terminate(self, seconds=30.0):
        """SIGTERM, then the exit status (SIGKILL after `seconds`: reported as such)."""
        if self.process.poll() is not None:
            return self.process.returncode, "had exited already"
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(seconds), ""
        except Exception:
            self.process.kill()
            return self.process.wait(), f"did not exit within {seconds:.0f} s of SIGTERM"

    def halt(self):
        if self.alive():
            try:
                self.process.send_signal(signal.SIGCONT)  # a stopped process would not die of SIGTERM
                self.process.kill()
                self.process.wait(10)
            except Exception:
                pass


def subprocess_popen(args, log, env):
    import subprocess

    return subprocess.Popen(args, stdout=log, stderr=log, stdin=subprocess.DEVNULL, env=env)


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


# --- Checks ------------------------------------------------------------------------------------


class Report:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, name, ok, detail):
        print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1

    def info(self, text):
        print(f"# {text}", flush=True)


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


# --- The run -----------------------------------------------------------------------------------


def read_deliveries(node):
    try:
        with open(node.log, errors="replace") as file:
            return analysis.deliveries(file)
    except OSError:
        return []


def wait_owned(database, nodes, seconds=30.0):
    """Waits until the shard table has its SHARDS shards, each with an owner."""
    deadline = time.monotonic() + seconds
    while True:
        check_alive(nodes)
        try:
            total = database.query(SQL_SHARD_COUNT)[0][0]
            unowned = database.query(SQL_UNOWNED)[0][0]
            if total == SHARDS and unowned == 0:
                return database.owners()
            state = f"{total} shards, {unowned} without an owner"
        except BenchError as error:
            state = str(error)
        if time.monotonic() > deadline:
            raise BenchError(f"the shards did not all get an owner within {seconds:.0f} s: {state}; "
                             f"{nodes[0].name}'s log: {tail(nodes[0].log, 4)}")
        time.sleep(0.1)


def check_alive(nodes):
    for node in nodes:
        if not node.alive():
            raise BenchError(f"{node.name} exited with {node.process.returncode}: {tail(node.log)}")


def main():
    parser = argparse.ArgumentParser(description="The fleet fault test: three trialwatchd nodes on a private "
                                     "PostgreSQL, nodes killed and stopped and the cluster restarted under load.")
    parser.add_argument("--daemon", required=True, help="the trialwatchd to test")
    parser.add_argument("--scratch", default=".build-fleet", help="folder for the run's scratch folder")
    parser.add_argument("--quick", action="store_true", help="a small, faster variant")
    parser.add_argument("--keep", action="store_true", help="leave the scratch folder (logs, cluster)")
    parser.add_argument("--seed", type=int, default=None, help="the workload's random seed")
    args = parser.parse_args()
    profile = QUICK if args.quick else FULL
    daemon = os.path.abspath(args.daemon)
    if not os.access(daemon, os.X_OK):
        raise BenchError(f"{args.daemon} is not an executable trialwatchd (make release builds it)")

    os.makedirs(args.scratch, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="run-", dir=os.path.abspath(args.scratch))
    os.chmod(scratch, 0o755)  # the cluster runs as nobody
    if args.keep:
        note(f"scratch folder {scratch} (kept)")
    else:
        on_cleanup(lambda: shutil.rmtree(scratch, ignore_errors=True))

    cluster = Cluster(os.path.join(scratch, "postgresql"))
    cluster.start()
    database = Database(cluster)
    on_cleanup(database.close)
    note(f"PostgreSQL {cluster.version} on {cluster.directory}")

    nodes = [Node(name, os.path.join(scratch, name), daemon, cluster.connection_string()) for name in NODES]
    for node in nodes:
        node.start()
    for node in nodes:
        node.wait_ready()
    for node in nodes:
        node.check_configuration()
    owners = wait_owned(database, nodes)
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
