# The browser test's trials: three plans and 1,000 trials started over the last 12 weeks,
# written as an export file (the records of `trialwatchctl export`, docs/backups.md) that
# `trialwatchd --import` puts in the store before the daemon starts, since a trial started in the
# past can only come in so. Each trial has its plan's length, reminders and labels and a label
# customer=c-N of its own; those whose end has passed converted, were cancelled or expired, the
# others are mostly active, some converted or cancelled already, a few paused. Every event due
# before now is in the ledger, taken and delivered, so that nothing fires when the daemon starts.
#
# No trial that runs on has an event due within 3 hours of now, nor around 24 hours and 7 days
# from now (the overview counts what falls due within those): the figures the test compares cannot
# change while it runs, however slow the machine.
import collections
import datetime
import json
import os
import random

SECOND = 1_000_000  # times are whole microseconds since 1970, as the export carries them
HOUR = 3600 * SECOND
DAY = 24 * HOUR
WEEKS = 12

Plan = collections.namedtuple("Plan", "name length reminders description weight")
PLANS = [
    Plan("starter", 7 * DAY, [1 * DAY], "Starter, one week", 5),
    Plan("pro", 14 * DAY, [7 * DAY, 1 * DAY], "Pro, two weeks", 3),
    Plan("team", 30 * DAY, [7 * DAY, 3 * DAY, 1 * DAY], "Team, a month", 2),
]

# A trial as the test expects to find it: its id, subject, plan, labels, state, times (µs), the
# ids of the events in its ledger and when its next pending event falls due (None: none pending).
Trial = collections.namedtuple("Trial", "id subject plan labels state start end ended paused events next_due")


def write_plans(directory):
    """The plan files, in `directory` (the `plans/` beside the daemon's configuration)."""
    os.makedirs(directory, exist_ok=True)
    for plan in PLANS:
        reminders = ", ".join(f"{offset // DAY}d" for offset in plan.reminders)
        with open(os.path.join(directory, f"{plan.name}.conf"), "w") as file:
            file.write(f"[Plan]\nDescription={plan.description}\nLength={plan.length // DAY}d\n"
                       f"Reminders={reminders}\nLabels=tier={plan.name}\n")


def precise(micros):
    """A time as the export writes it: RFC 3339, UTC, six fraction digits."""
    moment = datetime.datetime.fromtimestamp(micros // SECOND, datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{micros % SECOND:06d}Z"


def day(micros):
    return datetime.datetime.fromtimestamp(micros // SECOND, datetime.timezone.utc).strftime("%Y-%m-%d")


def quiet(now, due):
    """Whether an event of a running trial may be due then: not within the next 3 hours (the test
    takes a minute or two), nor within 3 h of 24 hours on or 6 h of 7 days on."""
    return (not now - HOUR <= due <= now + 3 * HOUR and abs(due - (now + DAY)) > 3 * HOUR
            and abs(due - (now + 7 * DAY)) > 6 * HOUR)


def fate(rng, plan, now):
    """A start (µs) and what became of the trial: (state, ended, paused)."""
    while True:
        start = now - rng.randrange(2 * HOUR, WEEKS * 7 * DAY) // 1000 * 1000  # whole milliseconds
        end = start + plan.length
        roll = rng.random()
        if end < now - HOUR:
            if roll < 0.4:
                return start, "converted", start + rng.randrange(plan.length // 20, plan.length, 1000), None
            if roll < 0.6:
                return start, "cancelled", start + rng.randrange(plan.length // 20, plan.length, 1000), None
            return start, "expired", end + 2000, None
        dues = [end - offset for offset in plan.reminders] + [end]
        room = now - HOUR - start  # how long it ran before the last hour
        if room > HOUR and roll < 0.2:
            return start, "converted", start + rng.randrange(HOUR, room, 1000), None
        if room > HOUR and roll < 0.3:
            return start, "cancelled", start + rng.randrange(HOUR, room, 1000), None
        if room > HOUR and roll < 0.36:
            return start, "paused", None, start + rng.randrange(HOUR, room, 1000)
        if all(quiet(now, due) for due in dues if due > now - HOUR):
            return start, "active", None, None


def ledger_entry(event_id, due):
    taken = due + 2000
    return {"event": {"id": event_id, "due": precise(due), "outcome": "fired", "takenAt": precise(taken),
                      "late": False, "deliveredAt": precise(taken + 3000)}}


def make_trials(seed, count, now):
    """`count` trials drawn from `seed`, as of `now` (µs): (the trials, the export's records)."""
    rng = random.Random(seed)
    now -= now % 1000
    trials, records = [], []
    for index in range(count):
        plan = rng.choices(PLANS, weights=[p.weight for p in PLANS])[0]
        start, state, ended, paused = fate(rng, plan, now)
        end = start + plan.length
        trial_id = f"{((start // 1000) << 22 | index):016x}"
        labels = {"customer": f"c-{index}", "tier": plan.name}
        record = {"id": trial_id, "subject": f"acct-{index:04d}", "labels": labels,
                  "attributes": {"plan": plan.name}, "state": state, "revision": 1,
                  "startedAt": precise(start), "endsAt": precise(end),
                  "reminders": [f"{offset // DAY}d" for offset in plan.reminders]}
        # Events are taken until the trial ended, was paused, or now.
        until = min(moment for moment in (ended, paused, now) if moment is not None)
        events = [(f"{trial_id}-r1-reminder-{offset // 1000}ms", end - offset) for offset in plan.reminders]
        events.append((f"{trial_id}-r1-expiry", end))
        taken = [(event_id, due) for event_id, due in events if due <= until]
        if state == "expired":
            ended = end + 2000  # the expiry's taking
        if ended is not None:
            record["endedAt"] = precise(ended)
        if paused is not None:
            record["pausedAt"] = precise(paused)
            taken.append((f"{trial_id}-r1-paused-{(end - paused) // 1000}ms", paused))
        records.append({"trial": record})
        records.extend(ledger_entry(event_id, due) for event_id, due in taken)
        pending = [due for event_id, due in events if due > until] if state == "active" else []
        trials.append(Trial(trial_id, record["subject"], plan.name, labels, state, start, end, ended, paused,
                            [event_id for event_id, _ in taken], min(pending, default=None)))
    # The export's order: trial after trial by id, each followed by its ledger in id order.
    by_trial = collections.defaultdict(list)
    trial_id = None
    for record in records:
        trial_id = record["trial"]["id"] if "trial" in record else trial_id
        by_trial[trial_id].append(record)
    ordered = []
    for trial_id in sorted(by_trial):
        head, *ledger = by_trial[trial_id]
        ordered.append(head)
        ordered.extend(sorted(ledger, key=lambda entry: entry["event"]["id"]))
    return trials, ordered


def write_export(path, records):
    with open(path, "w") as file:
        for record in records:
            file.write(json.dumps(record, separators=(",", ":")) + "\n")
