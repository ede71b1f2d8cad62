# Shared by the peers harness: errors, the cleanup stack (run on exit and on Ctrl-C),
# process statistics read from /proc (context switches, proportional set size), on-disk sizes,
# percentiles, the action files written by pollers, consumers and jobs, and small helpers.
# Varlink's messages on a connection (`frames`) also serve the fleet harness (Tests/fleet/) and
# the burst client of the end-to-end test (Tests/e2e/burst.py).
import json
import os
import signal
import subprocess
import sys
import time


class BenchError(Exception):
    """An unexpected failure: the harness stops with this message and a non-zero status."""


class Report:
    """The checks of a test as lines, `PASS name: detail` or `FAIL name: detail`, counted."""

    def __init__(self):
        self.passed = self.failed = 0

    def check(self, name, ok, detail):
        print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1

    def info(self, text):
        print(f"# {text}", flush=True)


def note(message):
    print(f"peers: {message}", file=sys.stderr, flush=True)


def now_ns():
    return time.time_ns()


def frames(connection, size=1 << 16):
    """The Varlink messages (NUL-terminated JSON) arriving on a stream connection: yields, for
    every read of up to `size` bytes, the list of messages it completed, decoded (empty when it
    completed none), until the peer closes the connection."""
    buffer = b""
    while True:
        data = connection.recv(size)
        if not data:
            return
        buffer += data
        *complete, buffer = buffer.split(b"\0")
        yield [json.loads(text) for text in complete]


# --- Cleanup: every server the harness starts is stopped here, whatever happens ------------

_cleanups = []


def on_cleanup(action):
    """Registers `action` (a callable); the latest registered runs first. Returns a handle
    for `done`."""
    _cleanups.append(action)
    return action


def done(handle):
    """Runs one registered cleanup now and forgets it."""
    if handle in _cleanups:
        _cleanups.remove(handle)
        handle()


def run_cleanups():
    while _cleanups:
        action = _cleanups.pop()
        try:
            action()
        except Exception as error:  # a cleanup that fails must not hide the others
            note(f"cleanup failed: {error}")


def _interrupted(signum, _frame):
    raise KeyboardInterrupt(f"signal {signum}")


def install_signal_handlers():
    signal.signal(signal.SIGTERM, _interrupted)
    signal.signal(signal.SIGHUP, _interrupted)
    signal.signal(signal.SIGINT, _interrupted)


def run_main(main, name):
    """Runs `main` (which returns an exit status) with the signal handlers installed, reports a
    BenchError or an interruption under `name`, always runs the cleanups, and exits: 2 when
    main did not return."""
    install_signal_handlers()
    status = 2
    try:
        status = main()
    except BenchError as error:
        print(f"{name}: error: {error}", file=sys.stderr, flush=True)
    except KeyboardInterrupt as interrupt:
        print(f"{name}: interrupted ({interrupt})", file=sys.stderr, flush=True)
        status = 130
    finally:
        run_cleanups()
    sys.exit(status)


def stop_process(process, timeout=15, sig=signal.SIGTERM):
    """Stops a subprocess.Popen: `sig`, then SIGKILL after `timeout` seconds."""
    if process.poll() is not None:
        return process.returncode
    try:
        process.send_signal(sig)
        return process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()


def run(args, what, timeout=600, **kwargs):
    """Runs a command to its end; a failure raises BenchError with its output."""
    result = subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kwargs)
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip().splitlines()[-10:]
        raise BenchError(f"{what} failed with status {result.returncode}: " + " | ".join(output))
    return result.stdout


# --- /proc ---------------------------------------------------------------------------------


def children_of(pid):
    """Every live descendant of pid (by the parent field of /proc/N/stat)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
                parents.setdefault(int(fields[1]), []).append(int(entry))
            except OSError:
                pass
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def context_switches(pids):
    """{(pid, tid): voluntary + involuntary switches} over every thread of the processes."""
    counts = {}
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/status") as status:
                    total = 0
                    for line in status:
                        if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                            total += int(line.split()[1])
                counts[(pid, tid)] = total
            except OSError:
                pass
    return counts


def wakeups_over(pids_now, seconds):
    """Context switches of the processes `pids_now()` names, summed over their threads, in
    `seconds` seconds of waiting; threads that appear meanwhile count from 0."""
    before = context_switches(pids_now())
    time.sleep(seconds)
    after = context_switches(pids_now())
    return sum(count - before.get(key, 0) for key, count in after.items())


def pss_bytes(pids):
    """Proportional set size summed over the processes: a page shared by several of them
    counts once in all; for a single process with no shared pages it is its RSS."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as rollup:
                for line in rollup:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
                        break
        except OSError:
            pass
    if total == 0:
        raise BenchError(f"no memory figure for processes {pids}")
    return total


def disk_bytes(*paths):
    """Allocated bytes (blocks, as du counts them) of the files under the paths."""
    total, seen = 0, set()
    for path in paths:
        if os.path.isfile(path):
            info = os.lstat(path)
            seen.add((info.st_dev, info.st_ino))
            total += info.st_blocks * 512
            continue
        for folder, _dirs, files in os.walk(path):
            for name in files + [""]:
                try:
                    info = os.lstat(os.path.join(folder, name) if name else folder)
                except OSError:
                    continue
                if (info.st_dev, info.st_ino) not in seen:
                    seen.add((info.st_dev, info.st_ino))
                    total += info.st_blocks * 512
    return total


# --- Figures -------------------------------------------------------------------------------


def percentile(values, fraction):
    """The nearest-rank percentile of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, -(-int(fraction * 1000) * len(ordered) // 1000))
    return ordered[min(rank, len(ordered)) - 1]


def read_actions(path):
    """The action file: one `ID EPOCH` line per action run, EPOCH in seconds with a fraction
    (bash's $EPOCHREALTIME) or in nanoseconds (an integer). The first run of each id counts."""
    actions, repeats = {}, 0
    try:
        with open(path) as lines:
            for line in lines:
                parts = line.split()
                if len(parts) != 2 or not line.endswith("\n"):
                    continue
                key, stamp = parts
                value = int(float(stamp) * 1e9) if "." in stamp else int(stamp)
                if key in actions:
                    repeats += 1
                else:
                    actions[key] = value
    except FileNotFoundError:
        pass
    return actions, repeats


def wait_actions(path, ids, deadline_ns, what):
    """Waits until every id has an action in the file, or raises at the deadline."""
    wanted = set(ids)
    while True:
        actions, repeats = read_actions(path)
        missing = wanted - actions.keys()
        if not missing:
            return actions, repeats
        if now_ns() > deadline_ns:
            raise BenchError(f"{what}: {len(missing)} of {len(wanted)} events had no action by the deadline")
        time.sleep(0.2)
