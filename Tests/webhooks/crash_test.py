#!/usr/bin/env python3
"""The webhooks' crash test: trialwatchd and its sender (trialwatch-webhooks) each killed with
SIGKILL again and again while events are taken and delivered to three endpoints, one of them
failing 30 % of its requests with a 500. Every event reaches every endpoint that wants it,
verified by the reference libraries (receiver.py: standardwebhooks and svix), none is lost, and
every repeat carries its event's id as its webhook-id.

    crash_test.py --daemon .build-release/release/trialwatchd --scratch DIR [--trials 500]
        [--kills 20] [--seed N]

Each trial is started, paused and resumed: two events (paused, resumed), taken at once, so that
no wait for a due time is needed. Endpoint `all` wants every event, `paused` only pauses, and
`flaky` every event from a receiver that fails now and then (its retries wait 1 s: RetrySchedule=
0, 1s). The daemon and the sender are each killed `--kills` times at random moments while the
calls run and the deliveries catch up; a call that meets a dead daemon is made again once it is
back (a start that had been committed then answers SubjectAlreadyActive, and so on: the effect
counts). Exit status 0 when everything holds; each failure is printed.
"""
import argparse
import base64
import json
import os
import random
import secrets
import shutil
import socket
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
from common import BenchError, frames, note, on_cleanup, run_main, stop_process  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ALREADY = {  # the error a call made again answers when its first making was committed
    "StartTrial": "io.trialwatch.SubjectAlreadyActive",
    "PauseTrial": "io.trialwatch.TrialNotActive",
    "ResumeTrial": "io.trialwatch.TrialNotPaused",
}


class Receiver:
    """receiver.py with one secret; every request it got, by webhook-id."""

    def __init__(self, directory, name):
        self.secret_file = os.path.join(directory, f"{name}.secret")
        with open(self.secret_file, "w") as file:
            file.write("whsec_" + base64.b64encode(secrets.token_bytes(32)).decode() + "\n")
        os.chmod(self.secret_file, 0o600)
        self.process = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "receiver.py"), self.secret_file], stdout=subprocess.PIPE,
            text=True, stderr=open(os.path.join(directory, f"{name}.receiver.log"), "w"))
        on_cleanup(lambda: stop_process(self.process))
        self.port = json.loads(self.process.stdout.readline())["listening"]
        self.requests = {}
        self.unverified = []
        self.lock = threading.Lock()
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        for line in self.process.stdout:
            request = json.loads(line)
            checks = [v for c in request["checks"].values() for v in c.values()]
            with self.lock:
                if checks and all(v == "ok" for v in checks):
                    body = json.loads(request["body"])
                    self.requests.setdefault(request["headers"]["webhook-id"], []).append(body)
                else:
                    self.unverified.append(request)

    def received(self):
        with self.lock:
            return {key: list(value) for key, value in self.requests.items()}


class Processes:
    """trialwatchd and the sender, started again after each kill."""

    def __init__(self, directory, daemon):
        self.directory = directory
        self.daemon_path = daemon
        self.socket = os.path.join(directory, "io.trialwatch")
        self.sender_link = os.path.join(directory, "trialwatch-webhooks")
        os.symlink(os.path.abspath(daemon), self.sender_link)
        self.config = os.path.join(directory, "trialwatch.conf")
        with open(self.config, "w") as file:
            file.write("[Daemon]\nLogLevel=notice\nLogTarget=console\nIdleTimeout=infinity\n")
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "WATCHDOG_USEC", "JOURNAL_STREAM")}
        self.daemon = None
        self.sender = None
        self.lock = threading.Lock()
        on_cleanup(self.stop)

    def start_daemon(self):
        log = open(os.path.join(self.directory, "trialwatchd.log"), "a")
        self.daemon = subprocess.Popen(
            [self.daemon_path, "--config", self.config, "--state-dir", os.path.join(self.directory, "state"),
             "--socket", self.socket], stdout=log, stderr=log, stdin=subprocess.DEVNULL, env=self.env)

    def start_sender(self):
        log = open(os.path.join(self.directory, "sender.log"), "a")
        self.sender = subprocess.Popen(
            [self.sender_link, "--socket", self.socket, "--log-target", "console"], stdout=log, stderr=log,
            stdin=subprocess.DEVNULL, env=self.env)

    def kill(self, which):
        with self.lock:
            process = self.daemon if which == "daemon" else self.sender
            process.kill()
            process.wait()
            if which == "daemon":
                self.start_daemon()
            else:
                self.start_sender()

    def stop(self):
        for process in (self.sender, self.daemon):
            if process is not None:
                stop_process(process)


def call(path, method, parameters, deadline):
    """One call, made again until the daemon answers it (it may be dead or starting)."""
    while True:
        try:
            connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            connection.settimeout(30)
            connection.connect(path)
            connection.sendall(json.dumps({"method": "io.trialwatch.Trials." + method,
                                           "parameters": parameters}).encode() + b"\0")
            for replies in frames(connection):
                if replies:
                    connection.close()
                    return replies[0]
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise BenchError(f"{method} got no answer")
        time.sleep(0.05)


def call_once(path):
    """GetStatus once: its reply, or None when the daemon does not answer."""
    try:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.settimeout(30)
        connection.connect(path)
        connection.sendall(b'{"method":"io.trialwatch.Trials.GetStatus","parameters":{}}\0')
        for replies in frames(connection):
            if replies:
                connection.close()
                return replies[0]
    except OSError:
        pass
    return None


def change(path, method, parameters, deadline):
    """A change made until it has taken effect: its reply, or the error that says it had."""
    reply = call(path, method, parameters, deadline)
    error = reply.get("error")
    if error and error != ALREADY[method]:
        raise BenchError(f"{method} {parameters}: {reply}")


def logged_events(path, deadline):
    """Every event of the log: (id, kind), read with Watch from the start to the newest."""
    last = call(path, "GetEventLog", {}, deadline)["parameters"]["log"]["last"]
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(path)
    connection.sendall(json.dumps({"method": "io.trialwatch.Trials.Watch", "more": True,
                                   "parameters": {"after": "0000000000000000"}}).encode() + b"\0")
    events = []
    for replies in frames(connection):
        for reply in replies:
            event = reply.get("parameters", {}).get("event")
            if event:
                events.append((event["id"], event["kind"]))
                if event["cursor"] == last:
                    connection.close()
                    return events
    raise BenchError("the Watch ended before the newest event")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--daemon", required=True)
    parser.add_argument("--scratch", required=True)
    parser.add_argument("--trials", type=int, default=500)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    args = parser.parse_args()
    # Endpoint files name their secret files by absolute paths.
    args.scratch = os.path.abspath(args.scratch)
    note(f"webhooks crash test: seed {args.seed}")
    rng = random.Random(args.seed)
    shutil.rmtree(args.scratch, ignore_errors=True)
    os.makedirs(os.path.join(args.scratch, "webhooks"))
    receivers = {name: Receiver(args.scratch, name) for name in ("all", "paused", "flaky")}
    settings = {
        "all": "",
        "paused": "Events=paused\n",
        "flaky": "RetrySchedule=0, 1s\nDisableAfter=1d\n",
    }
    for name, receiver in receivers.items():
        query = "?flaky=0.3" if name == "flaky" else ""
        with open(os.path.join(args.scratch, "webhooks", f"{name}.conf"), "w") as file:
            file.write(f"[Webhook]\nURL=http://127.0.0.1:{receiver.port}/{name}{query}\n"
                       f"SecretFile={receiver.secret_file}\n{settings[name]}")
    processes = Processes(args.scratch, args.daemon)
    processes.start_daemon()
    deadline = time.monotonic() + 900
    # The daemon's first start must answer: one that exits (a configuration it refuses) fails the
    # test at once, with its log, rather than at the deadline.
    while call_once(processes.socket) is None:
        if processes.daemon.poll() is not None:
            with open(os.path.join(args.scratch, "trialwatchd.log")) as log:
                raise BenchError(f"trialwatchd exited at its start: {log.read()[-2000:]}")
        time.sleep(0.05)
    processes.start_sender()

    # The kills, at random moments over the calls and a while after them.
    kills = ["daemon"] * args.kills + ["sender"] * args.kills
    rng.shuffle(kills)
    stop = threading.Event()

    def killer():
        for which in kills:
            if stop.wait(rng.uniform(0.05, 0.6)):
                return
            processes.kill(which)

    killing = threading.Thread(target=killer)
    killing.start()
    for index in range(args.trials):
        subject = f"crash-{index}"
        change(processes.socket, "StartTrial", {"subject": subject, "duration": "30d", "reminders": []}, deadline)
        change(processes.socket, "PauseTrial", {"subject": subject}, deadline)
        change(processes.socket, "ResumeTrial", {"subject": subject}, deadline)
    killing.join()
    note(f"webhooks crash test: {args.trials} trials paused and resumed, {len(kills)} kills")

    events = logged_events(processes.socket, deadline)
    wanted = {
        "all": {i for i, _ in events},
        "paused": {i for i, k in events if k == "paused"},
        "flaky": {i for i, _ in events},
    }
    failures = []
    if len(wanted["paused"]) != args.trials:
        failures.append(f"{len(wanted['paused'])} pauses logged for {args.trials} trials")
    while time.monotonic() < deadline:
        if all(wanted[n] <= set(r.received()) for n, r in receivers.items()):
            break
        time.sleep(0.2)
    for name, receiver in receivers.items():
        received = receiver.received()
        missing = wanted[name] - set(received)
        foreign = set(received) - wanted[name]
        repeats = sum(len(v) - 1 for v in received.values())
        mismatched = [i for i, bodies in received.items() if any(b["data"]["id"] != i for b in bodies)]
        note(f"endpoint {name}: {len(wanted[name])} events wanted, {len(received)} received, {repeats} repeats")
        if missing:
            failures.append(f"{name}: {len(missing)} events lost, such as {sorted(missing)[:3]}")
        if foreign:
            failures.append(f"{name}: {len(foreign)} events it does not want, such as {sorted(foreign)[:3]}")
        if mismatched:
            failures.append(f"{name}: repeats under another webhook-id than their event's: {mismatched[:3]}")
        if receiver.unverified:
            failures.append(f"{name}: {len(receiver.unverified)} requests the verifiers refused")
    for failure in failures:
        print(f"webhooks crash test: FAILED: {failure}", file=sys.stderr, flush=True)
    if not failures:
        note("webhooks crash test: every event reached every endpoint that wants it, none lost")
    return 1 if failures else 0


if __name__ == "__main__":
    run_main(main, "webhooks crash test")
