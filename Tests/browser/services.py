# The processes the browser test runs: trialwatchd on a state folder of its own with the test's
# plans and trials (imported before it starts), trialwatch-http in front of it with a read token
# and a change token, and trialwatchctl against the same socket. The three are one program under
# three names (links in the scratch folder). bench/peers/ (common, servers) starts and stops
# the daemon as the benchmarks do.
import hashlib
import json
import os
import re
import secrets
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
from common import BenchError, on_cleanup, run, stop_process  # noqa: E402
from servers import Trialwatch  # noqa: E402

import trials  # noqa: E402

# The units set no TimeoutStartSec=, so systemd gives each start its default, 90 s: the bound
# of every wait for a process to come up.
START_TIMEOUT = 90


def note(message):
    print(f"browser-test: {message}", file=sys.stderr, flush=True)


def link(directory, program, name):
    """`program` under another name, a link in `directory`."""
    path = os.path.join(directory, name)
    os.symlink(os.path.abspath(program), path)
    return path


class Daemon:
    """trialwatchd with the three plans of trials.py and the trials it drew, imported."""

    def __init__(self, directory, program, seed, count):
        self.directory = directory
        self.server = Trialwatch("trialwatch", directory, program)
        self.socket = self.server.socket
        self.ctl = link(directory, program, "trialwatchctl")
        trials.write_plans(os.path.join(directory, "plans"))
        self.now = time.time_ns() // 1000
        self.trials, records = trials.make_trials(seed, count, self.now)
        export = os.path.join(directory, "trials.jsonl")
        trials.write_export(export, records)
        config = os.path.join(directory, "trialwatch.conf")
        with open(config, "w") as file:
            file.write(Trialwatch.CONFIG)
        imported = run([program, "--config", config, "--state-dir", self.server.state, "--import", export],
                       "trialwatchd --import")
        note(imported.strip().splitlines()[0])

    def start(self):
        self.server.start_daemon()

    def stop(self):
        """Stops the daemon; its exit status (0 for a clean stop)."""
        return stop_process(self.server.process)

    def ctl_json(self, *args):
        """The replies of `trialwatchctl ARGS --json`, one object per line."""
        environment = dict(os.environ, TRIALWATCH_SOCKET=self.socket)
        output = run([self.ctl, *args, "--json"], "trialwatchctl " + " ".join(args), env=environment)
        return [json.loads(line) for line in output.splitlines() if line.strip()]


class Gateway:
    """trialwatch-http on a port the kernel picks, with a read token and a change token."""

    def __init__(self, directory, program, socket_path):
        self.secrets = {scope: "twh_" + secrets.token_urlsafe(32) for scope in ("read", "change")}
        self.tokens = os.path.join(directory, "tokens")
        with open(self.tokens, "w") as file:
            for scope, secret in self.secrets.items():
                file.write(f"browser-{scope} {scope} sha256:{hashlib.sha256(secret.encode()).hexdigest()}\n")
        program = link(directory, program, "trialwatch-http")
        self.log = os.path.join(directory, "gateway.log")
        environment = {k: v for k, v in os.environ.items() if k not in ("NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID")}
        self.process = subprocess.Popen(
            [program, "--socket", socket_path, "--listen", "127.0.0.1:0", "--tokens", self.tokens,
             "--log-target", "console"],
            stdout=subprocess.DEVNULL, stderr=open(self.log, "w"), stdin=subprocess.DEVNULL, env=environment)
        on_cleanup(lambda: stop_process(self.process))
        self.port = self.wait_port()
        self.base = f"http://127.0.0.1:{self.port}"

    def wait_port(self):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            with open(self.log) as log:
                found = re.search(r"listen=127\.0\.0\.1:(\d+)", log.read())
            if found:
                return int(found.group(1))
            if self.process.poll() is not None:
                raise BenchError(f"trialwatch-http exited with status {self.process.returncode} (see {self.log})")
            time.sleep(0.05)
        raise BenchError(f"trialwatch-http did not say its port within {START_TIMEOUT} s (see {self.log})")

    def stop(self):
        return stop_process(self.process)
