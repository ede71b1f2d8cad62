#!/usr/bin/env python3
"""The webhook figures of `make bench`: the release trialwatchd and its sender
(trialwatch-webhooks, the same program by another name) delivering to a local receiver
(receiver.py beside this file), and, side by side in the same run, today's other way: a consumer
running curl per event (`trialwatchctl consume NAME -- curl ...`).

    webhooks_bench.py --daemon .build-release/release/trialwatchd --scratch DIR

Prints `name: value unit` lines:
  webhook_sender_rss_idle_kb        the sender's proportional set size, attached, nothing to do
  webhook_sender_idle_wakeups_10s, webhook_daemon_idle_wakeups_10s
                                    context switches of each in 10 s, attached, nothing pending
  webhook_deliveries_per_s          10,000 events waiting, then the sender started: first to
                                    last receipt
  webhook_due_to_delivery_p50_ms, _p99_ms
                                    expiries falling due over a few seconds: receipt minus due
  consume_curl_deliveries_per_s     the same kind of events through consume and curl
  webhook_vs_consume_curl_ratio     the first throughput over the last
"""
import argparse
import base64
import json
import os
import secrets
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peers"))
from common import (  # noqa: E402
    BenchError, context_switches, note, on_cleanup, percentile, pss_bytes, run_main, stop_process)
from servers import Trialwatch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


class Receiver:
    """receiver.py as a process; its lines gathered by a thread: arrival by webhook-id."""

    def __init__(self, directory):
        self.process = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "receiver.py")], stdout=subprocess.PIPE, text=True,
            stderr=open(os.path.join(directory, "receiver.log"), "w"))
        on_cleanup(lambda: stop_process(self.process))
        first = json.loads(self.process.stdout.readline())
        self.port = first["listening"]
        self.arrivals = {}
        self.lock = threading.Condition()
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        for line in self.process.stdout:
            arrival, message_id, _ = line.split()
            # An event's id starts with its trial's: the first arrival of a trial's event counts.
            with self.lock:
                self.arrivals.setdefault(message_id.split("-")[0], int(arrival))
                self.lock.notify_all()

    def wait(self, trials, seconds, what):
        """The arrival of an event of each trial, in the order given."""
        deadline = time.monotonic() + seconds
        with self.lock:
            while not all(i in self.arrivals for i in trials):
                left = deadline - time.monotonic()
                if left <= 0:
                    missing = sum(1 for i in trials if i not in self.arrivals)
                    raise BenchError(f"{what}: {missing} of {len(trials)} events did not arrive in {seconds} s")
                self.lock.wait(left)
            return [self.arrivals[i] for i in trials]


class Daemon(Trialwatch):
    """trialwatchd with one webhook endpoint, `bench`, posting to the receiver."""

    def __init__(self, directory, daemon, port):
        super().__init__("trialwatch", directory, daemon)
        hooks = os.path.join(directory, "webhooks")
        os.makedirs(hooks, exist_ok=True)
        secret = os.path.join(hooks, "bench.secret")
        with open(secret, "w") as file:
            file.write("whsec_" + base64.b64encode(secrets.token_bytes(32)).decode() + "\n")
        with open(os.path.join(hooks, "bench.conf"), "w") as file:
            file.write(f"[Webhook]\nURL=http://127.0.0.1:{port}/\nSecretFile={secret}\n")
        self.sender = None
        self.link = os.path.join(directory, "trialwatch-webhooks")
        os.symlink(os.path.abspath(daemon), self.link)

    def start(self):
        """The daemon alone: no Watch client (the figures are the sender's)."""
        self.start_daemon()

    def start_sender(self):
        log = open(os.path.join(self.directory, "sender.log"), "a")
        self.sender = subprocess.Popen(
            [self.link, "--socket", self.socket, "--log-target", "console"], stdout=log, stderr=log,
            stdin=subprocess.DEVNULL)
        on_cleanup(lambda: stop_process(self.sender))
        self.wait_endpoint(lambda e: self.attached(), 30, "the sender did not attach")

    def stop_sender(self):
        status = stop_process(self.sender)
        if status != 0:
            raise BenchError(f"trialwatch-webhooks stopped with status {status} (see sender.log)")

    def call(self, method, parameters):
        import socket
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.connect(self.socket)
        connection.sendall(json.dumps({"method": method, "parameters": parameters}).encode() + b"\0")
        buffer = b""
        while not buffer.endswith(b"\0"):
            data = connection.recv(1 << 16)
            if not data:
                raise BenchError("trialwatchd closed the connection")
            buffer += data
        connection.close()
        reply = json.loads(buffer[:-1])
        if "error" in reply:
            raise BenchError(f"{method}: {reply}")
        return reply["parameters"]

    def attached(self):
        import socket
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.connect(self.socket)
        connection.sendall(json.dumps({
            "method": "io.systemd.Metrics.List", "more": True,
            "parameters": {"names": ["io.trialwatch.webhook_sender_attached"]}}).encode() + b"\0")
        buffer = b""
        while not buffer.endswith(b"\0"):
            buffer += connection.recv(1 << 16)
        connection.close()
        return json.loads(buffer[:-1]).get("parameters", {}).get("value") == 1

    def wait_endpoint(self, condition, seconds, what):
        deadline = time.monotonic() + seconds
        while True:
            endpoints = self.call("io.trialwatch.Trials.ListWebhooks", {})["endpoints"]
            if endpoints and condition(endpoints[0]):
                return endpoints[0]
            if time.monotonic() > deadline:
                raise BenchError(what)
            time.sleep(0.05)


def trials_of(daemon, prefix, state):
    """The ids of the trials in `state` whose subjects start with `prefix-`, by subject."""
    trials, after = {}, None
    while True:
        page = daemon.call("io.trialwatch.Trials.ListTrials", {"state": state, "limit": 1000,
                                                                **({"after": after} if after else {})})
        for trial in page["trials"]:
            if trial["subject"].startswith(prefix + "-"):
                trials[trial["subject"]] = trial["id"]
        after = page.get("next")
        if not after:
            return trials


def paused_events(daemon, prefix, count):
    """Starts and pauses `count` trials: `count` paused events, by their trials' ids."""
    calls = []
    for index in range(count):
        subject = f"{prefix}-{index}"
        calls.append(("StartTrial", {"subject": subject, "duration": "30d", "reminders": []}))
        calls.append(("PauseTrial", {"subject": subject}))
    daemon.calls(calls, depth=64)
    return list(trials_of(daemon, prefix, "paused").values())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--daemon", required=True)
    parser.add_argument("--scratch", required=True)
    parser.add_argument("--events", type=int, default=10000)
    parser.add_argument("--due", type=int, default=1000)
    parser.add_argument("--compare", type=int, default=300)
    args = parser.parse_args()
    # The endpoint's file names its secret file by an absolute path.
    args.scratch = os.path.abspath(args.scratch)
    ctl = os.path.join(os.path.dirname(os.path.abspath(args.daemon)), "trialwatchctl")
    shutil.rmtree(args.scratch, ignore_errors=True)
    os.makedirs(args.scratch)
    receiver = Receiver(args.scratch)
    daemon = Daemon(args.scratch, args.daemon, receiver.port)
    daemon.start()
    daemon.wait_endpoint(lambda e: e["loaded"], 30, "the endpoint was not loaded")

    # Idle: attached with nothing to do.
    daemon.start_sender()
    # The daemon's start settles: its memory is released once writes have been quiet for 6 s
    # (the sender's attachment wrote last), with a wake-up or three; then nothing should wake.
    time.sleep(10)
    pids = [daemon.process.pid, daemon.sender.pid]
    before = context_switches(pids)
    time.sleep(10)
    after = context_switches(pids)
    print(f"webhook_sender_rss_idle_kb: {pss_bytes([daemon.sender.pid]) // 1024} kB", flush=True)
    for name, pid in (("sender", daemon.sender.pid), ("daemon", daemon.process.pid)):
        woken = sum(c - before.get(k, 0) for k, c in after.items() if k[0] == pid)
        print(f"webhook_{name}_idle_wakeups_10s: {woken} wakeups", flush=True)
    daemon.stop_sender()

    # Throughput: a backlog, then the sender.
    ids = paused_events(daemon, "t", args.events)
    # An endpoint reads at most 10,000 events ahead of its position.
    ahead = min(args.events, 10_000)
    daemon.wait_endpoint(lambda e: e["backlog"] == ahead, 120, "the endpoint did not read its backlog")
    daemon.start_sender()
    arrivals = receiver.wait(ids, 600, "throughput")
    rate = (len(arrivals) - 1) / ((max(arrivals) - min(arrivals)) / 1e9)
    print(f"webhook_deliveries_per_s: {rate:.0f} deliveries/s", flush=True)

    # Due to delivery: expiries falling due over a few seconds, the sender attached.
    start = time.time() + 3
    spread = args.due / 200
    dues = {}
    calls = []
    for index in range(args.due):
        due = start + spread * index / args.due
        text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(due)) + f".{int(due % 1 * 1e6):06d}Z"
        calls.append(("StartTrial", {"subject": f"d-{index}", "endsAt": text, "reminders": []}))
        dues[f"d-{index}"] = int(due * 1e9)
    daemon.calls(calls, depth=64)
    by_id = {trial: dues[subject] for subject, trial in trials_of(daemon, "d", "active").items()}
    arrivals = receiver.wait(list(by_id), 120, "due to delivery")
    latencies = [(arrival - due) / 1e6 for arrival, due in zip(arrivals, by_id.values())]
    print(f"webhook_due_to_delivery_p50_ms: {percentile(latencies, 0.5):.2f} ms", flush=True)
    print(f"webhook_due_to_delivery_p99_ms: {percentile(latencies, 0.99):.2f} ms", flush=True)
    daemon.stop_sender()

    # Today's other way: a consumer running curl per event.
    env = dict(os.environ, TRIALWATCH_SOCKET=daemon.socket)
    subprocess.run([ctl, "consumer", "create", "curl"], env=env, check=True, capture_output=True)
    compare = paused_events(daemon, "c", args.compare)
    command = (f'curl --fail --silent --show-error --max-time 20 -H "Content-Type: application/json" '
               f'-H "webhook-id: $EVENT_ID" --data-binary @- http://127.0.0.1:{receiver.port}/')
    log = open(os.path.join(args.scratch, "consume.log"), "w")
    consume = subprocess.Popen([ctl, "consume", "curl", "--", "/bin/sh", "-c", command], env=env,
                               stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    on_cleanup(lambda: stop_process(consume))
    arrivals = receiver.wait(compare, 600, "consume and curl")
    curl_rate = (len(arrivals) - 1) / ((max(arrivals) - min(arrivals)) / 1e9)
    stop_process(consume)
    print(f"consume_curl_deliveries_per_s: {curl_rate:.0f} deliveries/s", flush=True)
    print(f"webhook_vs_consume_curl_ratio: {rate / curl_rate:.1f} x", flush=True)
    note("webhooks: done")
    return 0


if __name__ == "__main__":
    run_main(main, "webhooks")
