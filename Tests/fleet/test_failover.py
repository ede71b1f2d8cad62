# The failover test's analysis on synthetic data: python3 -m unittest discover -s Tests/fleet
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import failover_analysis as fa  # noqa: E402
from analysis import Row  # noqa: E402
from failover_analysis import Command, Record, Switch  # noqa: E402

T = 1_800_000_000.0  # a fixed time, seconds since the epoch


def switch(stop, mode="fast", synchronous=True, followed=None):
    """Stopped at `stop` for 0.1 s, promoted 1 s later in 0.2 s."""
    return Switch(mode, synchronous, stop, stop + 0.1, stop + 1.1, stop + 1.3,
                  followed if followed is not None else {"node1": stop + 1.4, "node2": stop + 1.5})


def row(event_id, due, taken, outcome="fired"):
    return Row(event_id, 1, 3, "expiry", outcome, due, taken, False, "node1", 1, taken + 0.001)


class CommandTests(unittest.TestCase):
    def test_failures_inside_a_switch_are_allowed(self):
        switches = [switch(T + 10)]
        commands = [
            Command("node1", "cmd-node1-0", T + 5, T + 5.01, None),
            Command("node1", "cmd-node1-1", T + 10.05, T + 10.06, "io.trialwatch.StoreUnavailable"),
            # sent before the stop, answered after it: in the switch
            Command("node2", "cmd-node2-0", T + 9.99, T + 10.2, "io.trialwatch.StoreUnavailable"),
            # 5 s after the promotion's return: still in it
            Command("node2", "cmd-node2-1", T + 16.3, T + 16.3, "io.trialwatch.InternalError"),
            Command("node3", "cmd-node3-0", T + 16.4, T + 16.5, "io.trialwatch.InternalError"),
        ]
        succeeded, by_name, outside = fa.command_outcomes(commands, switches)
        self.assertEqual([c.subject for c in succeeded], ["cmd-node1-0"])
        self.assertEqual(by_name, {"io.trialwatch.StoreUnavailable": 2, "io.trialwatch.InternalError": 2})
        self.assertEqual([c.subject for c in outside], ["cmd-node3-0"])

    def test_missing_and_kept_starts(self):
        commands = [Command("node1", "a", T, T, None), Command("node1", "b", T, T, None),
                    Command("node1", "c", T, T, "io.trialwatch.StoreUnavailable"),
                    Command("node1", "d", T, T, "io.trialwatch.StoreUnavailable")]
        subjects = {"a", "c"}
        self.assertEqual([c.subject for c in fa.missing_starts(commands, subjects)], ["b"])
        self.assertEqual([c.subject for c in fa.unacknowledged_kept(commands, subjects)], ["c"])

    def test_losing_switch_is_the_next_stop(self):
        first, second = switch(T + 10), switch(T + 20, "immediate", False)
        self.assertIs(fa.losing_switch(T + 5, [second, first]), first)
        self.assertIs(fa.losing_switch(T + 15, [first, second]), second)
        self.assertIsNone(fa.losing_switch(T + 25, [first, second]))
        self.assertEqual(fa.name(second), "async_immediate")


class LedgerTests(unittest.TestCase):
    def test_lost_records_and_fired_twice(self):
        old = [Record("e1", "node1", 1, "t1", True), Record("e2", "node2", 1, "t2", True),
               Record("e3", "node2", 1, "t3", False)]
        # e2 taken again under a new epoch, e3 not at all yet; e1 kept as it was
        new = [Record("e1", "node1", 1, "t1", True), Record("e2", "node3", 2, "t9", True)]
        lost = fa.lost_records(old, new)
        self.assertEqual([r.event_id for r in lost], ["e2", "e3"])
        twice = fa.fired_twice(lost, {"e1": 1, "e2": 2, "e3": 1})
        self.assertEqual([r.event_id for r in twice], ["e2"])


class RecoveryTests(unittest.TestCase):
    def test_catch_up_first_and_count(self):
        s = switch(T + 10)  # promotion requested at T + 11.1
        rows = [
            row("before", T + 9, T + 9.001),  # taken before the stop: not counted
            row("during", T + 10.5, T + 11.6),  # due in the outage, caught up 0.5 s after
            row("late", T + 11.0, T + 12.3),  # the last caught up: 1.2 s after
            row("after", T + 11.5, T + 11.5),  # due after the request
            row("skipped", T + 10.6, T + 13.0, outcome="skipped:already-due-at-start"),
        ]
        catch_up, first, count = fa.recovery(s, rows)
        self.assertAlmostEqual(catch_up, 1.2, places=6)
        self.assertAlmostEqual(first, 0.4, places=6)
        self.assertEqual(count, 2)

    def test_nothing_due_in_the_outage(self):
        self.assertEqual(fa.recovery(switch(T + 10), [row("x", T + 1, T + 1)]), (None, None, 0))

    def test_followed_needs_every_node(self):
        self.assertAlmostEqual(fa.followed(switch(T + 10)), 0.4, places=6)
        self.assertIsNone(fa.followed(switch(T + 10, followed={"node1": T + 11.2, "node2": None})))


if __name__ == "__main__":
    unittest.main()
