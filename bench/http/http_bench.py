#!/usr/bin/env python3
"""The HTTP gateway's figures of `make bench`: the release trialwatchd and trialwatch-http (the
same program by another name), and, in the same run and in turns, the same calls made straight
to the daemon's control socket.

    http_bench.py --daemon .build-release/release/trialwatchd --scratch DIR

Prints `name: value unit` lines:
  http_start_p50_ms, control_start_p50_ms
                                StartTrial over one kept HTTP connection, and over one Varlink
                                connection: the median round trip of each, in turns
  http_start_overhead_p50_ms    the first minus the second
  http_token_right_p50_us, http_token_wrong_p50_us
                                a request a token decides alone (a path that does not exist,
                                404, with a known token; 401 with an unknown one): the check
                                costs the same whichever token it is
  http_gateway_rss_idle_kb      the gateway's proportional set size after those requests, idle
  http_gateway_idle_wakeups_10s context switches of the gateway in 10 s with no request
"""
import argparse
import hashlib
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peers"))
from common import (  # noqa: E402
    BenchError, context_switches, note, on_cleanup, percentile, pss_bytes, run_main, stop_process)
from servers import Trialwatch  # noqa: E402


class Gateway:
    """trialwatch-http on a port the kernel picks, with a token of each of `scopes` (its secret in
    `secrets[scope]`, the change token's also in `secret`), named `NAME-SCOPE`."""

    def __init__(self, directory, daemon, socket_path, scopes=("change",), name="bench", timeout=30):
        self.secrets = {scope: "twh_" + secrets.token_urlsafe(32) for scope in scopes}
        self.secret = self.secrets.get("change")
        self.tokens = os.path.join(directory, "tokens")
        with open(self.tokens, "w") as file:
            for scope, secret in self.secrets.items():
                file.write(f"{name}-{scope} {scope} sha256:{hashlib.sha256(secret.encode()).hexdigest()}\n")
        link = os.path.join(directory, "trialwatch-http")
        os.symlink(os.path.abspath(daemon), link)
        self.log = os.path.join(directory, "gateway.log")
        environment = {k: v for k, v in os.environ.items() if k not in ("NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID")}
        self.process = subprocess.Popen(
            [link, "--socket", socket_path, "--listen", "127.0.0.1:0", "--tokens", self.tokens,
             "--log-target", "console"],
            stdout=subprocess.DEVNULL, stderr=open(self.log, "w"), stdin=subprocess.DEVNULL, env=environment)
        on_cleanup(lambda: stop_process(self.process))
        self.port = self.wait_port(timeout)
        self.base = f"http://127.0.0.1:{self.port}"

    def wait_port(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with open(self.log) as log:
                found = re.search(r"listen=127\.0\.0\.1:(\d+)", log.read())
            if found:
                return int(found.group(1))
            if self.process.poll() is not None:
                raise BenchError(f"trialwatch-http exited with status {self.process.returncode} (see {self.log})")
            time.sleep(0.05)
        raise BenchError(f"trialwatch-http did not say its port within {timeout} s (see {self.log})")

    def stop(self):
        """Stops the gateway; its exit status (0 for a clean stop)."""
        return stop_process(self.process)

    def connection(self):
        return KeptConnection(self.port)

    def request(self, connection, method, path, body=None, token=None):
        return connection.request(method, path, body or "", token or self.secret)


class KeptConnection:
    """HTTP/1.1 on one kept connection, as lean as the Varlink client below: a request written
    whole, the answer read by its Content-Length (the gateway's answers but Watch have one)."""

    def __init__(self, port):
        self.socket = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""

    def request(self, method, path, body, token):
        data = body.encode()
        head = (f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n")
        self.socket.sendall(head.encode() + data)
        while b"\r\n\r\n" not in self.buffer:
            self.more()
        header, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        lines = header.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        length = next(int(line.split(":", 1)[1]) for line in lines[1:]
                      if line.lower().startswith("content-length:"))
        while len(self.buffer) < length:
            self.more()
        reply, self.buffer = self.buffer[:length], self.buffer[length:]
        return status, reply

    def more(self):
        data = self.socket.recv(1 << 16)
        if not data:
            raise BenchError("trialwatch-http closed the connection")
        self.buffer += data

    def close(self):
        self.socket.close()


class Varlink:
    """One connection to the daemon's control socket, calls one at a time."""

    def __init__(self, path):
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.socket.connect(path)
        self.buffer = b""

    def call(self, method, parameters):
        self.socket.sendall(json.dumps({"method": method, "parameters": parameters}).encode() + b"\0")
        while b"\0" not in self.buffer:
            data = self.socket.recv(1 << 16)
            if not data:
                raise BenchError("trialwatchd closed the connection")
            self.buffer += data
        message, self.buffer = self.buffer.split(b"\0", 1)
        reply = json.loads(message)
        if "error" in reply:
            raise BenchError(f"{method}: {reply}")
        return reply["parameters"]


def timed(action):
    start = time.perf_counter_ns()
    action()
    return (time.perf_counter_ns() - start) / 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--daemon", required=True)
    parser.add_argument("--scratch", required=True)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    args.scratch = os.path.abspath(args.scratch)
    shutil.rmtree(args.scratch, ignore_errors=True)
    os.makedirs(args.scratch)
    daemon = Trialwatch("trialwatch", args.scratch, args.daemon)
    daemon.start_daemon()
    gateway = Gateway(args.scratch, args.daemon, daemon.socket)

    # StartTrial both ways, in turns of 100, so that both meet the same noise.
    connection = gateway.connection()
    direct = Varlink(daemon.socket)
    over_http, straight = [], []
    for turn in range(args.calls // 100):
        for index in range(100):
            body = json.dumps({"subject": f"h-{turn}-{index}", "duration": "30d", "reminders": []})

            def by_http():
                status, reply = gateway.request(
                    connection, "POST", "/call/io.trialwatch.Trials.StartTrial", body=body)
                if status != 200:
                    raise BenchError(f"StartTrial over HTTP: {status} {reply[:200]}")

            over_http.append(timed(by_http))
            parameters = {"subject": f"v-{turn}-{index}", "duration": "30d", "reminders": []}
            straight.append(timed(lambda: direct.call("io.trialwatch.Trials.StartTrial", parameters)))
    http_p50, control_p50 = percentile(over_http, 0.5), percentile(straight, 0.5)
    print(f"http_start_p50_ms: {http_p50:.3f} ms", flush=True)
    print(f"control_start_p50_ms: {control_p50:.3f} ms", flush=True)
    print(f"http_start_overhead_p50_ms: {http_p50 - control_p50:.3f} ms", flush=True)

    # The token check alone, a known token and an unknown one, in turns.
    right, wrong = [], []
    unknown = "twh_" + secrets.token_urlsafe(32)
    for _ in range(args.calls // 100):
        for _ in range(50):
            right.append(timed(lambda: gateway.request(connection, "GET", "/nowhere")))
            wrong.append(timed(lambda: gateway.request(connection, "GET", "/nowhere", token=unknown)))
    print(f"http_token_right_p50_us: {percentile(right, 0.5) * 1000:.0f} us", flush=True)
    print(f"http_token_wrong_p50_us: {percentile(wrong, 0.5) * 1000:.0f} us", flush=True)
    connection.close()

    # Idle: the connection closed, nothing asked.
    time.sleep(3)
    pid = gateway.process.pid
    before = context_switches([pid])
    time.sleep(10)
    after = context_switches([pid])
    woken = sum(count - before.get(key, 0) for key, count in after.items())
    print(f"http_gateway_rss_idle_kb: {pss_bytes([pid]) // 1024} kB", flush=True)
    print(f"http_gateway_idle_wakeups_10s: {woken} wakeups", flush=True)
    status = stop_process(gateway.process)
    if status != 0:
        raise BenchError(f"trialwatch-http stopped with status {status} (see {gateway.log})")
    note("http: done")
    return 0


if __name__ == "__main__":
    run_main(main, "http")
