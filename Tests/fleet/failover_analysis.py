# The pure part of the failover test (failover_test.py): the commands' outcomes against the
# switches and the database, the ledger of each stopped primary against the new one, and the
# time the fleet took to fire again after each promotion. No I/O, no clock: every time is a
# float of seconds since the epoch. Unit-tested by test_failover.py.
from collections import Counter, namedtuple

# One command a client made of a node: sent and replied in seconds since the epoch; error the
# Varlink error name (None when it succeeded), detail its parameters (text); subject the trial's
# subject.
Command = namedtuple("Command", "node subject sent replied error detail", defaults=("",))

# One failover: the stop of the primary (`pg_ctl stop -m mode`, from its start to its return)
# and the promotion of the standby (from the request to pg_ctl's return); synchronous: whether
# the primary's commits waited for the standby; followed {node: its first renewal on the new
# primary} (None when it made none).
Switch = namedtuple("Switch", "mode synchronous stop_start stop_done promote_start promote_done followed")

# A ledger row as the comparison of two primaries needs it: event_id, the node that took it,
# the epoch it took it under, taken_at as text (exact), delivered_at set.
Record = namedtuple("Record", "event_id node epoch taken delivered")

# The error a command gets when the store cannot take a write (issue 54's named errors).
STORE_UNAVAILABLE = "io.trialwatch.StoreUnavailable"
# A command may fail from the stop of the primary until this long after the promotion: the
# promotion bound below (a node is back once it reconnected and holds shards again).
AFTER_PROMOTION = 5.0
# The fleet fires again within this long of the promotion (issue 54). It follows from the design
# with room to spare: each node tries to connect at every round of its membership (250 ms) and
# claims its shards in that round; a fire whose commit failed on the old primary is retried after
# the engine's retry delay (1 s); two leases (2 x 1.5 s) are the allowance for the takeover's own
# work on a busy machine, as in the fault test's failover bound: 0.25 + 1 + 3 = 4.25 s <= 5 s.
RECOVERY_BOUND = 5.0


def in_switch(moment, switches):
    """The switch whose window (its stop's start to AFTER_PROMOTION after its promotion) holds
    `moment`, or None."""
    for switch in switches:
        if switch.stop_start <= moment <= switch.promote_done + AFTER_PROMOTION:
            return switch
    return None


def name(switch):
    """`sync_fast`, `async_immediate`...: the switch's replication and stop."""
    return f"{'sync' if switch.synchronous else 'async'}_{switch.mode}"


def losing_switch(moment, switches):
    """The switch that could lose what was acknowledged at `moment`: the first whose stop
    began after it (None when none did)."""
    return next((switch for switch in sorted(switches, key=lambda s: s.stop_start) if switch.stop_start >= moment),
                None)


def command_outcomes(commands, switches):
    """(succeeded, failed by error name, failed outside every switch): a command failed outside
    the switches when neither its sending nor its reply falls in a switch's window."""
    succeeded = [command for command in commands if command.error is None]
    by_name = Counter(command.error for command in commands if command.error is not None)
    outside = [command for command in commands if command.error is not None
               and in_switch(command.sent, switches) is None and in_switch(command.replied, switches) is None]
    return succeeded, by_name, outside


def missing_starts(commands, subjects):
    """The acknowledged starts (succeeded commands) whose subject has no trial in the database."""
    return [command for command in commands if command.error is None and command.subject not in subjects]


def unacknowledged_kept(commands, subjects):
    """The failed starts whose trial is in the database all the same (the commit went through
    but its reply was lost with the connection): allowed, counted."""
    return [command for command in commands if command.error is not None and command.subject in subjects]


def lost_records(old, new):
    """The records of the stopped primary's ledger the new primary does not hold as they were
    (the same event taken by the same node under the same epoch at the same time): their commit
    did not reach the standby, and the event was taken again (or not at all) after the switch."""
    kept = {(record.event_id, record.node, record.epoch, record.taken) for record in new}
    return [record for record in old if (record.event_id, record.node, record.epoch, record.taken) not in kept]


def fired_twice(lost, delivery_counts):
    """Of the lost records, those whose event was delivered more than once (by the node that
    took it first, then by the one that took it again): a consumer saw it twice, with its
    EVENT_ID."""
    return [record for record in lost if delivery_counts.get(record.event_id, 0) > 1]


def recovery(switch, rows):
    """How the fleet fired again after `switch`, from the ledger rows (analysis.Row):
    (catch_up, first, count): catch_up the time from the promotion's request to the last taking
    of an event due before it and taken after the stop began (None when there was none), first
    the time to the first taking after the request (None when none), count the events caught
    up."""
    start = switch.promote_start
    overdue = [row for row in rows if row.outcome == "fired" and row.due <= start and row.taken >= switch.stop_start]
    after = [row.taken for row in rows if row.taken >= start]
    catch_up = max(row.taken for row in overdue) - start if overdue else None
    first = min(after) - start if after else None
    return catch_up, first, len(overdue)


def followed(switch):
    """The time from the promotion's request until every node renewed its lease on the new
    primary; None when one did not."""
    if not switch.followed or any(moment is None for moment in switch.followed.values()):
        return None
    return max(switch.followed.values()) - switch.promote_start
