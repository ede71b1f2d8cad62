#!/usr/bin/python3
# docs/benchmark-figures.md from the saved output of benchmark runs (`make bench-figures`).
#
#   figures.py [--output FILE] [--date DATE] [--commit COMMIT] OUTPUT...
#
# Each OUTPUT is what a run printed: `make bench` (.build-bench/bench.out), `make bench-peers`
# (.build-bench/peers.out) or `make bench-http` (.build-bench/http.out: the HTTP gateway's
# figures, the dashboard's among them, under the prefix http_). In it:
#   name: value unit        a figure (a peers' ratio has no unit)
#   # bench-run KEY: VALUE  what the run was: command, date, commit, note (written by make)
#   SKIP: ...               a part that could not run here
#   # ...                   a note of the harness
# Anything else (a build's messages, progress) is passed over. One section per OUTPUT, in the
# order given, with the command, date and commit it came from (--date and --commit stand in
# where an output lacks them); in it one table per figure prefix, the peers' figures as one
# table of every metric by tool. Values are written as printed. Nothing here reads the clock.
import argparse
import os
import re
import sys

FIGURE = re.compile(r"^([A-Za-z0-9_.-]+): (-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|-?nan|-?inf)"
                    r"(?: (\S+))?$")
RUN = re.compile(r"^# bench-run ([a-z]+): (.*)$")
PEERS_PREFIXES = ("trialwatch_", "peer_", "ratio_")
# The sections of `make bench`, in the order it prints them; other prefixes follow in order seen.
PREFIX_TITLES = {
    "planner": "The planner", "store": "The store", "engine": "The engine", "daemon": "The daemon",
    "ctl": "trialwatchctl", "control": "The control socket", "feed": "The event log", "consume": "consume",
    "package": "The package", "fire": "The fire path, counted",
    "fleet": "The fleet", "poller1s": "The poller, every 1 s", "poller10s": "The poller, every 10 s",
    "webhook": "Webhooks", "consume_curl": "A consumer running curl per event", "http": "The HTTP gateway",
}
PEER_METRICS = {
    "lateness_p50": "lateness p50", "lateness_p99": "lateness p99", "lateness_max": "lateness max",
    "rss_100k": "memory, 100,000 pending", "watch_client_pss_100k": "memory of trialwatch's Watch client, apart",
    "disk_100k": "disk, 100,000 pending",
    "ingest_10k": "ingest of 10,000, durable", "ingest_10k_16_clients": "ingest of 10,000 from 16 clients",
    "idle_wakeups_per_min": "idle wake-ups per minute",
    "burst_10k_done": "burst of 10,000 done",
}


class Run:
    """One output: its figures in order, its SKIP lines and notes, what it says of itself."""

    def __init__(self, path):
        self.path = path
        self.figures = []  # (name, value text, unit or None)
        self.skips = []
        self.notes = []
        self.meta = {}
        self.passed_over = 0


def read_run(path):
    run = Run(path)
    seen = set()
    with open(path, encoding="utf-8") as output:
        for raw in output:
            line = raw.rstrip("\n").rstrip()
            run_line = RUN.match(line)
            figure = FIGURE.match(line)
            if run_line:
                key, value = run_line.group(1), run_line.group(2).strip()
                if key == "note":
                    run.meta.setdefault("note", []).append(value)
                else:
                    run.meta[key] = value
            elif figure:
                name = figure.group(1)
                if name in seen:
                    raise SystemExit(f"figures.py: {path}: {name} twice")
                seen.add(name)
                run.figures.append((name, figure.group(2), figure.group(3)))
            elif line.startswith("SKIP"):
                run.skips.append(line)
            elif line.startswith("#"):
                run.notes.append(line.lstrip("#").strip())
            elif line:
                run.passed_over += 1
    return run


def is_peers(run):
    return any(name.startswith(PEERS_PREFIXES) for name, _, _ in run.figures)


def code(text):
    return f"`{text}`"


def cell(text):
    return text.replace("|", "\\|")


def prefix_of(name):
    return name.split("_", 1)[0]


def figure_tables(figures):
    """One table per prefix, prefixes in the order of PREFIX_TITLES, then as first seen."""
    groups = {}
    for name, value, unit in figures:
        groups.setdefault(prefix_of(name), []).append((name, value, unit))
    order = [p for p in PREFIX_TITLES if p in groups] + [p for p in groups if p not in PREFIX_TITLES]
    lines = []
    for prefix in order:
        lines += [f"### {PREFIX_TITLES.get(prefix, code(prefix + '_'))}", "",
                  "| Figure | Value | Unit |", "| --- | ---: | --- |"]
        for name, value, unit in groups[prefix]:
            lines.append(f"| {code(name)} | {value} | {cell(unit or '')} |")
        lines.append("")
    return lines


def peers_table(run):
    """Every metric by tool: trialwatch first, then the peers as they came; a peer's ratio to
    trialwatch (peer / trialwatch: above 1, trialwatch is better) beside its figure."""
    tools, metrics, values, ratios, units, others = ["trialwatch"], [], {}, {}, {}, []
    for name, value, unit in run.figures:
        if name.startswith("trialwatch_"):
            tool, metric = "trialwatch", name[len("trialwatch_"):]
        elif name.startswith("peer_"):
            tool, _, metric = name[len("peer_"):].partition("_")
        elif name.startswith("ratio_"):
            metric, _, tool = name[len("ratio_"):].rpartition("_")
            ratios[(tool, metric)] = value
            continue
        else:
            others.append((name, value, unit))
            continue
        if tool not in tools:
            tools.append(tool)
        if metric not in metrics:
            metrics.append(metric)
        values[(tool, metric)] = value
        if unit:
            units.setdefault(metric, unit)
    lines = ["In parentheses: the peer's figure over trialwatch's (above 1, trialwatch is better).", "",
             "| Metric | " + " | ".join(code(t) for t in tools) + " |",
             "| --- |" + " ---: |" * len(tools)]
    for metric in metrics:
        label = PEER_METRICS.get(metric, metric)
        unit = units.get(metric)
        row = [f"{label} ({cell(unit)})" if unit else label]
        for tool in tools:
            value = values.get((tool, metric), "—")
            ratio = ratios.get((tool, metric))
            row.append(f"{value} (×{ratio})" if ratio is not None else value)
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    if others:
        lines += figure_tables(others)
    return lines


def section(run, number, overrides):
    meta = dict(run.meta)
    for key, value in overrides.items():
        if value and not meta.get(key):
            meta[key] = value
    command = meta.get("command") or ("make bench-peers" if is_peers(run) else "make bench")
    title = f"## {number}. `{command}`"
    facts = []
    if meta.get("date"):
        facts.append(f"run on {meta['date']}")
    if meta.get("commit"):
        facts.append(f"commit {code(meta['commit'])}")
    lines = [title, ""]
    if facts:
        lines += ["From the output of " + code(command) + ", " + ", ".join(facts) + ".", ""]
    else:
        lines += ["From the output of " + code(command) + " (its date and commit were not given).", ""]
    for note in meta.get("note", []):
        lines += [note, ""]
    if not run.figures:
        lines += ["No figure in this output.", ""]
    elif is_peers(run):
        lines += peers_table(run)
    else:
        lines += figure_tables(run.figures)
    if run.skips or run.notes:
        lines += ["Also in the output:", ""]
        lines += [f"- {code(line)}" for line in run.skips + run.notes]
        lines.append("")
    return lines


def render(runs, overrides):
    lines = [
        "<!-- Generated by bench/figures.py (make bench-figures); do not edit by hand. -->",
        "",
        "# Benchmark figures",
        "",
        "Generated by `make bench-figures` from the saved output of benchmark runs; a new run "
        "(`make bench`, `make bench-peers`, `make bench-http`) followed by `make bench-figures` "
        "rewrites it. Values are as the run printed them. What each figure measures, and the targets: "
        "[Benchmarks](benchmarks.md); earlier runs and what they taught: "
        "[Benchmark history](benchmark-history.md).",
        "",
    ]
    for number, run in enumerate(runs, 1):
        lines += section(run, number, overrides)
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description="docs/benchmark-figures.md from benchmark outputs")
    parser.add_argument("outputs", nargs="+", help="saved outputs of make bench or make bench-peers")
    parser.add_argument("--output", default="-", help="the markdown file to write (default: stdout)")
    parser.add_argument("--date", default="", help="the date of the runs, where an output lacks it")
    parser.add_argument("--commit", default="", help="the commit of the runs, where an output lacks it")
    args = parser.parse_args()
    runs = []
    for path in args.outputs:
        if not os.path.isfile(path):
            raise SystemExit(f"figures.py: no output {path}: run make bench (or make bench-peers) first")
        runs.append(read_run(path))
    if not any(run.figures for run in runs):
        raise SystemExit("figures.py: no figure line (name: value unit) in " + ", ".join(args.outputs))
    text = render(runs, {"date": args.date, "commit": args.commit})
    if args.output == "-":
        sys.stdout.write(text)
        return
    temporary = args.output + ".tmp"
    with open(temporary, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(temporary, args.output)
    figures = sum(len(run.figures) for run in runs)
    print(f"wrote {args.output}: {figures} figures from {len(runs)} output(s)")


if __name__ == "__main__":
    main()
