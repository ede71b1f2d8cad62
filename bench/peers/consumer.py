# The action side of the polled peers and of trialwatch, run as a process of its own:
#
#   consumer.py postgres HOST PORT INTERVAL ACTIONS   a job-table poller (SELECT ... FOR UPDATE
#                                                      SKIP LOCKED every INTERVAL seconds)
#   consumer.py sqlite   FILE INTERVAL ACTIONS         the same over a SQLite file in WAL mode
#   consumer.py redis    SOCKET INTERVAL ACTIONS       ZRANGEBYSCORE + ZREM on a sorted set
#   consumer.py trialwatch SOCKET ACTIONS              io.trialwatch.Trials.Watch, one reply a
#                                                      callback
#
# "The action" is one call of `act(id)` per event, in this process: it appends `ID NANOSECONDS`
# (the wall clock when the action started) to ACTIONS. A poller takes due jobs in batches of
# 1,000 in one transaction, runs the action for each, deletes them and commits, and polls again
# at once while the batch was full (the way db-scheduler and River work a backlog); otherwise it
# sleeps until the next poll.
import json
import socket
import sys
import time

BATCH = 1000


class Actions:
    def __init__(self, path):
        self.file = open(path, "a", buffering=1 << 16)

    def act(self, key):
        self.file.write(f"{key} {time.time_ns()}\n")

    def flush(self):
        self.file.flush()


def sleep_until_next(start, interval):
    time.sleep(max(0.0, start + interval - time.monotonic()))


def postgres(host, port, interval, actions):
    import psycopg2

    connection = psycopg2.connect(host=host, port=int(port), user="nobody", dbname="postgres")
    cursor = connection.cursor()
    while True:
        start = time.monotonic()
        while True:
            cursor.execute(
                "SELECT id FROM jobs WHERE due <= now() ORDER BY due LIMIT %s FOR UPDATE SKIP LOCKED", (BATCH,)
            )
            ids = [row[0] for row in cursor.fetchall()]
            for key in ids:
                actions.act(key)
            if ids:
                cursor.execute("DELETE FROM jobs WHERE id = ANY(%s)", (ids,))
            connection.commit()
            actions.flush()
            if len(ids) < BATCH:
                break
        sleep_until_next(start, interval)


def sqlite(path, interval, actions):
    import sqlite3

    connection = sqlite3.connect(path, isolation_level=None, timeout=60)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=FULL")
    while True:
        start = time.monotonic()
        while True:
            connection.execute("BEGIN IMMEDIATE")
            rows = connection.execute(
                "SELECT id FROM jobs WHERE due <= ? ORDER BY due LIMIT ?", (time.time_ns(), BATCH)
            ).fetchall()
            ids = [row[0] for row in rows]
            for key in ids:
                actions.act(key)
            connection.executemany("DELETE FROM jobs WHERE id = ?", rows)
            connection.execute("COMMIT")
            actions.flush()
            if len(ids) < BATCH:
                break
        sleep_until_next(start, interval)


def redis_poller(path, interval, actions):
    import redis

    client = redis.Redis(unix_socket_path=path)
    while True:
        start = time.monotonic()
        while True:
            ids = client.zrangebyscore("jobs", "-inf", time.time_ns(), start=0, num=BATCH)
            for key in ids:
                actions.act(key.decode())
            if ids:
                client.zrem("jobs", *ids)
            actions.flush()
            if len(ids) < BATCH:
                break
        sleep_until_next(start, interval)


def trialwatch(path, actions):
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(path)
    call = {"method": "io.trialwatch.Trials.Watch", "parameters": {}, "more": True}
    connection.sendall(json.dumps(call).encode() + b"\0")
    buffer = b""
    first = True
    while True:
        data = connection.recv(1 << 16)
        if not data:
            raise SystemExit("consumer: trialwatchd closed the Watch connection")
        buffer += data
        *messages, buffer = buffer.split(b"\0")
        for message in messages:
            reply = json.loads(message)
            if "error" in reply:
                raise SystemExit(f"consumer: Watch failed: {reply}")
            event = reply.get("parameters", {}).get("event")
            if event is not None:
                actions.act(event["subject"])
            elif first:
                first = False
                print("watching", flush=True)
        actions.flush()


def main(argv):
    kind = argv[1]
    if kind == "postgres":
        postgres(argv[2], argv[3], float(argv[4]), Actions(argv[5]))
    elif kind == "sqlite":
        sqlite(argv[2], float(argv[3]), Actions(argv[4]))
    elif kind == "redis":
        redis_poller(argv[2], float(argv[3]), Actions(argv[4]))
    elif kind == "trialwatch":
        trialwatch(argv[2], Actions(argv[3]))
    else:
        raise SystemExit(f"consumer: unknown kind {kind}")


if __name__ == "__main__":
    try:
        main(sys.argv)
    except KeyboardInterrupt:
        pass
