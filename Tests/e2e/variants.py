#!/usr/bin/env python3
"""The end-to-end test's run of a plan with two variants (step 14-variants.sh).

  run SOCKET PLAN COUNT            starts COUNT trials of PLAN (subjects e2e-var-0 to
                                   e2e-var-<COUNT-1>), each getting its variant from the daemon,
                                   checks it is the one docs/lifecycle.md's assignment gives, and
                                   converts each with the chance its variant's TRUE rate says,
                                   drawn by Python's Mersenne Twister from the FIXED seed SEED (so
                                   the run is the same every time and the check cannot flake); the
                                   others are left to enter grace and expire. Starts and
                                   conversions go in chunks of CHUNK, pipelined, so a trial is
                                   converted within a chunk's time of its start, long before its
                                   end. Prints `started N converted N` and, per variant,
                                   `VARIANT started N converted N`
  expect COUNT                     the same draw, without a daemon: prints what run would convert
  table TRUE...                    reads `trialwatchctl stats --variants` from stdin; each
                                   VARIANT=RATE given must have a row whose 95% interval holds RATE
                                   (in percent, as printed), and a p-value line must follow
  journal FILE PLAN                counts the journal's entries (journalctl -o json) of PLAN's
                                   events: prints `KIND VARIANT N` for each (KIND/REASON for a
                                   skipped one), `none` for an event without TRIAL_VARIANT
"""

import json
import os
import random
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from burst import connect, replies  # noqa: E402

SEED = 20261203
TRUE = {"base": 0.05, "bonus": 0.10}
WEIGHTS = [("base", 1), ("bonus", 1)]
CHUNK = 50
START = "io.trialwatch.Trials.StartTrial"
END = "io.trialwatch.Trials.EndTrial"
MASK = (1 << 64) - 1


def assigned(plan, key):
    """The variant docs/lifecycle.md's function gives (FNV-1a, fmix64, the high product)."""
    h = 0xCBF29CE484222325
    for byte in plan.encode() + b"\0" + key.encode():
        h = ((h ^ byte) * 0x100000001B3) & MASK
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & MASK
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & MASK
    h ^= h >> 33
    point = (h * sum(w for _, w in WEIGHTS)) >> 64
    total = 0
    for name, weight in WEIGHTS:
        total += weight
        if point < total:
            return name
    return WEIGHTS[-1][0]


def subject(index):
    return f"e2e-var-{index}"


def draws(plan, count):
    """Whether each trial converts: one draw a trial, in order, against its variant's rate."""
    rng = random.Random(SEED)
    return [rng.random() < TRUE[assigned(plan, subject(i))] for i in range(count)]


def tally(plan, count, converts):
    figures = {name: [0, 0] for name, _ in WEIGHTS}
    for index in range(count):
        figures[assigned(plan, subject(index))][0] += 1
        figures[assigned(plan, subject(index))][1] += converts[index]
    return figures


def exchange(client, stream, messages):
    client.sendall(b"".join(json.dumps(m).encode() + b"\0" for m in messages))
    return [next(stream) for _ in messages]


def run(path, plan, count):
    converts = draws(plan, count)
    wrong = []
    with connect(path) as client:
        stream = replies(client)
        for first in range(0, count, CHUNK):
            indices = range(first, min(count, first + CHUNK))
            starts = [{"method": START, "parameters": {"subject": subject(i), "plan": plan}} for i in indices]
            ids = []
            for index, reply in zip(indices, exchange(client, stream, starts)):
                if "error" in reply:
                    raise SystemExit(f"start {subject(index)}: {reply['error']} {reply.get('parameters')}")
                trial = reply["parameters"]["trial"]
                if trial.get("variant") != assigned(plan, subject(index)):
                    wrong.append(f"{subject(index)}: {trial.get('variant')}")
                ids.append((index, trial["id"]))
            ends = [{"method": END, "parameters": {"id": i, "outcome": "converted"}} for n, i in ids if converts[n]]
            for reply in exchange(client, stream, ends):
                if "error" in reply:
                    raise SystemExit(f"convert: {reply['error']} {reply.get('parameters')}")
    if wrong:
        raise SystemExit(f"{len(wrong)} trials not in the documented variant, e.g. {wrong[:3]}")
    print(f"started {count} converted {sum(converts)}")
    for name, (started, converted) in tally(plan, count, converts).items():
        print(f"{name} started {started} converted {converted}")
    return 0


def table(text, rates):
    """Each given variant's row holds its rate within its interval; a p-value line follows."""
    problems = []
    for name, rate in rates.items():
        row = re.search(rf"^{re.escape(name)} .* ([0-9.]+)%-([0-9.]+)%\s*$", text, re.M)
        if not row:
            problems.append(f"no row with an interval for {name}")
        elif not float(row.group(1)) <= rate * 100 <= float(row.group(2)):
            problems.append(f"{name}: {rate * 100}% is not within {row.group(1)}%-{row.group(2)}%")
    if not re.search(r"^\S+ vs \S+: [+-][0-9.]+ points, z = -?[0-9.]+, p [<=] [0-9.]+", text, re.M):
        problems.append("no p-value line")
    print("; ".join(problems) or "every interval holds its true rate")
    return 1 if problems else 0


def journal(path, plan):
    counts = {}
    with open(path) as lines:
        for line in lines:
            entry = json.loads(line)
            if entry.get("TRIAL_PLAN") != plan or "EVENT_KIND" not in entry:
                continue
            kind = entry["EVENT_KIND"]
            if "SKIP_REASON" in entry:
                kind += "/" + entry["SKIP_REASON"]
            key = (kind, entry.get("TRIAL_VARIANT", "none"))
            counts[key] = counts.get(key, 0) + 1
    for (kind, variant), n in sorted(counts.items()):
        print(f"{kind} {variant} {n}")
    return 0


def main(argv):
    if len(argv) == 5 and argv[1] == "run":
        return run(argv[2], argv[3], int(argv[4]))
    if len(argv) == 4 and argv[1] == "expect":
        converts = draws(argv[2], int(argv[3]))
        for name, (started, converted) in tally(argv[2], int(argv[3]), converts).items():
            print(f"{name} started {started} converted {converted}")
        return 0
    if len(argv) >= 3 and argv[1] == "table":
        return table(sys.stdin.read(), {k: float(v) for k, v in (a.split("=") for a in argv[2:])})
    if len(argv) == 4 and argv[1] == "journal":
        return journal(argv[2], argv[3])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
