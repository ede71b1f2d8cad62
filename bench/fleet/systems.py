#!/usr/bin/python3
# The systems the fleet figures compare (fleet_bench.py): the fleet of trialwatchd nodes and the
# poller, each scheduling events its own way and reporting what it took, and the count of the
# statements each one's database runs.
import os
import sys
import time

import analysis
from cluster import SQL_LEDGER, Database
from common import on_cleanup
from nodes import NODES, SHARDS, make_nodes, start_nodes
from scenario import Spec, sleep_until, start_trials
import poller as pollers

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
        sleep_until(until if until is not None else began + seconds)
        rate = (self.count(database) - start) / (time.time() - began)
        elapsed = time.time() - began
        after = self.calls(database)
        deltas = sorted(((calls - before.get(query, 0), query) for query, calls in after.items()), reverse=True)
        for calls, query in deltas[:5]:
            note(f"{database}: {calls / elapsed:.1f}/s {query}")
        return rate


# --- The systems: how each schedules events and reports what it took ----------------------


class System:
    """What the phases ask of a system, beside its name and database, schedule(dues), taken(ids),
    fired(ids), settle_timeout() and halt(): the lead to leave for scheduling events (a fixed
    LEAD and SCHEDULED_PER_S), and the numbering of the events it schedules."""

    LEAD, SCHEDULED_PER_S = 2.0, 1500

    def __init__(self):
        self.count = 0

    def lead(self, count):
        return self.LEAD + count / self.SCHEDULED_PER_S

    def numbered(self, prefix, dues):
        """[(PREFIX-N, due to the microsecond)] of the due times, N counting on across calls."""
        first = self.count + 1
        self.count += len(dues)
        return [(f"{prefix}-{first + index}", round(due, 6)) for index, due in enumerate(dues)]


class Fleet(System):
    name, database = "fleet", "trialwatch"

    def __init__(self, cluster, scratch, daemon):
        super().__init__()
        self.cluster = cluster
        self.db = Database(cluster)
        on_cleanup(self.db.close)
        self.nodes = make_nodes(scratch, daemon, cluster)
        self.by_name = {node.name: node for node in self.nodes}

    def start(self):
        start_nodes(self.nodes, self.db)
        if not wait_until(self.balanced, 30.0, 0.25):
            note("the shards are not balanced 30 s after the nodes answered")
        owners = self.db.owners()
        note("fleet ready; shards per owner: " + ", ".join(f"{name} {count}" for name, count in owners.items()))

    def schedule(self, dues):
        """Starts a trial ending at each due time (no reminders); returns [(event id, due)]."""
        specs = [Spec(subject, due, []) for subject, due in self.numbered("bench", dues)]
        started = time.time()
        expected = start_trials(self.nodes, specs)
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
        return [analysis.Row(*row) for row in self.db.query(SQL_LEDGER + " WHERE event_id = ANY(%s)",
                                                             (list(ids),))]

    def settle_timeout(self):
        return 60.0

    def balanced(self):
        owners = self.db.owners()
        return len(owners) == len(self.nodes) and min(owners.values()) >= SHARDS // len(self.nodes) - 2

    def halt(self):
        for node in self.nodes:
            status, why = node.terminate()
            if status != 0:
                note(f"{node.name} exited with {status} {why}")
        self.db.close()


class PollerSystem(System):
    LEAD, SCHEDULED_PER_S = 1.0, 20000

    def __init__(self, cluster, scratch, interval, name):
        super().__init__()
        self.name, self.database, self.interval = name, name, interval
        self.poller = pollers.Poller(cluster, name, os.path.join(scratch, name), interval, NODES)
        on_cleanup(self.poller.halt)

    def start(self):
        self.poller.start()
        note(f"{self.name}: {len(self.poller.workers)} workers polling every {self.interval:g} s")

    def schedule(self, dues):
        jobs = self.numbered(self.name, dues)
        self.poller.schedule(jobs)
        return jobs

    def taken(self, ids):
        return [(job_id, at, due) for job_id, _worker, at, due in self.poller.executions(ids)]

    fired = taken

    def settle_timeout(self):
        return 6 * self.interval + 30.0

    def halt(self):
        self.poller.halt()

