#!/usr/bin/python3
# A stand-in for a trialwatchd node in fleet mode, to check the fault test itself before the
# daemon has fleet mode, and as an executable sketch of the interface the test assumes:
#
#   standin_node.py --config FILE --state-dir DIR --socket PATH
#   fleet_test.py --daemon Tests/fleet/standin_node.py --scratch DIR [--quick]
#
# It reads Connection=, NodeName= and Shards= of [PostgreSQL] from the configuration, creates
# the trialwatch schema the test reads (node, shard, shard_history, trial, ledger, and an event
# table of its own), answers StartTrial and GetStatus on the Varlink socket, holds a lease by
# heartbeat, takes a fair share of the shards (those of nodes whose lease ran out first), fires
# its shards' events from memory into the ledger, fenced by the shard's epoch, and logs each as
# the daemon's console log does. Not the daemon: no catch-up policy, no journal, no state.
# TRIALWATCH_STANDIN_BUG=lose or =late in the environment makes it fail the test on purpose.
import argparse
import heapq
import json
import os
import random
import signal
import socket
import sys
import threading
import time

import psycopg2

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "peers"))
from common import frames  # noqa: E402

LEASE = 0.25  # seconds a heartbeat holds the node's shards
TICK = 0.025  # the coordinator's period
HORIZON = 2.0  # events due within this are loaded into memory
# To see the test fail: "lose" drops one event in 500 (logged, never in the ledger), "late"
# takes every event 20 ms late.
BUG = os.environ.get("TRIALWATCH_STANDIN_BUG", "")
SCHEMA = """
CREATE SCHEMA IF NOT EXISTS trialwatch;
CREATE TABLE IF NOT EXISTS trialwatch.node (node_id bigserial PRIMARY KEY, name text UNIQUE NOT NULL,
  heartbeat timestamptz NOT NULL);
CREATE TABLE IF NOT EXISTS trialwatch.shard (shard int PRIMARY KEY, owner bigint, epoch bigint NOT NULL);
CREATE TABLE IF NOT EXISTS trialwatch.shard_history (shard int, epoch bigint, owner text,
  changed_at timestamptz NOT NULL DEFAULT clock_timestamp(), reason text);
CREATE TABLE IF NOT EXISTS trialwatch.trial (trial_id bigint PRIMARY KEY, shard int, subject text, state text,
  ends_at timestamptz);
CREATE TABLE IF NOT EXISTS trialwatch.event (event_id text PRIMARY KEY, trial_id bigint, shard int, kind text,
  due_at timestamptz, subject text);
CREATE INDEX IF NOT EXISTS event_due ON trialwatch.event (shard, due_at);
CREATE TABLE IF NOT EXISTS trialwatch.ledger (event_id text UNIQUE, trial_id bigint, shard int, kind text,
  outcome text, due_at timestamptz, taken_at timestamptz, late bool, node text, epoch bigint,
  delivered_at timestamptz);
"""


def log(line):
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def read_config(path):
    values, section = {}, None
    with open(path) as file:
        for line in file:
            line = line.strip()
            if line.startswith("["):
                section = line.strip("[]")
            elif "=" in line:
                key, value = line.split("=", 1)
                values[(section, key.strip())] = value.strip()
    return values


def connect(dsn):
    while True:
        try:
            connection = psycopg2.connect(dsn)
            connection.autocommit = True
            return connection
        except psycopg2.OperationalError:
            time.sleep(0.05)


class Node:
    def __init__(self, dsn, name, shards):
        self.dsn, self.name, self.shards = dsn, name, shards
        self.lock = threading.Condition()
        self.owned = {}  # shard -> epoch
        self.lease_until = 0.0  # time.monotonic()
        self.heap, self.scheduled = [], set()
        self.loaded = {}  # shard -> (epoch, due time its events are loaded up to)
        db = connect(dsn)
        cursor = db.cursor()
        cursor.execute("SELECT pg_advisory_lock(4242)")
        cursor.execute(SCHEMA)
        cursor.execute("INSERT INTO trialwatch.shard SELECT g, NULL, 0 FROM generate_series(0, %s - 1) g "
                       "ON CONFLICT DO NOTHING", (shards,))
        cursor.execute("INSERT INTO trialwatch.node (name, heartbeat) VALUES (%s, clock_timestamp()) ON CONFLICT "
                       "(name) DO UPDATE SET heartbeat = clock_timestamp() RETURNING node_id", (name,))
        self.node_id = cursor.fetchone()[0]
        # A restart remembers nothing: what the last run owned is given up, under a new epoch.
        cursor.execute("UPDATE trialwatch.shard SET owner = NULL, epoch = epoch + 1 WHERE owner = %s "
                       "RETURNING shard, epoch", (self.node_id,))
        for shard, epoch in cursor.fetchall():
            cursor.execute("INSERT INTO trialwatch.shard_history (shard, epoch, owner, reason) VALUES "
                           "(%s, %s, NULL, 'restart')", (shard, epoch))
        cursor.execute("SELECT pg_advisory_unlock(4242)")
        db.close()

    # --- Ownership ---------------------------------------------------------------------------

    def coordinate(self):
        db = None
        while True:
            try:
                if db is None:
                    db = connect(self.dsn)
                self.coordinate_once(db.cursor())
            except psycopg2.Error:
                db = None
            time.sleep(TICK)

    def coordinate_once(self, cursor):
        began = time.monotonic()
        cursor.execute("UPDATE trialwatch.node SET heartbeat = clock_timestamp() WHERE node_id = %s", (self.node_id,))
        cursor.execute("SELECT shard, epoch FROM trialwatch.shard WHERE owner = %s", (self.node_id,))
        owned = dict(cursor.fetchall())
        with self.lock:
            self.owned = {shard: epoch for shard, epoch in self.owned.items() if owned.get(shard) == epoch}
            self.lease_until = began + LEASE
        cursor.execute("SELECT node_id FROM trialwatch.node WHERE heartbeat > clock_timestamp() - %s * interval '1 s'",
                       (LEASE,))
        alive = [row[0] for row in cursor.fetchall()]
        fair = -(-self.shards // max(1, len(alive)))
        if len(owned) < fair:
            cursor.execute("SELECT shard FROM trialwatch.shard WHERE owner IS NULL OR owner <> ALL(%s) ORDER BY shard",
                           (alive,))
            free = [row[0] for row in cursor.fetchall()]
            random.shuffle(free)
            for shard in free[:fair - len(owned)]:
                cursor.execute("UPDATE trialwatch.shard SET owner = %s, epoch = epoch + 1 WHERE shard = %s AND "
                               "(owner IS NULL OR owner <> ALL(%s)) RETURNING epoch", (self.node_id, shard, alive))
                row = cursor.fetchone()
                if row:
                    cursor.execute("INSERT INTO trialwatch.shard_history (shard, epoch, owner, reason) VALUES "
                                   "(%s, %s, %s, 'acquired')", (shard, row[0], self.name))
                    owned[shard] = row[0]
        elif len(owned) > fair + 1:
            for shard in sorted(owned)[:len(owned) - fair]:
                with self.lock:
                    self.owned.pop(shard, None)
                cursor.execute("UPDATE trialwatch.shard SET owner = NULL, epoch = epoch + 1 WHERE shard = %s AND "
                               "owner = %s RETURNING epoch", (shard, self.node_id))
                row = cursor.fetchone()
                if row:
                    cursor.execute("INSERT INTO trialwatch.shard_history (shard, epoch, owner, reason) VALUES "
                                   "(%s, %s, NULL, 'released')", (shard, row[0]))
                owned.pop(shard)
        with self.lock:
            for shard, epoch in owned.items():
                if self.owned.get(shard) != epoch:
                    self.owned[shard] = epoch
                    self.scheduled = {key for key in self.scheduled if key[1] != shard}
        # Rows it took whose delivery was not recorded (the cluster went away in between): again.
        cursor.execute("SELECT l.event_id, l.kind, e.subject, l.trial_id, l.late FROM trialwatch.ledger l JOIN "
                       "trialwatch.event e USING (event_id) WHERE l.node = %s AND l.delivered_at IS NULL AND "
                       "l.taken_at < clock_timestamp() - interval '1 s'", (self.name,))
        self.deliver(cursor, cursor.fetchall())
        # The owned shards' events due soon, into memory: from where the last load of each
        # shard (under its epoch) ended; a shard dropped or new is loaded from the start.
        if owned:
            with self.lock:
                since = min(self.loaded.get(shard, (None, 0.0))[1] if self.loaded.get(shard, (None,))[0] == epoch
                            else 0.0 for shard, epoch in owned.items())
            until = time.time() + HORIZON
            cursor.execute("SELECT e.event_id, e.shard, EXTRACT(EPOCH FROM e.due_at)::float8, e.trial_id, e.kind, "
                           "e.subject FROM trialwatch.event e WHERE e.shard = ANY(%s) AND e.due_at >= to_timestamp(%s) "
                           "AND e.due_at < to_timestamp(%s) AND NOT EXISTS (SELECT 1 FROM trialwatch.ledger l WHERE "
                           "l.event_id = e.event_id)", (list(owned), since - 1.0, until))
            rows = cursor.fetchall()
            with self.lock:
                for shard, epoch in owned.items():
                    self.loaded[shard] = (epoch, until)
                for event_id, shard, due, trial_id, kind, subject in rows:
                    key = (event_id, shard, owned[shard])
                    if key not in self.scheduled:
                        self.scheduled.add(key)
                        heapq.heappush(self.heap, (due, event_id, shard, owned[shard], trial_id, kind, subject))
                self.lock.notify()

    # --- Firing ------------------------------------------------------------------------------

    def fire(self):
        db = None
        while True:
            with self.lock:
                while not self.heap or self.heap[0][0] > time.time():
                    self.lock.wait(min(0.05, self.heap[0][0] - time.time()) if self.heap else 0.05)
                due_now = []
                while self.heap and self.heap[0][0] <= time.time():
                    due_now.append(heapq.heappop(self.heap))
                valid = time.monotonic() < self.lease_until
                dropped = [event for event in due_now if not valid or self.owned.get(event[2]) != event[3]]
                due_now = [event for event in due_now if event not in dropped]
                # loaded again if the node still owns the shard once its lease is renewed
                self.scheduled -= {(event[1], event[2], event[3]) for event in dropped}
                for event in dropped:
                    self.loaded.pop(event[2], None)
            if not due_now:
                continue
            taken = time.time()
            try:
                if db is None:
                    db = connect(self.dsn)
                self.take(db.cursor(), due_now, taken)
            except psycopg2.Error:
                db = None
                with self.lock:  # tried again once the shard is loaded again
                    self.scheduled -= {(event[1], event[2], event[3]) for event in due_now}
                    for event in due_now:
                        self.loaded.pop(event[2], None)

    def take(self, cursor, events, taken):
        """Inserts the wake's events in one statement, each only while its shard is still the
        node's under the epoch it was loaded with."""
        from psycopg2.extras import execute_values

        if BUG == "late":
            time.sleep(0.02)
        values, details = [], {}
        for due, event_id, shard, epoch, trial_id, kind, subject in events:
            if BUG == "lose" and random.random() < 0.002:
                log(f"notice   trialwatchd.events: lost event={event_id} kind={kind} late=false")
                continue
            late = taken - due > 1
            values.append((event_id, trial_id, shard, kind, due, taken, late, epoch))
            details[event_id] = (event_id, kind, subject, trial_id, late)
        if not values:
            return
        rows = execute_values(
            cursor,
            "INSERT INTO trialwatch.ledger (event_id, trial_id, shard, kind, outcome, due_at, taken_at, late, node, "
            "epoch) SELECT v.event_id, v.trial_id, v.shard, v.kind, 'fired', to_timestamp(v.due), "
            "to_timestamp(v.taken), v.late, %s, v.epoch FROM (VALUES %%s) AS v(event_id, trial_id, shard, kind, due, "
            "taken, late, epoch) JOIN trialwatch.shard s ON s.shard = v.shard AND s.owner = %s AND s.epoch = v.epoch "
            "ON CONFLICT (event_id) DO NOTHING RETURNING event_id" % (cursor.mogrify("%s", (self.name,)).decode(),
                                                                        int(self.node_id)),
            values, template="(%s, %s::bigint, %s::int, %s, %s::float8, %s::float8, %s::bool, %s::bigint)",
            page_size=len(values), fetch=True)
        took = [details[row[0]] for row in rows]
        self.deliver(cursor, took)

    def deliver(self, cursor, took):
        for event_id, kind, subject, trial_id, late in took:
            what = "expired" if kind == "expiry" else "ends in 10s"
            log(f"notice   trialwatchd.events: Trial {subject} (id {trial_id:016x}) {what} "
                f"event={event_id} kind={kind} late={'true' if late else 'false'}")
        if took:
            cursor.execute("UPDATE trialwatch.ledger SET delivered_at = clock_timestamp() WHERE event_id = ANY(%s)",
                           ([event[0] for event in took],))

    # --- Varlink -----------------------------------------------------------------------------

    def serve(self, path):
        if os.path.exists(path):
            os.unlink(path)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
        server.listen(64)
        while True:
            connection, _ = server.accept()
            threading.Thread(target=self.connection, args=(connection,), daemon=True).start()

    def connection(self, connection):
        db = connect(self.dsn)
        for requests in frames(connection):
            if requests:
                replies = self.handle(db, requests)
                connection.sendall(b"".join(json.dumps(reply).encode() + b"\0" for reply in replies))
        connection.close()
        db.close()

    def handle(self, db, requests):
        replies = []
        db.autocommit = False
        cursor = db.cursor()
        for request in requests:
            method = request.get("method", "").rsplit(".", 1)[-1]
            parameters = request.get("parameters", {})
            if method == "GetStatus":
                replies.append({"parameters": {"node": self.name}})
            elif method == "StartTrial":
                trial_id = random.getrandbits(63)
                shard = trial_id % self.shards
                ends = parameters["endsAt"]
                cursor.execute("INSERT INTO trialwatch.trial VALUES (%s, %s, %s, 'active', %s)",
                               (trial_id, shard, parameters["subject"], ends))
                prefix = f"{trial_id:016x}-r1"
                cursor.execute("INSERT INTO trialwatch.event VALUES (%s, %s, %s, 'expiry', %s, %s)",
                               (f"{prefix}-expiry", trial_id, shard, ends, parameters["subject"]))
                for reminder in parameters.get("reminders", []):
                    seconds = int(reminder.rstrip("s"))
                    cursor.execute("INSERT INTO trialwatch.event VALUES (%s, %s, %s, 'reminder', "
                                   "%s::timestamptz - %s * interval '1 s', %s)",
                                   (f"{prefix}-reminder-{seconds * 1000}ms", trial_id, shard, ends, seconds,
                                    parameters["subject"]))
                replies.append({"parameters": {"trial": {"id": f"{trial_id:016x}", "subject": parameters["subject"],
                                                         "endsAt": ends, "revision": 1, "state": "active",
                                                         "reminders": parameters.get("reminders", [])}}})
            else:
                replies.append({"error": "org.varlink.service.MethodNotFound", "parameters": {"method": method}})
        db.commit()
        db.autocommit = True
        return replies


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", required=True)
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--socket", required=True)
    args = parser.parse_args()
    config = read_config(args.config)
    signal.signal(signal.SIGTERM, lambda *_: (sys.stderr.flush(), os._exit(0)))
    node = Node(config[("PostgreSQL", "Connection")], config[("PostgreSQL", "NodeName")],
                int(config[("PostgreSQL", "Shards")]))
    threading.Thread(target=node.coordinate, daemon=True).start()
    threading.Thread(target=node.fire, daemon=True).start()
    log(f"notice   trialwatchd: ready node={node.name} node_id={node.node_id}")
    node.serve(args.socket)


if __name__ == "__main__":
    main()
