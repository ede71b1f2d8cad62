#!/usr/bin/python3
# A db-scheduler-style poller on PostgreSQL, what users would pick instead of a trialwatch fleet:
# a jobs table, worker processes each polling every P seconds with db-scheduler's lock-and-fetch
# (an UPDATE of the due, unpicked jobs chosen FOR UPDATE SKIP LOCKED, 100 at most, RETURNING
# them; polled again at once when the batch was full), each job executed on its own (a line in
# the worker's log, then one transaction: an executions row and the job marked done under its
# version), a heartbeat on the worker's picked jobs every H seconds, and the rescue of dead
# workers' jobs: picked, not done and with a heartbeat older than 4 x H, released (picked =
# false) by any worker, checked every H seconds.
#
#   poller.py worker --dsn DSN --name NAME --interval P --heartbeat H --log PATH
#
# The harness side (Poller, Worker) is imported by fleet_bench.py. Worker has the interface of
# fleet_test.Node that fleet_test.FaultRunner uses (name, start, kill, signal, wait_ready).
import argparse
import os
import signal
import subprocess
import sys
import time

BATCH = 100
DEAD_AFTER = 4  # heartbeats

SCHEMA = """
CREATE TABLE jobs (
  id text PRIMARY KEY,
  due timestamptz NOT NULL,
  picked boolean NOT NULL DEFAULT false,
  picked_by text,
  version integer NOT NULL DEFAULT 1,
  heartbeat timestamptz,
  done_at timestamptz
);
CREATE INDEX jobs_due ON jobs (due) WHERE NOT picked;
CREATE INDEX jobs_held ON jobs (picked_by) WHERE picked AND done_at IS NULL;
CREATE TABLE executions (id text NOT NULL, worker text NOT NULL, at timestamptz NOT NULL);
"""

SQL_PICK = """
UPDATE jobs SET picked = true, picked_by = %s, version = version + 1, heartbeat = now()
WHERE id IN (SELECT id FROM jobs WHERE due <= now() AND NOT picked ORDER BY due LIMIT %s FOR UPDATE SKIP LOCKED)
RETURNING id, version"""
SQL_EXECUTED = "INSERT INTO executions (id, worker, at) VALUES (%s, %s, to_timestamp(%s))"
SQL_DONE = "UPDATE jobs SET done_at = clock_timestamp() WHERE id = %s AND version = %s"
SQL_HEARTBEAT = "UPDATE jobs SET heartbeat = now() WHERE picked_by = %s AND picked AND done_at IS NULL"
SQL_RESCUE = """
UPDATE jobs SET picked = false, picked_by = NULL, version = version + 1
WHERE picked AND done_at IS NULL AND heartbeat < now() - make_interval(secs => %s)"""


# --- The worker process ----------------------------------------------------------------------


def work(dsn, name, interval, heartbeat, log_path):
    import psycopg2

    connection = psycopg2.connect(dsn)
    connection.autocommit = True
    cursor = connection.cursor()
    log = open(log_path, "a", buffering=1)
    log.write(f"ready {name}\n")
    now = time.time()
    next_poll, next_heartbeat, next_rescue = now, now + heartbeat, now + heartbeat

    def housekeeping():
        nonlocal next_heartbeat, next_rescue
        now = time.time()
        if now >= next_heartbeat:
            cursor.execute(SQL_HEARTBEAT, (name,))
            next_heartbeat = now + heartbeat
        if now >= next_rescue:
            cursor.execute(SQL_RESCUE, (DEAD_AFTER * heartbeat,))
            if cursor.rowcount:
                log.write(f"rescued {cursor.rowcount}\n")
            next_rescue = now + heartbeat

    while True:
        housekeeping()
        if time.time() >= next_poll:
            cursor.execute(SQL_PICK, (name, BATCH))
            jobs = cursor.fetchall()
            for job_id, version in jobs:
                fired = time.time()
                log.write(f"fire {job_id} {fired:.6f}\n")  # the job's effect, before its completion
                connection.autocommit = False
                cursor.execute(SQL_EXECUTED, (job_id, name, fired))
                cursor.execute(SQL_DONE, (job_id, version))  # 0 rows: rescued and taken again meanwhile
                connection.commit()
                connection.autocommit = True
                housekeeping()
            next_poll = time.time() if len(jobs) == BATCH else time.time() + interval
        time.sleep(max(0.0, min(next_poll, next_heartbeat, next_rescue) - time.time()))


# --- The harness side ------------------------------------------------------------------------


class Worker:
    """One worker process (named like a fleet node, so that fleet_test.FaultRunner can drive
    it); its log appended across restarts."""

    def __init__(self, name, directory, dsn, interval, heartbeat):
        self.name, self.dsn, self.interval, self.heartbeat = name, dsn, interval, heartbeat
        self.log = os.path.join(directory, f"{name}.log")
        self.process = None
        self.starts = 0

    def start(self):
        with open(self.log, "a") as log:
            self.process = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "worker", "--dsn", self.dsn, "--name", self.name,
                 "--interval", str(self.interval), "--heartbeat", str(self.heartbeat), "--log", self.log],
                stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        self.starts += 1

    def readies(self):
        try:
            with open(self.log, errors="replace") as file:
                return sum(1 for line in file if line.startswith("ready "))
        except OSError:
            return 0

    def wait_ready(self, seconds=30.0):
        deadline = time.monotonic() + seconds
        while self.readies() < self.starts:
            if self.process.poll() is not None or time.monotonic() > deadline:
                from common import BenchError  # the peers harness's, on the path of fleet_bench.py

                raise BenchError(f"poller worker {self.name} did not start (status {self.process.poll()})")
            time.sleep(0.02)
        return time.time()

    def fires(self):
        """The job ids of the worker's `fire` lines, in order, across its restarts."""
        try:
            with open(self.log, errors="replace") as file:
                return [line.split()[1] for line in file if line.startswith("fire ")]
        except OSError:
            return []

    def alive(self):
        return self.process is not None and self.process.poll() is None

    def signal(self, number):
        self.process.send_signal(number)

    def kill(self):
        self.process.kill()
        self.process.wait()

    def halt(self):
        if self.alive():
            self.process.send_signal(signal.SIGCONT)
            self.process.kill()
            self.process.wait()


class NoShards:
    """What fleet_test.FaultRunner asks of its database, for workers: they own no shard."""

    def owned_shards(self, _name):
        return frozenset()

    def close(self):
        pass


class Poller:
    """The jobs and executions tables in their own database of the cluster, and three workers
    polling every `interval` seconds (heartbeat the same)."""

    def __init__(self, cluster, database, directory, interval, names):
        self.cluster, self.database, self.interval = cluster, database, interval
        self.connection = None
        os.makedirs(directory, exist_ok=True)
        self.cluster.sql(f"CREATE DATABASE {database} OWNER nobody")
        connection = self.connect()
        connection.cursor().execute(SCHEMA)
        connection.commit()
        connection.close()
        dsn = f"host={cluster.directory} port={cluster.PORT} dbname={database} user=nobody"
        self.workers = [Worker(name, directory, dsn, interval, interval) for name in names]

    def connect(self):
        import psycopg2

        return psycopg2.connect(host=self.cluster.directory, port=self.cluster.PORT, user="nobody",
                                dbname=self.database)

    def query(self, statement, parameters=()):
        """One statement on the harness's connection (kept open: held() watches in a tight loop;
        no statement of the harness runs while the database's statements are counted)."""
        if self.connection is None:
            self.connection = self.connect()
            self.connection.autocommit = True
        cursor = self.connection.cursor()
        cursor.execute(statement, parameters)
        return cursor.fetchall() if cursor.description else []

    def start(self):
        for worker in self.workers:
            worker.start()
        for worker in self.workers:
            worker.wait_ready()

    def halt(self):
        for worker in self.workers:
            worker.halt()
        if self.connection is not None:
            self.connection.close()
            self.connection = None

    def schedule(self, jobs):
        """Inserts the jobs [(id, due in seconds since the epoch)]."""
        from psycopg2.extras import execute_values

        connection = self.connect()
        execute_values(connection.cursor(), "INSERT INTO jobs (id, due) VALUES %s",
                       [(job_id, due) for job_id, due in jobs], template="(%s, to_timestamp(%s))", page_size=5000)
        connection.commit()
        connection.close()

    def executions(self, ids):
        """[(id, worker, at, due)] of the executions of the jobs `ids` (times in seconds)."""
        return self.query("""
            SELECT e.id, e.worker, EXTRACT(EPOCH FROM e.at)::float8, EXTRACT(EPOCH FROM j.due)::float8
            FROM executions e JOIN jobs j USING (id) WHERE e.id = ANY(%s)""", (list(ids),))

    def done(self, ids):
        return self.query("SELECT count(*) FROM jobs WHERE id = ANY(%s) AND done_at IS NOT NULL", (list(ids),))[0][0]

    def held(self, ids):
        """{worker: [id]} of the jobs among `ids` picked and not done."""
        held = {}
        for job_id, worker in self.query("SELECT id, picked_by FROM jobs WHERE id = ANY(%s) AND picked "
                                         "AND done_at IS NULL", (list(ids),)):
            held.setdefault(worker, []).append(job_id)
        return held


def main():
    parser = argparse.ArgumentParser(description="A db-scheduler-style poller worker.")
    parser.add_argument("command", choices=["worker"])
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--interval", type=float, required=True, help="seconds between polls")
    parser.add_argument("--heartbeat", type=float, required=True, help="seconds between heartbeats")
    parser.add_argument("--log", required=True)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    work(args.dsn, args.name, args.interval, args.heartbeat, args.log)


if __name__ == "__main__":
    main()
