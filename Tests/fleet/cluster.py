#!/usr/bin/python3
# The fleet's PostgreSQL, shared by the fault test (fleet_test.py) and the fleet figures
# (bench/fleet/): the private cluster, the connection the harness reads it through, and every
# query it makes of it.
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench", "peers"))

from analysis import Change, Row  # noqa: E402
from common import BenchError, on_cleanup  # noqa: E402
import servers  # noqa: E402


def tail(path, lines=8):
    """The last `lines` lines of a log, on one line."""
    try:
        with open(path, errors="replace") as file:
            return " | ".join(file.read().strip().splitlines()[-lines:]) or "(empty log)"
    except OSError:
        return "(no log)"


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


class LocalPostgres(servers.Postgres):
    """PostgreSQL servers of this machine's newest version, in folders of the test's, as nobody
    when run as root (else as this user)."""

    def as_nobody(self, args, what, **kwargs):
        if os.geteuid() == 0:
            return super().as_nobody(args, what, **kwargs)
        return servers.run(args, what, **kwargs)  # not root: the servers run as this user

    def prepare(self, folders):
        """Finds the newest server under /usr/lib/postgresql and gives `folders` to nobody."""
        versions = sorted(os.listdir("/usr/lib/postgresql")) if os.path.isdir("/usr/lib/postgresql") else []
        if not versions:
            raise BenchError("no PostgreSQL server under /usr/lib/postgresql (make deps installs postgresql)")
        self.version = versions[-1]
        if os.geteuid() == 0:
            import pwd

            nobody = pwd.getpwnam("nobody")
            for path in folders:
                os.chown(path, nobody.pw_uid, nobody.pw_gid)


class Cluster(LocalPostgres):
    """The peers harness's private cluster (initdb and pg_ctl in a folder, a Unix socket only,
    as nobody when run as root), without its job table and poller; a trialwatch database owned
    by nobody."""

    PORT = 54341

    def __init__(self, directory):
        super().__init__("postgresql", directory, 0)
        self.log = os.path.join(directory, "server.log")

    def start(self):
        self.prepare([self.directory])
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
