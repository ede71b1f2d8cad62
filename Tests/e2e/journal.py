#!/usr/bin/env python3
"""Checks on journal entries for the end-to-end test (e2e.sh).

Reads `journalctl -o json` output (one JSON object per line) from a file and
answers one question per subcommand; exit status 0 means yes. Problems are
printed on standard output, one per line, for the FAIL line's reason.

  expect FILE [--wait] SPEC...    each expected event fired exactly once, with
                                  its MESSAGE_ID and fields. SPEC is
                                  TRIAL_ID:KIND[:TIMING], KIND reminder or
                                  expiry, TIMING ontime, late or any (default
                                  ontime); reminders are counted per trial.
                                  --wait: only whether every one is there yet
  duplicates FILE                 no event id fired (or paused, resumed) more than once
  burst FILE PREFIX COUNT [--wait]
                                  the trials whose subjects start with PREFIX-
                                  have COUNT expiry entries in all, each event
                                  id once. --wait: only whether COUNT are there
                                  (prints how many)
  before FILE REGEX_A REGEX_B     the first MESSAGE matching A comes before
                                  the first matching B
  has FILE REGEX                  some MESSAGE matches
  has-fields FILE REGEX FIELD=VALUE...
                                  some entry whose MESSAGE matches has every
                                  FIELD=VALUE
  errors FILE                     no entry of trialwatchd at priority err or worse
  cursor FILE                     prints the last entry's cursor
  unit FILE UNIT                  keeps in FILE only the entries journalctl -u
                                  UNIT shows: the unit's own, PID 1's about it,
                                  root's about it as object or coredump
  get PATH                        prints a value of the JSON object on standard
                                  input, PATH like trial.id or trial.reminders
"""

import json
import re
import sys

ID_REMINDER = "e0431c29206b4f89b9db88d7e38907bc"
ID_EXPIRY = "a16bdf9f2f29487d962a88689b1d20c8"
ID_LATE = "194e6e2d7bac4fb7847f8c84893df546"
ID_SKIPPED = "1f372a37269d4fa6a822448c5499a6bd"
ID_COREDUMP = "fc2e22bc6ee647b6b90729ab34a250b1"
ID_PAUSED = "a0b5b86a00fe43d790a37a03a2f947f8"
ID_RESUMED = "ac0a8c5469ff4fbea738cf5cfb2f368f"
FIRED = {ID_REMINDER, ID_EXPIRY, ID_LATE}
# An event taken more than this after its due time is late (LateThreshold=, default 1s).
LATE_THRESHOLD_USEC = 1_000_000


def lines_and_entries(path):
    """Each entry's line, with the entry's text fields."""
    result = []
    with open(path, encoding="utf-8", errors="replace") as file:
        for line in file:
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            # journalctl shows binary fields as byte arrays; only text fields matter here.
            result.append((line, {k: v for k, v in entry.items() if isinstance(v, str)}))
    return result


def entries(path):
    return [entry for _, entry in lines_and_entries(path)]


def fired_events(path):
    return [e for e in entries(path) if e.get("MESSAGE_ID") in FIRED and "EVENT_ID" in e]


def check_entry(entry, kind, timing):
    """The problems of one fired event's entry."""
    problems = []
    event = entry.get("EVENT_ID", "?")
    message_id = entry.get("MESSAGE_ID")
    for field in ("MESSAGE", "TRIAL_ID", "TRIAL_SUBJECT", "TRIAL_END", "TRIAL_REVISION", "EVENT_KIND",
                  "EVENT_ID", "DUE_REALTIME_USEC", "LATENESS_USEC", "PRIORITY"):
        if not entry.get(field):
            problems.append(f"{event}: no {field}")
    if entry.get("EVENT_KIND") != kind:
        problems.append(f"{event}: EVENT_KIND={entry.get('EVENT_KIND')}, expected {kind}")
    if not event.startswith(entry.get("TRIAL_ID", "-")):
        problems.append(f"{event}: EVENT_ID does not start with TRIAL_ID={entry.get('TRIAL_ID')}")
    if kind == "reminder" and not entry.get("REMINDER_OFFSET_SEC"):
        problems.append(f"{event}: no REMINDER_OFFSET_SEC")
    if entry.get("_SYSTEMD_UNIT") != "trialwatch.service":
        problems.append(f"{event}: _SYSTEMD_UNIT={entry.get('_SYSTEMD_UNIT')}")
    try:
        lateness = int(entry.get("LATENESS_USEC", ""))
    except ValueError:
        lateness = None
    on_time_id = ID_REMINDER if kind == "reminder" else ID_EXPIRY
    if timing == "ontime" and message_id != on_time_id:
        problems.append(f"{event}: MESSAGE_ID={message_id}, expected {on_time_id} (on time; "
                        f"LATENESS_USEC={entry.get('LATENESS_USEC')})")
    if timing == "late":
        if message_id != ID_LATE:
            problems.append(f"{event}: MESSAGE_ID={message_id}, expected {ID_LATE} (late)")
        if lateness is None or lateness <= LATE_THRESHOLD_USEC:
            problems.append(f"{event}: LATENESS_USEC={entry.get('LATENESS_USEC')}, expected over 1 s")
    if timing == "any" and message_id not in (on_time_id, ID_LATE):
        problems.append(f"{event}: MESSAGE_ID={message_id}")
    if message_id == ID_LATE and (lateness is None or lateness <= LATE_THRESHOLD_USEC):
        problems.append(f"{event}: marked late with LATENESS_USEC={entry.get('LATENESS_USEC')}")
    return problems


def expect(path, specs, wait):
    wanted = {}  # (trial, kind) -> [timing, ...]
    for spec in specs:
        parts = spec.split(":")
        if len(parts) not in (2, 3) or parts[1] not in ("reminder", "expiry"):
            print(f"bad spec {spec!r}")
            return 2
        timing = parts[2] if len(parts) == 3 else "ontime"
        wanted.setdefault((parts[0], parts[1]), []).append(timing)
    trials = {trial for trial, _ in wanted}
    found = {}  # (trial, kind) -> [entry, ...]
    for entry in fired_events(path):
        if entry.get("TRIAL_ID") in trials:
            found.setdefault((entry["TRIAL_ID"], entry.get("EVENT_KIND")), []).append(entry)
    if wait:
        return 0 if all(len(found.get(key, [])) >= len(t) for key, t in wanted.items()) else 1
    problems = []
    for key, timings in sorted(wanted.items()):
        got = found.get(key, [])
        if len(got) != len(timings):
            problems.append(f"trial {key[0]}: {len(got)} {key[1]} entries, expected {len(timings)}")
        by_id = {}
        for entry in got:
            by_id.setdefault(entry["EVENT_ID"], []).append(entry)
        for event, same in by_id.items():
            if len(same) > 1:
                problems.append(f"{event}: fired {len(same)} times")
        # Entries in due order against the timings in the order given.
        got = sorted(got, key=lambda e: int(e.get("DUE_REALTIME_USEC", "0") or 0))
        for entry, timing in zip(got, timings):
            problems += check_entry(entry, key[1], timing)
    for key, got in found.items():
        if key not in wanted:
            problems.append(f"trial {key[0]}: unexpected {key[1]} entries: "
                            + ", ".join(e["EVENT_ID"] for e in got))
    for problem in problems:
        print(problem)
    return 1 if problems else 0


def duplicates(path):
    counts = {}
    delivered = [e for e in entries(path)
                 if e.get("MESSAGE_ID") in FIRED | {ID_PAUSED, ID_RESUMED} and "EVENT_ID" in e]
    for entry in delivered:
        counts[entry["EVENT_ID"]] = counts.get(entry["EVENT_ID"], 0) + 1
    twice = {event: n for event, n in counts.items() if n > 1}
    for event, n in sorted(twice.items()):
        print(f"{event} fired {n} times")
    print(f"{len(counts)} events fired", file=sys.stderr)
    return 1 if twice else 0


def burst(path, prefix, count, wait):
    seen = {}
    problems = []
    for entry in fired_events(path):
        if not entry.get("TRIAL_SUBJECT", "").startswith(prefix + "-"):
            continue
        event = entry["EVENT_ID"]
        seen[event] = seen.get(event, 0) + 1
        if entry.get("EVENT_KIND") != "expiry" and len(problems) < 10:
            problems.append(f"{event}: EVENT_KIND={entry.get('EVENT_KIND')}, expected expiry")
    if wait:
        print(len(seen))
        return 0 if len(seen) >= count else 1
    if len(seen) != count:
        problems.append(f"{len(seen)} expiries of {prefix}-* in the journal, expected {count}")
    twice = [event for event, n in seen.items() if n > 1]
    if twice:
        problems.append(f"{len(twice)} events more than once, e.g. {twice[0]} {seen[twice[0]]} times")
    for problem in problems:
        print(problem)
    return 1 if problems else 0


def first_index(all_entries, pattern):
    regex = re.compile(pattern)
    for index, entry in enumerate(all_entries):
        if regex.search(entry.get("MESSAGE", "")):
            return index
    return None


def before(path, pattern_a, pattern_b):
    all_entries = entries(path)
    a, b = first_index(all_entries, pattern_a), first_index(all_entries, pattern_b)
    if a is None:
        print(f"no entry matches {pattern_a!r}")
        return 1
    if b is None:
        print(f"no entry matches {pattern_b!r}")
        return 1
    if a > b:
        print(f"{pattern_b!r} came before {pattern_a!r}")
        return 1
    return 0


def has(path, pattern):
    return 0 if first_index(entries(path), pattern) is not None else 1


def has_fields(path, pattern, fields):
    """An entry whose MESSAGE matches PATTERN has every FIELD=VALUE given."""
    wanted = dict(field.split("=", 1) for field in fields)
    regex = re.compile(pattern)
    for entry in entries(path):
        if regex.search(entry.get("MESSAGE", "")) and all(entry.get(k) == v for k, v in wanted.items()):
            return 0
    return 1


def errors(path):
    bad = [e for e in entries(path)
           if e.get("SYSLOG_IDENTIFIER") == "trialwatchd" and e.get("PRIORITY", "6").isdigit()
           and int(e["PRIORITY"]) <= 3]
    for entry in bad:
        print(f"priority {entry['PRIORITY']}: {entry.get('MESSAGE', '')}")
    return 1 if bad else 0


def cursor(path):
    all_entries = entries(path)
    if not all_entries or "__CURSOR" not in all_entries[-1]:
        return 1
    print(all_entries[-1]["__CURSOR"])
    return 0


def of_unit(entry, name):
    """Whether journalctl -u NAME shows the entry (the matches of systemd's add_matches_for_unit)."""
    by_root = entry.get("_UID") == "0"
    return (entry.get("_SYSTEMD_UNIT") == name
            or (entry.get("_PID") == "1" and entry.get("UNIT") == name)
            or (by_root and entry.get("OBJECT_SYSTEMD_UNIT") == name)
            or (by_root and entry.get("MESSAGE_ID") == ID_COREDUMP and entry.get("COREDUMP_UNIT") == name))


def unit(path, name):
    kept = [line for line, entry in lines_and_entries(path) if of_unit(entry, name)]
    with open(path, "w", encoding="utf-8") as file:
        file.writelines(kept)
    return 0


def get(path_expression):
    text = sys.stdin.read().strip().splitlines()
    if not text:
        return 1
    value = json.loads(text[-1])
    for part in path_expression.split("."):
        if isinstance(value, list):
            value = value[int(part)]
        else:
            value = value.get(part)
        if value is None:
            return 1
    print(",".join(str(v) for v in value) if isinstance(value, list) else value)
    return 0


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    command, args = argv[1], argv[2:]
    wait = "--wait" in args
    args = [a for a in args if a != "--wait"]
    if command == "expect":
        return expect(args[0], args[1:], wait)
    if command == "duplicates":
        return duplicates(args[0])
    if command == "burst":
        return burst(args[0], args[1], int(args[2]), wait)
    if command == "before":
        return before(args[0], args[1], args[2])
    if command == "has":
        return has(args[0], args[1])
    if command == "has-fields":
        return has_fields(args[0], args[1], args[2:])
    if command == "errors":
        return errors(args[0])
    if command == "cursor":
        return cursor(args[0])
    if command == "unit":
        return unit(args[0], args[1])
    if command == "get":
        return get(args[0])
    print(f"unknown command {command!r}")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
