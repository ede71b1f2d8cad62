#!/usr/bin/python3
# The failover test's load and faults (failover_test.py): its two sizes, the trials started
# before T0, a client per node starting trials one at a time through the run (each command's
# outcome recorded), and the switches: the primary stopped (fast, then immediate), the standby
# promoted a moment later, the nodes' renewals on the new primary watched, and a new standby
# made of the old primary's server between the two.
import json
import random
import socket
import threading
import time
from collections import namedtuple

from failover_analysis import Command, Switch
from nodes import note  # first: it puts bench/peers, with common, on the path
from common import BenchError, frames
from scenario import Spec, rfc3339, sleep_until

# Offsets in seconds after T0. Trials started before T0 end at T0 + 10 s + uniform(0, window),
# each with a reminder 10 s before (scenario.REMINDER); commands run from T0 until
# failover_analysis.AFTER_PROMOTION after the last promotion, each a trial ending `command_ends`
# seconds later (no reminder): events come due through every switch, however long the switches
# take. switches: (offset, stop mode, synchronous replication), in order; a switch starts at its
# offset or when the one before is done (its new standby streaming), whichever is later.
Profile = namedtuple("Profile", "trials lead window command_ends switches")
FULL = Profile(trials=3_000, lead=6.0, window=26.0, command_ends=(2.0, 6.0),
               switches=((6.0, "fast", True), (13.0, "immediate", True), (20.0, "fast", False),
                         (27.0, "immediate", False)))
QUICK = Profile(trials=1_000, lead=4.0, window=16.0, command_ends=(2.0, 5.0),
                switches=((4.0, "fast", True), (10.0, "immediate", True), (16.0, "immediate", False)))

# The standby is promoted this long after the primary's stop returned, as a failover manager
# would after noticing: meanwhile the only server that answers is a read-only standby.
PROMOTE_AFTER = 1.0
# A command's pause after its reply: a steady load (about 20 commands a second per node).
COMMAND_PAUSE = 0.05
# The longest a command may take before its client gives up on the connection: the store's
# statement timeout (10 s) and a margin; a command taking it is recorded as `timeout`.
COMMAND_TIMEOUT = 30.0
# How long the harness watches for every node renewing its lease on the new primary: a bound on
# its wait only (the check is the promotion bound, failover_analysis.RECOVERY_BOUND).
FOLLOW_WATCH = 15.0

SQL_SEEN = "SELECT name, EXTRACT(EPOCH FROM seen_at)::float8 FROM trialwatch.node"


def workload(profile, t0, rng):
    """The trials started before T0."""
    return [Spec(f"failover-{index}", round(t0 + 10.0 + rng.uniform(0, profile.window), 6), ["10s"])
            for index in range(profile.trials)]


class Client:
    """One Varlink connection to a node, one call at a time."""

    def __init__(self, path):
        self.path = path
        self.connection = None
        self.replies = None

    def call(self, method, parameters):
        """(error name or None, parameters); raises OSError when the connection fails."""
        if self.connection is None:
            self.connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.connection.settimeout(COMMAND_TIMEOUT)
            self.connection.connect(self.path)
            self.replies = frames(self.connection)
        message = {"method": "io.trialwatch.Trials." + method, "parameters": parameters}
        self.connection.sendall(json.dumps(message).encode() + b"\0")
        while True:
            complete = next(self.replies, None)
            if complete is None:
                raise OSError("the daemon closed the connection")
            if complete:
                reply = complete[0]
                return reply.get("error"), reply.get("parameters", {})

    def close(self):
        if self.connection is not None:
            self.connection.close()
        self.connection = None


def interface_errors(path):
    """The error names the node's interface io.trialwatch declares."""
    client = Client(path)
    try:
        client.connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.connection.settimeout(10.0)
        client.connection.connect(path)
        client.replies = frames(client.connection)
        message = {"method": "org.varlink.service.GetInterfaceDescription",
                   "parameters": {"interface": "io.trialwatch"}}
        client.connection.sendall(json.dumps(message).encode() + b"\0")
        reply = next(reply for complete in client.replies for reply in complete)
    finally:
        client.close()
    description = reply.get("parameters", {}).get("description", "")
    return {"io.trialwatch." + line.split()[1] for line in description.splitlines() if line.startswith("error ")}


class Commander(threading.Thread):
    """Starts trials on one node one at a time from `start` until `stop` is set, each ending a
    few seconds later; records every command's outcome."""

    def __init__(self, node, start, stop, ends, rng):
        super().__init__(daemon=True)
        self.node, self.start_at, self.stop, self.ends, self.rng = node, start, stop, ends, rng
        self.commands = []  # [Command]
        self.trials = {}  # subject -> (trial reply, ends)
        self.problem = None

    def run(self):
        client = Client(self.node.socket)
        number = 0
        sleep_until(self.start_at)
        try:
            while not self.stop.is_set():
                subject = f"cmd-{self.node.name}-{number}"
                number += 1
                ends = round(time.time() + self.rng.uniform(*self.ends), 6)
                sent = time.time()
                try:
                    error, parameters = client.call("StartTrial", {"subject": subject, "endsAt": rfc3339(ends)})
                except (OSError, ValueError) as failure:
                    error, parameters = ("timeout" if isinstance(failure, socket.timeout) else "connection"), {}
                    client.close()
                detail = json.dumps(parameters)[:300] if error is not None else ""
                self.commands.append(Command(self.node.name, subject, sent, time.time(), error, detail))
                if error is None:
                    self.trials[subject] = (parameters["trial"], ends)
                time.sleep(COMMAND_PAUSE)
        except Exception as failure:  # the harness's own fault: reported, never hidden
            self.problem = f"{self.node.name}'s client: {failure!r}"
        finally:
            client.close()


class Switcher:
    """Makes the switches at their times; records each one (failover_analysis.Switch)."""

    def __init__(self, profile, t0, pair, nodes):
        self.profile, self.t0, self.pair, self.nodes = profile, t0, pair, nodes
        self.switches = []
        self.problems = []

    def run(self):
        switches = self.profile.switches
        for number, (offset, mode, synchronous) in enumerate(switches):
            sleep_until(self.t0 + offset)
            old = self.pair.primary.name
            stop_start = time.time()
            self.pair.stop_primary(mode)
            stop_done = time.time()
            sleep_until(stop_done + PROMOTE_AFTER)
            promote_start = time.time()
            self.pair.promote()
            promote_done = time.time()
            followed = self.watch_renewals(promote_start)
            self.switches.append(Switch(mode, synchronous, stop_start, stop_done, promote_start, promote_done,
                                        followed))
            note(f"T0+{stop_start - self.t0:.1f} s: {old} stopped ({mode}, "
                 f"{'synchronous' if synchronous else 'asynchronous'}, {stop_done - stop_start:.2f} s), "
                 f"{self.pair.primary.name} promoted at T0+{promote_start - self.t0:.1f} s "
                 f"({promote_done - promote_start:.2f} s); nodes renewed on it after "
                 + ", ".join(f"{name} {'-' if at is None else f'{at - promote_start:.2f} s'}"
                             for name, at in sorted(followed.items())))
            if number + 1 < len(switches):
                began = time.time()
                self.pair.synchronous = switches[number + 1][2]
                steps = self.pair.replace_standby()
                note(f"T0+{time.time() - self.t0:.1f} s: {old} is a standby of {self.pair.primary.name} again "
                     f"({time.time() - began:.1f} s: {steps}; "
                     f"{'synchronous' if self.pair.synchronous else 'asynchronous'})")

    def watch_renewals(self, since):
        """{node: its first renewal (seen_at) after `since` seen on the new primary}: polls the
        node table (through the multi-host connection, which reaches the new primary only)
        every 20 ms, so a renewal is seen before the next (250 ms later) overwrites it."""
        seen = {node.name: None for node in self.nodes}
        deadline = time.monotonic() + FOLLOW_WATCH
        connection = None
        while any(at is None for at in seen.values()) and time.monotonic() < deadline:
            try:
                if connection is None:
                    connection = self.pair.connect("trialwatch")
                    connection.autocommit = True
                cursor = connection.cursor()
                cursor.execute(SQL_SEEN)
                for name, seen_at in cursor.fetchall():
                    if name in seen and seen[name] is None and seen_at is not None and seen_at > since:
                        seen[name] = seen_at
            except Exception:
                if connection is not None:
                    connection.close()
                connection = None
            time.sleep(0.02)
        if connection is not None:
            connection.close()
        return seen


def start_commanders(nodes, profile, t0, seed):
    stop = threading.Event()
    commanders = [Commander(node, t0, stop, profile.command_ends, random.Random(seed + index))
                  for index, node in enumerate(nodes)]
    for commander in commanders:
        commander.start()
    return commanders


def join_commanders(commanders):
    for commander in commanders:
        commander.stop.set()
    for commander in commanders:
        commander.join(COMMAND_TIMEOUT + 5)
        if commander.is_alive():
            raise BenchError(f"{commander.node.name}'s client did not end")
