# The processes the browser test runs: trialwatchd on a state folder of its own with the test's
# plans and trials (imported before it starts), trialwatch-http in front of it with a read token
# and a change token, and trialwatchctl against the same socket. The three are one program under
# three names (links in the scratch folder). bench/peers/ (common, servers) starts and stops
# the daemon as the benchmarks do, and bench/http/http_bench.py the gateway.
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
sys.path.insert(0, os.path.join(ROOT, "bench", "http"))
from common import run, stop_process  # noqa: E402
from servers import Trialwatch  # noqa: E402
from http_bench import Gateway  # noqa: E402

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


def start_gateway(directory, program, socket_path):
    """trialwatch-http (bench/http/http_bench.py's) on a port the kernel picks, with a read token and a
    change token: `secrets[scope]`, `base`, `stop()`."""
    return Gateway(directory, program, socket_path, scopes=("read", "change"), name="browser", timeout=START_TIMEOUT)
