#!/usr/bin/python3
# The failover test's PostgreSQL (failover_test.py): two servers on this machine, a primary and
# a streaming standby made from it with pg_basebackup, each with its own Unix socket folder and
# port, run as nobody when root (as cluster.py's). The nodes connect to both with
# `target_session_attrs=read-write`, so that they follow whichever is the primary. A failover
# stops the primary (`pg_ctl stop -m fast` or `-m immediate`), promotes the standby, then makes
# a new standby of the new primary in a new data folder of the old one's server (its socket and
# port stay, so the nodes' connection string stays right); the old data folder is kept, to be
# started alone at the end and compared with the new primary (what the failover lost).
#
# Synchronous replication: `synchronous_standby_names = '*'` on the primary once its standby
# streams. A standby is made with '' (a promoted standby is alone until the next is made: a
# commit must not wait for a standby that is not there); the harness sets '*' on the new primary
# once its new standby streams, as an operator (or a failover manager) would.
import os
import time

from cluster import LocalPostgres, tail  # first: it puts bench/peers on the path
from common import BenchError, on_cleanup

# How long a standby may take to stream after its start, and to be the synchronous one after the
# primary's reload: one machine, a database of a few megabytes (a bound on the harness's wait
# only, never a figure).
STREAM_TIMEOUT = 60.0


class Server:
    """One PostgreSQL server of the pair: its socket folder and port (fixed for the run), and
    its current data folder (a new one each time it is made a standby again)."""

    def __init__(self, owner, name, directory, port):
        self.owner, self.name, self.directory, self.port = owner, name, directory, port
        self.generation = 0
        self.data = None
        self.log = os.path.join(directory, "server.log")
        self.old = []  # data folders it served before, newest last
        os.makedirs(directory, exist_ok=True)

    def next_data(self):
        if self.data is not None:
            self.old.append(self.data)
        self.generation += 1
        self.data = os.path.join(self.directory, f"data-{self.generation}")
        return self.data

    def options(self, port=None):
        return (f"-c listen_addresses='' -c unix_socket_directories={self.directory} -p {port or self.port} "
                "-c wal_sender_timeout=5s -c wal_receiver_status_interval=1s")

    def start(self, data=None, port=None):
        try:
            self.owner.as_nobody([self.owner.bin("pg_ctl"), "-D", data or self.data, "-w", "-t", "60", "-l", self.log,
                                  "-o", self.options(port), "start"], f"pg_ctl start ({self.name})")
        except BenchError as error:
            raise BenchError(f"{error}; its log: {tail(self.log, 4)}")

    def stop(self, mode, data=None):
        self.owner.as_nobody([self.owner.bin("pg_ctl"), "-D", data or self.data, "-w", "-t", "60", "-m", mode, "stop"],
                             f"pg_ctl stop -m {mode} ({self.name})")

    def running(self, data=None):
        return os.path.exists(os.path.join(data or self.data, "postmaster.pid"))

    def halt(self):
        for data in [*self.old, self.data]:
            if data and self.running(data):
                try:
                    self.stop("immediate", data)
                except BenchError:
                    pass

    def dsn(self, dbname="postgres", port=None):
        return f"host={self.directory} port={port or self.port} user=nobody dbname={dbname}"

    def connect(self, dbname="postgres", port=None):
        import psycopg2

        connection = psycopg2.connect(self.dsn(dbname, port))
        connection.autocommit = True
        return connection

    def sql(self, statement, parameters=(), dbname="postgres", port=None):
        connection = self.connect(dbname, port)
        try:
            cursor = connection.cursor()
            cursor.execute(statement, parameters)
            return cursor.fetchall() if cursor.description else []
        finally:
            connection.close()


class Pair(LocalPostgres):
    """A primary and a standby. `synchronous`: commits wait for the standby (when there is one);
    a change takes effect with the next standby made."""

    def __init__(self, directory, synchronous, ports=(54342, 54343)):
        super().__init__("postgresql", directory, 0)
        self.synchronous = synchronous
        self.servers = [Server(self, "pg-a", os.path.join(directory, "pg-a"), ports[0]),
                        Server(self, "pg-b", os.path.join(directory, "pg-b"), ports[1])]
        self.primary, self.standby = self.servers
        self.stopped = []  # [(server, data folder)]: the primaries stopped, in order

    def start(self):
        self.prepare([self.directory, *(server.directory for server in self.servers)])
        on_cleanup(lambda: [server.halt() for server in self.servers])
        self.as_nobody([self.bin("initdb"), "-D", self.primary.next_data(), "-U", "nobody", "--auth=trust", "-E",
                        "UTF8", "--no-sync"], "initdb")
        self.primary.start()
        self.primary.sql("CREATE DATABASE trialwatch OWNER nobody")
        self.make_standby(self.standby)

    def make_standby(self, server):
        """Makes `server` a standby of the primary, in a new data folder, and waits until it
        streams (and, synchronous, until the primary's commits wait for it)."""
        began = time.monotonic()
        data = server.next_data()
        # --no-sync (and initdb's): the test survives no crash of the machine, only of servers.
        self.as_nobody([self.bin("pg_basebackup"), "-D", data, "-d", self.primary.dsn(), "-X", "stream",
                        "--no-sync", "-c", "fast"], f"pg_basebackup ({server.name})")
        copied = time.monotonic()
        with open(os.path.join(data, "postgresql.auto.conf"), "a") as conf:
            conf.write(f"primary_conninfo = '{self.primary.dsn()} application_name={server.name}'\n"
                       "synchronous_standby_names = ''\n")
        with open(os.path.join(data, "standby.signal"), "w"):
            pass
        server.start()
        started = time.monotonic()
        self.wait_standby(server, "streaming", "state")
        self.primary.sql(f"ALTER SYSTEM SET synchronous_standby_names = '{'*' if self.synchronous else ''}'")
        self.primary.sql("SELECT pg_reload_conf()")
        if self.synchronous:
            self.wait_standby(server, "sync", "sync_state")
        return (f"pg_basebackup {copied - began:.1f} s, start {started - copied:.1f} s, streaming "
                f"{time.monotonic() - started:.1f} s")

    def wait_standby(self, server, value, column):
        deadline = time.monotonic() + STREAM_TIMEOUT
        while True:
            rows = self.primary.sql(f"SELECT {column} FROM pg_stat_replication WHERE application_name = %s",
                                    (server.name,))
            if rows and rows[0][0] == value:
                return
            if time.monotonic() > deadline:
                raise BenchError(f"the standby {server.name} is not {value} within {STREAM_TIMEOUT:.0f} s "
                                 f"(pg_stat_replication: {rows}); its log: {tail(server.log, 4)}")
            time.sleep(0.05)

    def stop_primary(self, mode):
        self.primary.stop(mode)
        self.stopped.append((self.primary, self.primary.data))

    def promote(self):
        """Promotes the standby (pg_ctl promote -w: returns once it takes writes); it is the
        primary from then on, alone until `replace_standby`."""
        self.as_nobody([self.bin("pg_ctl"), "-D", self.standby.data, "-w", "-t", "60", "promote"],
                       f"pg_ctl promote ({self.standby.name})")
        self.primary, self.standby = self.standby, self.primary

    def replace_standby(self):
        """Makes the old primary's server a standby of the new primary, from a new base backup;
        returns how long each step took, as text."""
        return self.make_standby(self.standby)

    def connection_string(self):
        hosts = ",".join(server.directory for server in self.servers)
        ports = ",".join(str(server.port) for server in self.servers)
        return f"host={hosts} port={ports} dbname=trialwatch user=nobody target_session_attrs=read-write"

    def connect(self, dbname="postgres"):
        import psycopg2

        return psycopg2.connect(self.connection_string().replace("dbname=trialwatch", f"dbname={dbname}"))

    def read_stopped(self, index, queries, port=54344):
        """Starts the data folder of the `index`th stopped primary alone (on `port`: no node
        knows it), runs the queries on its trialwatch database, stops it; returns their rows."""
        server, data = self.stopped[index]
        with open(os.path.join(data, "postgresql.auto.conf"), "a") as conf:
            conf.write("synchronous_standby_names = ''\n")  # alone: its commits must not wait
        server.start(data, port)
        try:
            connection = server.connect("trialwatch", port)
            try:
                cursor = connection.cursor()
                results = []
                for query in queries:
                    cursor.execute(query)
                    results.append(cursor.fetchall())
                return results
            finally:
                connection.close()
        finally:
            server.stop("fast", data)

    def halt(self):
        for server in self.servers:
            server.halt()
