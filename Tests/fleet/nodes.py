#!/usr/bin/python3
# The fleet's trialwatchd nodes, shared by the fault test (fleet_test.py) and the fleet figures
# (bench/fleet/): a node's configuration, process, socket and log, the Varlink calls made of
# it, the start of a run (its arguments, scratch folder, cluster and nodes) and what the nodes'
# logs say was delivered. What a node must do for the harness is said in fleet_test.py.
import argparse
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import time

import analysis
from cluster import SQL_SHARD_COUNT, SQL_UNOWNED, Cluster, tail  # first: it puts bench/peers on the path
from common import BenchError, frames, on_cleanup

SHARDS = 64
NODES = ("node1", "node2", "node3")


def note(message):
    print(f"fleet: {message}", file=sys.stderr, flush=True)


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
        replies, sent, reads = [], 0, frames(connection)
        while len(replies) < len(calls):
            if sent < len(calls) and sent - len(replies) < depth:
                batch = encoded[sent:len(replies) + depth]
                connection.sendall(b"".join(batch))
                sent += len(batch)
            complete = next(reads, None)
            if complete is None:
                raise BenchError(f"{path}: the daemon closed the connection after {len(replies)} replies")
            for reply in complete:
                if "error" in reply:
                    raise BenchError(f"{path}: {reply['error']} {json.dumps(reply.get('parameters', {}))[:300]}")
                replies.append(reply.get("parameters", {}))
        return replies
    finally:
        connection.close()


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


def read_deliveries(node):
    try:
        with open(node.log, errors="replace") as file:
            return analysis.deliveries(file)
    except OSError:
        return []


# --- The start of a run ---------------------------------------------------------------------


def arguments(description, verb, scratch, quick):
    """The arguments the fault test and the figures share: --daemon (the trialwatchd to `verb`),
    --scratch (default `scratch`), --quick (help text `quick`) and --keep."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--daemon", required=True, help=f"the trialwatchd to {verb}")
    parser.add_argument("--scratch", default=scratch, help="folder for the run's scratch folder")
    parser.add_argument("--quick", action="store_true", help=quick)
    parser.add_argument("--keep", action="store_true", help="leave the scratch folder (logs, cluster)")
    return parser


def prepare_run(args, say, prefix="run-"):
    """The daemon's absolute path (raises when it is not executable) and the run's scratch folder
    (a new one in --scratch, removed at the end unless --keep; `say` notes it)."""
    daemon = os.path.abspath(args.daemon)
    if not os.access(daemon, os.X_OK):
        raise BenchError(f"{args.daemon} is not an executable trialwatchd (make release builds it)")
    os.makedirs(args.scratch, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix=prefix, dir=os.path.abspath(args.scratch))
    os.chmod(scratch, 0o755)  # the servers run as nobody
    if args.keep:
        say(f"scratch folder {scratch} (kept)")
    else:
        on_cleanup(lambda: shutil.rmtree(scratch, ignore_errors=True))
    return daemon, scratch


def prepare(args, say):
    """`prepare_run`'s daemon and scratch folder, and the cluster, started in it."""
    daemon, scratch = prepare_run(args, say)
    cluster = Cluster(os.path.join(scratch, "postgresql"))
    cluster.start()
    return daemon, scratch, cluster


def make_nodes(scratch, daemon, cluster):
    """The NODES, each in a folder of its own in `scratch`, on the cluster (not started)."""
    return [Node(name, os.path.join(scratch, name), daemon, cluster.connection_string()) for name in NODES]


def start_nodes(nodes, database):
    """Starts the nodes, waits until each answers and checks that each took its fleet
    configuration, then waits until every shard has an owner: returns {node name: shards}."""
    for node in nodes:
        node.start()
    for node in nodes:
        node.wait_ready()
    for node in nodes:
        node.check_configuration()
    return wait_owned(database, nodes)
