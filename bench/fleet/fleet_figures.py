#!/usr/bin/python3
# The pure parts of the fleet figures (fleet_bench.py), unit-tested by test_fleet_bench.py: the
# figures' names and units, their `name: value unit` lines, the output check of
# bench-fleet-check, and the measures taken of what the systems recorded.
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Tests", "fleet"))

import analysis  # noqa: E402

# --- The figures: names, units, formatting (pure) ------------------------------------------


def figure_names(statements="statements"):
    """[(name, unit)] in the order they are printed. statements: 'statements' when
    pg_stat_statements counts them, 'transactions' when pg_stat_database's counters stand in."""
    per_s = f"{statements}/s"
    names = []
    for system in ("fleet", "poller1s", "poller10s"):
        names += [(f"{system}_fires_per_s", "events/s"), (f"{system}_lateness_p50", "ms"),
                  (f"{system}_lateness_p99", "ms"), (f"{system}_db_{statements}_idle_per_s", per_s),
                  (f"{system}_db_{statements}_loaded_per_s", per_s)]
        if system == "fleet":
            names += [("fleet_lateness_p50_loaded", "ms"), ("fleet_lateness_p99_loaded", "ms"),
                      (f"fleet_db_{statements}_idle_per_node_per_s", per_s),
                      (f"fleet_db_{statements}_per_event", f"{statements}/event"),
                      ("fleet_failover_kill", "ms"), ("fleet_failover_stop", "ms"),
                      ("fleet_duplicates_under_faults", "events"), ("fleet_redeliveries_under_faults", "events"),
                      ("fleet_get_status_ms_1m", "ms")]
        elif system == "poller1s":
            names += [("poller1s_failover_kill", "ms"), ("poller1s_duplicates_under_faults", "events"),
                      ("poller1s_redeliveries_under_faults", "events")]
    return names


def figure_line(name, value, unit):
    """`name: value unit`: counts as integers, other values with two decimals below 100 and
    one from there."""
    if isinstance(value, int):
        text = str(value)
    else:
        text = f"{value:.2f}" if abs(value) < 100 else f"{value:.1f}"
    return f"{name}: {text} {unit}"


_FIGURE = re.compile(r"^([a-z0-9_]+): (-?[0-9]+(?:\.[0-9]+)?) (\S+)$")


def parse_figure(line):
    """(name, value, unit) of a figure line, None for anything else."""
    match = _FIGURE.match(line.rstrip("\n"))
    return (match.group(1), float(match.group(2)), match.group(3)) if match else None


def check_output(lines):
    """The problems of a run's stdout: every line a figure, each figure once, none missing."""
    problems, seen = [], {}
    for line in lines:
        parsed = parse_figure(line)
        if parsed is None:
            problems.append(f"not a figure line: {line.rstrip()!r}")
        elif parsed[0] in seen:
            problems.append(f"{parsed[0]} twice")
        else:
            seen[parsed[0]] = parsed[2]
    kind = "transactions" if any("_db_transactions_" in name for name in seen) else "statements"
    for name, unit in figure_names(kind):
        if name not in seen:
            problems.append(f"{name} missing")
        elif seen[name] != unit:
            problems.append(f"{name} in {seen[name]}, not {unit}")
    return problems


def lateness_ms(pairs):
    """(p50, p99) in ms of taken - due over [(due, taken)] (analysis.percentile, nearest rank)."""
    late = [taken - due for due, taken in pairs]
    return analysis.percentile(late, 0.5) * 1000, analysis.percentile(late, 0.99) * 1000


def first_taken(rows):
    """{id: earliest time taken} of [(id, time, ...)] (repeats kept apart by duplicates())."""
    first = {}
    for key, taken, *_ in rows:
        if key not in first or taken < first[key]:
            first[key] = taken
    return first


def duplicates(ids):
    """How many distinct ids occur more than once (analysis.repeated)."""
    return len(analysis.repeated(ids))


def fires_per_s(count, due, last_taken):
    """events / (last taken - due), as the burst figure."""
    return count / max(last_taken - due, 1e-6)
