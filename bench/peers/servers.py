# The peers run as servers the harness starts and stops itself, with consumer.py as their
# poller, and trialwatch with consumer.py as its Watch client. Every peer has the same face:
#   start(), stop(), pids() (the processes whose wake-ups count), memory_pids() (those whose
#   memory counts: pids(), but for trialwatch the daemon alone), client_pids() (trialwatch's Watch
#   client, whose memory is given apart; none for the others), store_paths(),
#   schedule_each(events) (one at a time, each durable before the next), schedule_bulk(events)
#   (a fast path to fill the store), clear() (no event pending), actions (the action file).
# An event is (id, due), due in nanoseconds of the wall clock.
import datetime
import json
import os
import pwd
import socket
import subprocess
import sys
import time

from common import BenchError, children_of, now_ns, on_cleanup, done, run, stop_process

HERE = os.path.dirname(os.path.abspath(__file__))
CONSUMER = os.path.join(HERE, "consumer.py")


def wait_for(condition, seconds, what):
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise BenchError(f"{what} within {seconds} s")
        time.sleep(0.05)


def utc(due_ns):
    return datetime.datetime.fromtimestamp(due_ns / 1e9, datetime.timezone.utc)


class Peer:
    """What the polled peers share: a consumer.py process and its action file."""

    max_each = None  # the most events schedule_each takes in reasonable time (None: any)
    interval = 0.0  # seconds between polls, for the waits

    def __init__(self, name, directory):
        self.name = name
        self.directory = directory
        os.makedirs(directory, exist_ok=True)
        self.actions = os.path.join(directory, "actions")
        self.consumer = None
        self.cleanup = None

    def start_consumer(self, args):
        log = open(os.path.join(self.directory, "consumer.log"), "w")
        self.consumer = subprocess.Popen(
            [sys.executable, CONSUMER, *args, self.actions], stdout=log, stderr=log, stdin=subprocess.DEVNULL
        )
        handle = on_cleanup(lambda: stop_process(self.consumer))
        self.consumer_cleanup = handle

    def check_consumer(self):
        if self.consumer is not None and self.consumer.poll() is not None:
            with open(os.path.join(self.directory, "consumer.log")) as log:
                tail = " | ".join(log.read().strip().splitlines()[-5:])
            raise BenchError(f"{self.name}: the consumer exited with {self.consumer.returncode}: {tail}")

    def stop_consumer(self):
        if self.consumer is not None:
            done(self.consumer_cleanup)
            self.consumer = None

    def memory_pids(self):
        return self.pids()

    def client_pids(self):
        return []


class Postgres(Peer):
    """A private PostgreSQL cluster (initdb in a temporary folder, run as nobody, a Unix socket
    only, fsync and synchronous_commit on: the defaults), a job table polled every interval."""

    PORT = 54329

    def __init__(self, name, directory, interval):
        super().__init__(name, directory)
        self.interval = interval
        self.data = os.path.join(directory, "data")

    def bin(self, tool):
        return f"/usr/lib/postgresql/{self.version}/bin/{tool}"

    def as_nobody(self, args, what, **kwargs):
        return run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *args], what, **kwargs)

    def start(self):
        versions = sorted(os.listdir("/usr/lib/postgresql")) if os.path.isdir("/usr/lib/postgresql") else []
        if not versions:
            raise BenchError("no PostgreSQL server under /usr/lib/postgresql (make deps installs postgresql)")
        self.version = versions[-1]
        nobody = pwd.getpwnam("nobody")
        os.chown(self.directory, nobody.pw_uid, nobody.pw_gid)
        self.as_nobody([self.bin("initdb"), "-D", self.data, "-U", "nobody", "--auth=trust", "-E", "UTF8"], "initdb")
        options = f"-c listen_addresses='' -c unix_socket_directories={self.directory} -p {self.PORT}"
        self.cleanup = on_cleanup(self.halt)
        self.as_nobody(
            [self.bin("pg_ctl"), "-D", self.data, "-w", "-l", os.path.join(self.directory, "server.log"),
             "-o", options, "start"], "pg_ctl start")
        self.sql("CREATE TABLE jobs (id text PRIMARY KEY, due timestamptz NOT NULL)")
        self.sql("CREATE INDEX jobs_due ON jobs (due)")
        self.start_consumer(["postgres", self.directory, str(self.PORT), str(self.interval)])

    def halt(self):
        if os.path.exists(os.path.join(self.data, "postmaster.pid")):
            self.as_nobody([self.bin("pg_ctl"), "-D", self.data, "-w", "-m", "fast", "stop"], "pg_ctl stop")

    def stop(self):
        self.stop_consumer()
        done(self.cleanup)

    def connect(self):
        import psycopg2

        return psycopg2.connect(host=self.directory, port=self.PORT, user="nobody", dbname="postgres")

    def sql(self, statement):
        connection = self.connect()
        connection.autocommit = True
        connection.cursor().execute(statement)
        connection.close()

    def server_pid(self):
        with open(os.path.join(self.data, "postmaster.pid")) as pidfile:
            return int(pidfile.readline())

    def pids(self):
        pid = self.server_pid()
        return [pid, *children_of(pid), self.consumer.pid]

    def store_paths(self):
        return [self.data]

    def schedule_each(self, events, lane=""):
        connection = self.connect()
        cursor = connection.cursor()
        for key, due in events:
            cursor.execute("INSERT INTO jobs VALUES (%s, %s)", (key, utc(due)))
            connection.commit()
        connection.close()

    def schedule_bulk(self, events):
        from psycopg2.extras import execute_values

        connection = self.connect()
        execute_values(connection.cursor(), "INSERT INTO jobs VALUES %s",
                       [(key, utc(due)) for key, due in events], page_size=5000)
        connection.commit()
        connection.close()

    def clear(self):
        self.sql("TRUNCATE jobs")
        self.sql("CHECKPOINT")


class SQLite(Peer):
    """A SQLite file in WAL mode with synchronous=FULL (a commit is durable), polled by
    consumer.py; there is no server process, the poller is the one process."""

    def __init__(self, name, directory, interval):
        super().__init__(name, directory)
        self.interval = interval
        self.file = os.path.join(directory, "jobs.db")

    def connect(self):
        import sqlite3

        connection = sqlite3.connect(self.file, isolation_level=None, timeout=60)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=FULL")
        return connection

    def start(self):
        connection = self.connect()
        connection.execute("CREATE TABLE jobs (id TEXT PRIMARY KEY, due INTEGER NOT NULL)")
        connection.execute("CREATE INDEX jobs_due ON jobs (due)")
        connection.close()
        self.start_consumer(["sqlite", self.file, str(self.interval)])

    def stop(self):
        self.stop_consumer()

    def pids(self):
        return [self.consumer.pid]

    def store_paths(self):
        return [self.directory + "/jobs.db", self.directory + "/jobs.db-wal", self.directory + "/jobs.db-shm"]

    def schedule_each(self, events, lane=""):
        connection = self.connect()
        for key, due in events:
            connection.execute("INSERT INTO jobs VALUES (?, ?)", (key, due))
        connection.close()

    def schedule_bulk(self, events):
        connection = self.connect()
        connection.execute("BEGIN")
        connection.executemany("INSERT INTO jobs VALUES (?, ?)", events)
        connection.execute("COMMIT")
        connection.close()

    def clear(self):
        connection = self.connect()
        connection.execute("DELETE FROM jobs")
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        connection.execute("VACUUM")
        connection.close()


class Redis(Peer):
    """A private redis-server (a Unix socket, no TCP port; appendonly yes, appendfsync always),
    a sorted set scored by due time in nanoseconds, polled every interval."""

    def __init__(self, name, directory, interval):
        super().__init__(name, directory)
        self.interval = interval
        self.socket = os.path.join(directory, "redis.sock")

    def start(self):
        log = open(os.path.join(self.directory, "server.log"), "a")
        self.server = subprocess.Popen(
            ["redis-server", "--port", "0", "--unixsocket", self.socket, "--dir", self.directory,
             "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--daemonize", "no"],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        self.cleanup = on_cleanup(lambda: stop_process(self.server))
        wait_for(lambda: os.path.exists(self.socket) or self.server.poll() is not None, 30, "redis-server did not start")
        if self.server.poll() is not None:
            raise BenchError(f"redis-server exited with {self.server.returncode} (see its log)")
        self.start_consumer(["redis", self.socket, str(self.interval)])

    def stop(self):
        self.stop_consumer()
        done(self.cleanup)

    def client(self):
        import redis

        return redis.Redis(unix_socket_path=self.socket)

    def pids(self):
        return [self.server.pid, self.consumer.pid]

    def store_paths(self):
        return [self.directory + "/appendonlydir"]

    def schedule_each(self, events, lane=""):
        client = self.client()
        for key, due in events:
            client.zadd("jobs", {key: due})

    def schedule_bulk(self, events):
        pipe = self.client().pipeline(transaction=False)
        for index, (key, due) in enumerate(events):
            pipe.zadd("jobs", {key: due})
            if index % 5000 == 4999:
                pipe.execute()
        pipe.execute()

    def clear(self):
        client = self.client()
        client.delete("jobs")
        client.bgrewriteaof()
        wait_for(lambda: client.info("persistence")["aof_rewrite_in_progress"] == 0, 60, "the AOF rewrite did not end")


class Trialwatch(Peer):
    """The release build's trialwatchd from a temporary state folder with its own socket;
    trials started with StartTrial(endsAt, no reminders); the action is the receipt of the
    expiry by consumer.py, a Watch client."""

    CONFIG = (
        "[Daemon]\nLogLevel=warning\nLogTarget=console\nIdleTimeout=infinity\n"
        "[Journal]\nRateLimitBurst=0\n"
    )

    def __init__(self, name, directory, daemon):
        super().__init__(name, directory)
        self.daemon = daemon
        self.socket = os.path.join(directory, "io.trialwatch")
        self.state = os.path.join(directory, "state")
        self.process = None

    def start(self):
        self.start_daemon()
        self.start_consumer(["trialwatch", self.socket])
        wait_for(self.watching, 30, "the Watch client did not start watching")

    def start_daemon(self):
        """trialwatchd alone, once it answers on its socket."""
        if not os.access(self.daemon, os.X_OK):
            raise BenchError(f"{self.daemon} is not an executable trialwatchd (make bench-peers builds it)")
        config = os.path.join(self.directory, "trialwatch.conf")
        with open(config, "w") as file:
            file.write(self.CONFIG)
        env = {k: v for k, v in os.environ.items() if k not in ("NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID",
                                                              "WATCHDOG_USEC", "JOURNAL_STREAM")}
        log = open(os.path.join(self.directory, "trialwatchd.log"), "a")
        self.process = subprocess.Popen(
            [self.daemon, "--config", config, "--state-dir", self.state, "--socket", self.socket],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL, env=env)
        self.cleanup = on_cleanup(lambda: stop_process(self.process))
        wait_for(self.answers, 60, "trialwatchd did not answer on its socket")

    def watching(self):
        self.check_consumer()
        with open(os.path.join(self.directory, "consumer.log")) as log:
            return "watching" in log.read()

    def answers(self):
        if self.process.poll() is not None:
            raise BenchError(f"trialwatchd exited with {self.process.returncode} (see its log)")
        try:
            self.calls([("GetStatus", {})])
            return True
        except OSError:
            return False

    def stop(self):
        self.stop_consumer()
        done(self.cleanup)
        if self.process.returncode != 0:
            raise BenchError(f"trialwatchd stopped with status {self.process.returncode}")

    def calls(self, calls, depth=1):
        """Makes the calls over one connection, `depth` in flight; raises on an error reply."""
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.connect(self.socket)
        buffer, sent, answered = b"", 0, 0
        encoded = [json.dumps({"method": "io.trialwatch.Trials." + m, "parameters": p}).encode() + b"\0"
                   for m, p in calls]
        while answered < len(calls):
            if sent < len(calls) and sent - answered < depth:
                batch = encoded[sent:answered + depth]
                connection.sendall(b"".join(batch))
                sent += len(batch)
            data = connection.recv(1 << 16)
            if not data:
                raise BenchError("trialwatchd closed the connection")
            buffer += data
            *replies, buffer = buffer.split(b"\0")
            for reply in replies:
                if b'"error"' in reply[:40]:
                    raise BenchError(f"trialwatchd: {reply.decode()[:300]}")
            answered += len(replies)
        connection.close()

    @staticmethod
    def start_call(key, due):
        text = utc(due).strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"
        return ("StartTrial", {"subject": key, "endsAt": text, "reminders": []})

    def pids(self):
        return [self.process.pid, self.consumer.pid]

    def memory_pids(self):
        """trialwatchd alone: its Watch client, a Python process, is what a poller's callback
        would be, and is counted apart (client_pids)."""
        return [self.process.pid]

    def client_pids(self):
        return [self.consumer.pid]

    def store_paths(self):
        return [self.state]

    def schedule_each(self, events, lane=""):
        self.calls([self.start_call(key, due) for key, due in events], depth=1)

    def schedule_bulk(self, events):
        self.calls([self.start_call(key, due) for key, due in events], depth=64)

    def clear(self):
        """A fresh daemon on an empty state folder (ending 100,000 trials would log 100,000
        events; the other peers' clear drops their rows)."""
        self.stop()
        subprocess.run(["rm", "-rf", self.state], check=True)
        self.start()
