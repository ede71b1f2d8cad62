# trialwatch against what users reach for instead to "do X when a trial ends": at jobs,
# systemd transient timers, a job table polled in PostgreSQL or SQLite (every 1 s and every
# 10 s), and a Redis sorted set polled every second. Each runs the same workloads, one peer
# after the other (in parallel with --parallel, for the quick check only):
#
#   ingest      N new timers, one at a time, each durable before the next: how long
#   ingest 16   the same N from 16 clients at once, each one at a time (a web application's
#               workers): how long until all are durable
#   pending     P pending events: memory (PSS summed over the processes; for trialwatch, the
#               daemon's, its Watch client's apart) and on-disk size, then the wake-ups
#               (context switches) per minute with nothing due
#   lateness    E events due at random over W seconds: action start minus due (p50, p99, max)
#   burst       B events due at the same instant: time until the last action ran
#
# Prints `trialwatch_<metric>: value unit`, `peer_<name>_<metric>: value unit`, then
# `ratio_<metric>_<name>: peer / trialwatch` (every metric is lower-is-better, so > 1 means
# trialwatch is better), `SKIP: ...` for what cannot run here and `# ...` for notes. Exits
# non-zero on any unexpected failure, after stopping every server it started.
import argparse
import os
import random
import sys
import tempfile
import threading
import time

from common import (BenchError, disk_bytes, install_signal_handlers, note, now_ns, percentile, pss_bytes,
                    run_cleanups, wait_actions, wakeups_over)
from servers import Postgres, Redis, SQLite, Trialwatch
from slowpeers import At, Systemd

PEERS = ["at", "systemd", "postgres-1s", "postgres-10s", "sqlite-1s", "sqlite-10s", "redis-1s"]
UNITS = {"lateness_p50": "ms", "lateness_p99": "ms", "lateness_max": "ms", "rss_100k": "MB", "disk_100k": "MB",
         "ingest_10k": "s", "ingest_10k_16_clients": "s", "idle_wakeups_per_min": "wakeups/min", "burst_10k_done": "s",
         "watch_client_pss_100k": "MB"}
SLOW = ("at", "systemd")
output_lock = threading.Lock()


def say(line):
    with output_lock:
        print(line, flush=True)


def arguments():
    env = os.environ.get
    parser = argparse.ArgumentParser(description="trialwatch and its peers on the same workloads")
    parser.add_argument("--daemon", required=True, help="the trialwatchd to run")
    parser.add_argument("--scratch", default=env("PEERS_SCRATCH", tempfile.gettempdir()))
    parser.add_argument("--peers", default=env("PEERS_ONLY", ",".join(PEERS)), help="comma-separated")
    parser.add_argument("--events", type=int, default=int(env("PEERS_EVENTS", 1000)))
    parser.add_argument("--window", type=float, default=float(env("PEERS_WINDOW", 60)))
    parser.add_argument("--pending", type=int, default=int(env("PEERS_PENDING", 100000)))
    parser.add_argument("--slow-pending", type=int, default=int(env("PEERS_SLOW_PENDING", 10000)),
                        help="pending events at and systemd are given; their figures are scaled to --pending")
    parser.add_argument("--ingest", type=int, default=int(env("PEERS_INGEST", 10000)))
    parser.add_argument("--clients", type=int, default=int(env("PEERS_CLIENTS", 16)),
                        help="clients of the concurrent ingest")
    parser.add_argument("--burst", type=int, default=int(env("PEERS_BURST", 10000)))
    parser.add_argument("--slow-burst", type=int, default=int(env("PEERS_SLOW_BURST", 2000)),
                        help="events in the burst of at and systemd; the time is scaled to --burst")
    parser.add_argument("--idle", type=float, default=float(env("PEERS_IDLE", 60)), help="seconds")
    parser.add_argument("--parallel", action="store_true", help="peers at the same time (a quick check)")
    return parser.parse_args()


def make_peer(name, directory, args, repo):
    if name == "trialwatch":
        return Trialwatch(name, directory, args.daemon)
    if name == "at":
        return At(name, directory)
    if name == "systemd":
        return Systemd(name, directory, repo)
    kind, interval = name.rsplit("-", 1)
    interval = float(interval.rstrip("s"))
    return {"postgres": Postgres, "sqlite": SQLite, "redis": Redis}[kind](name, directory, interval)


def ms(due_ns):
    """Due times keep milliseconds: trialwatch's endsAt does, and every peer gets the same."""
    return due_ns // 1_000_000 * 1_000_000


class Run:
    """One peer through every workload; figures as (metric, value, note)."""

    def __init__(self, peer, args):
        self.peer, self.args = peer, args
        self.figures = []
        self.rate = None  # events a second schedule_each managed, from the ingest

    def figure(self, metric, value, remark=None):
        self.figures.append((metric, value, remark))

    def lead(self, count):
        """Seconds from now to the first due time: the time to schedule `count` events."""
        if self.peer.name in SLOW:
            return 3 + 3 * count / self.rate
        return 3.0

    def ingest(self):
        count = self.args.ingest
        measured = min(count, self.args.slow_pending) if self.peer.name in SLOW else count
        far = now_ns() + 86400 * 10**9
        events = [(f"i{k}", ms(far + k * 10**6)) for k in range(measured)]
        start = time.monotonic()
        self.peer.schedule_each(events)
        seconds = time.monotonic() - start
        self.rate = measured / seconds
        remark = f"{measured} timers, scaled to {count}" if measured != count else None
        self.figure("ingest_10k", seconds * count / measured, remark)
        self.peer.clear()

    def ingest_clients(self):
        """The ingest from `--clients` clients at once, each starting its share one at a time."""
        count, clients = self.args.ingest, self.args.clients
        measured = min(count, self.args.slow_pending) if self.peer.name in SLOW else count
        far = now_ns() + 86400 * 10**9
        events = [(f"c{k}", ms(far + k * 10**6)) for k in range(measured)]
        shares = [events[lane::clients] for lane in range(clients)]
        errors = []

        def client(lane):
            try:
                self.peer.schedule_each(shares[lane], lane=str(lane))
            except Exception as error:  # reported after every client ended
                errors.append(error)

        threads = [threading.Thread(target=client, args=(lane,)) for lane in range(clients)]
        start = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        seconds = time.monotonic() - start
        if errors:
            raise BenchError(f"{self.peer.name}: ingest from {clients} clients: {errors[0]}")
        remark = f"{measured} timers, scaled to {count}" if measured != count else None
        self.figure("ingest_10k_16_clients", seconds * count / measured, remark)
        self.peer.clear()

    def pending(self):
        count = self.args.pending
        measured = min(count, self.args.slow_pending) if self.peer.name in SLOW else count
        base_memory, base_disk = pss_bytes(self.peer.memory_pids()), disk_bytes(*self.peer.store_paths())
        far = now_ns() + 86400 * 10**9
        rng = random.Random(7)
        self.peer.schedule_bulk([(f"p{k}", ms(far + rng.randrange(30 * 86400 * 10**9))) for k in range(measured)])
        # Settled: trialwatch lets go of what the burst left resident 6 s after its last write.
        time.sleep(10)
        memory, disk = pss_bytes(self.peer.memory_pids()), disk_bytes(*self.peer.store_paths())
        factor = count / measured
        remark = f"{measured} pending, growth scaled to {count}" if measured != count else None
        self.figure("rss_100k", (base_memory + (memory - base_memory) * factor) / 1e6, remark)
        if self.peer.client_pids():
            self.figure("watch_client_pss_100k", pss_bytes(self.peer.client_pids()) / 1e6,
                        "the Watch client (consumer.py, Python), not in rss_100k")
        self.figure("disk_100k", (base_disk + (disk - base_disk) * factor) / 1e6, remark)
        wakeups = wakeups_over(self.peer.pids, self.args.idle)
        self.figure("idle_wakeups_per_min", wakeups * 60 / self.args.idle,
                    f"with {measured} pending" if measured != count else None)
        self.peer.check_consumer()
        self.peer.clear()

    def wait(self, ids, last_due, what):
        grace = self.peer.interval + 30 + (60 if self.peer.name == "at" else 0)
        grace += len(ids) / 200  # a process per action, for at and systemd
        actions, repeats = wait_actions(self.peer.actions, ids, last_due + int(grace * 1e9), f"{self.peer.name}: {what}")
        if repeats:
            say(f"# peer_{self.peer.name}: {repeats} actions ran more than once in the {what}")
        return actions

    def lateness(self):
        count, window = self.args.events, self.args.window
        start = now_ns() + int(self.lead(count) * 1e9)
        rng = random.Random(42)
        events = [(f"l{k}", ms(start + int(rng.uniform(0, window) * 1e9))) for k in range(count)]
        self.peer.schedule_bulk(events)
        if now_ns() > min(due for _, due in events):
            raise BenchError(f"{self.peer.name}: scheduling the lateness events took past the first due time")
        actions = self.wait([k for k, _ in events], max(d for _, d in events), "lateness")
        late = [(actions[key] - due) / 1e6 for key, due in events]
        for metric, fraction in (("lateness_p50", 0.5), ("lateness_p99", 0.99)):
            self.figure(metric, percentile(late, fraction))
        self.figure("lateness_max", max(late))
        self.peer.clear()

    def burst(self):
        count = self.args.burst
        measured = min(count, self.args.slow_burst) if self.peer.name in SLOW else count
        due = ms(now_ns() + int(self.lead(measured) * 1e9))
        due = getattr(self.peer, "align", lambda d: d)(due)
        events = [(f"b{k}", due) for k in range(measured)]
        self.peer.schedule_bulk(events)
        if now_ns() > due:
            raise BenchError(f"{self.peer.name}: scheduling the burst took past its due time")
        actions = self.wait([k for k, _ in events], due, "burst")
        remark = f"{measured} in the burst, time scaled to {count}" if measured != count else None
        self.figure("burst_10k_done", (max(actions.values()) - due) / 1e9 * count / measured, remark)
        self.peer.clear()

    def all(self):
        note(f"{self.peer.name}: ingest")
        self.ingest()
        note(f"{self.peer.name}: ingest from {self.args.clients} clients")
        self.ingest_clients()
        note(f"{self.peer.name}: pending and idle")
        self.pending()
        note(f"{self.peer.name}: lateness")
        self.lateness()
        note(f"{self.peer.name}: burst")
        self.burst()
        self.peer.check_consumer()


def measure(name, args, results, repo):
    prefix = "trialwatch_" if name == "trialwatch" else f"peer_{name}_"
    if name in ("at", "systemd") or name.startswith("postgres"):
        if os.geteuid() != 0:
            say(f"SKIP: peer_{name}: needs root (a private {'atd' if name == 'at' else name.split('-')[0]})")
            return
    directory = tempfile.mkdtemp(prefix=f"{name}-", dir=args.scratch)
    os.chmod(directory, 0o755)
    peer = make_peer(name, directory, args, repo)
    note(f"{name}: starting")
    peer.start()
    if getattr(peer, "skip_reason", None):
        say(f"SKIP: peer_{name}: {peer.skip_reason}")
        return
    try:
        run = Run(peer, args)
        run.all()
    finally:
        peer.stop()
    results[name] = {metric: value for metric, value, _ in run.figures}
    with output_lock:
        for metric, value, remark in run.figures:
            print(f"{prefix}{metric}: {value:.3f} {UNITS[metric]}")
            if remark:
                print(f"# {prefix}{metric}: {remark}")
        sys.stdout.flush()
    os.system(f"rm -rf --one-file-system {directory}")


def ratios(results):
    base = results.get("trialwatch")
    if base is None:
        return
    for name in PEERS:
        for metric, value in results.get(name, {}).items():
            if base[metric] > 0:
                print(f"ratio_{metric}_{name}: {value / base[metric]:.2f}")
            else:
                print(f"# ratio_{metric}_{name}: none, trialwatch's figure is 0 ({name}: {value:.3f})")


def main():
    install_signal_handlers()
    args = arguments()
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    os.makedirs(args.scratch, exist_ok=True)
    args.scratch = os.path.abspath(args.scratch)
    wanted = [p for p in args.peers.split(",") if p]
    unknown = set(wanted) - set(PEERS)
    if unknown:
        raise BenchError(f"unknown peers: {', '.join(sorted(unknown))} (known: {', '.join(PEERS)})")
    say(f"# workloads: lateness {args.events} events over {args.window:g} s, {args.pending} pending, "
        f"ingest {args.ingest}, burst {args.burst}, idle {args.idle:g} s")
    results = {}
    measure("trialwatch", args, results, repo)
    if args.parallel:
        errors = []

        def one(name):
            try:
                measure(name, args, results, repo)
            except BaseException as error:
                errors.append(f"{name}: {error}")

        threads = [threading.Thread(target=one, args=(name,), daemon=True) for name in wanted]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise BenchError("; ".join(errors))
    else:
        for name in wanted:
            measure(name, args, results, repo)
    ratios(results)


if __name__ == "__main__":
    status = 0
    try:
        main()
    except BenchError as error:
        print(f"error: {error}", file=sys.stderr)
        status = 1
    except KeyboardInterrupt:
        print("interrupted; stopping the servers", file=sys.stderr)
        status = 130
    except Exception as error:
        import traceback

        traceback.print_exc()
        print(f"error: {error}", file=sys.stderr)
        status = 1
    finally:
        run_cleanups()
    sys.exit(status)
