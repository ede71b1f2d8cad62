#!/usr/bin/env python3
"""The dashboard's figures of `make bench`: its pages through the release trialwatch-http, against
the release trialwatchd holding a year of trials (1,000,000 by default) over three plans.

    dashboard_bench.py --daemon .build-release/release/trialwatchd \\
        --bench .build-bench/release/trialwatch-bench --scratch DIR [--trials N] [--requests N]

The store is written before the daemon starts, by `trialwatch-bench populate-plans` (as the
daemon writes trials: each with its cohort's figures); the plans pro, team and edu are plan
files beside the daemon's configuration. Each page is asked over one kept connection, 5 times
not counted, then --requests times, the pages in turns. Prints `name: value unit` lines
(`1m` for 1,000,000 trials; `Nk` for another number):
  http_dashboard_overview_ms_1m  GET /: the median round trip
  http_cohorts_ms_1m             GET /cohorts?plan=pro&by=week&from=<52 weeks ago>&to=<today>:
                                 the median round trip
"""
import argparse
import datetime
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peers"))
from common import BenchError, note, percentile, run, run_main, stop_process  # noqa: E402
from http_bench import Gateway, timed  # noqa: E402
from servers import Trialwatch  # noqa: E402

PLANS = ("pro", "team", "edu")
PLAN_FILE = "[Plan]\nDescription={name}, two weeks\nLength=14d\nReminders=7d, 3d, 1d\n"


def scale(trials):
    return f"{trials // 1_000_000}m" if trials % 1_000_000 == 0 else f"{trials // 1000}k"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--daemon", required=True)
    parser.add_argument("--bench", required=True, help="trialwatch-bench, which writes the store")
    parser.add_argument("--scratch", required=True)
    parser.add_argument("--trials", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=50)
    args = parser.parse_args()
    args.scratch = os.path.abspath(args.scratch)
    shutil.rmtree(args.scratch, ignore_errors=True)
    os.makedirs(os.path.join(args.scratch, "plans"))
    for plan in PLANS:
        with open(os.path.join(args.scratch, "plans", f"{plan}.conf"), "w") as file:
            file.write(PLAN_FILE.format(name=plan))

    daemon = Trialwatch("trialwatch", args.scratch, args.daemon)
    note(f"dashboard: writing {args.trials} trials")
    run([args.bench, "populate-plans", "--state", daemon.state, "--trials", str(args.trials),
         "--plans", ",".join(PLANS)], "trialwatch-bench populate-plans", timeout=1800)
    daemon.start_daemon()
    gateway = Gateway(args.scratch, args.daemon, daemon.socket)
    connection = gateway.connection()

    today = datetime.datetime.now(datetime.timezone.utc).date()
    since = today - datetime.timedelta(weeks=52)
    # The store holds what was written: every trial in the cohorts of the last 400 days.
    everything = {"from": (today - datetime.timedelta(days=400)).isoformat(), "to": today.isoformat()}
    status, reply = gateway.request(connection, "POST", "/call/io.trialwatch.Trials.GetStats",
                                    body=json.dumps(everything))
    started = json.loads(reply)["total"]["started"] if status == 200 else None
    if started != args.trials:
        raise BenchError(f"GetStats through the gateway: {status}, {started} trials started, not {args.trials}")

    pages = {
        f"http_dashboard_overview_ms_{scale(args.trials)}": "/",
        f"http_cohorts_ms_{scale(args.trials)}":
            f"/cohorts?plan={PLANS[0]}&by=week&from={since.isoformat()}&to={today.isoformat()}",
    }

    def ask(path):
        status, reply = gateway.request(connection, "GET", path)
        if status != 200:
            raise BenchError(f"GET {path}: {status} {reply[:200]}")

    times = {name: [] for name in pages}
    for turn in range(5 + args.requests):
        for name, path in pages.items():
            elapsed = timed(lambda: ask(path))
            if turn >= 5:
                times[name].append(elapsed)
    for name in pages:
        print(f"{name}: {percentile(times[name], 0.5):.2f} ms", flush=True)
    connection.close()

    status = stop_process(gateway.process)
    if status != 0:
        raise BenchError(f"trialwatch-http stopped with status {status} (see {gateway.log})")
    daemon_status = stop_process(daemon.process)
    if daemon_status != 0:
        raise BenchError(f"trialwatchd stopped with status {daemon_status}")
    note("dashboard: done")
    return 0


if __name__ == "__main__":
    run_main(main, "dashboard")
