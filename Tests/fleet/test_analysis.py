# The fleet fault test's analysis on synthetic data: python3 -m unittest discover -s Tests/fleet
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import analysis  # noqa: E402
from analysis import Change, Expected, Fault, Row  # noqa: E402

T = 1_800_000_000.0  # a fixed time, seconds since the epoch


def row(event_id, shard, due, taken, outcome="fired", node="node1", epoch=1, kind="expiry"):
    return Row(event_id, 1, shard, kind, outcome, due, taken, taken - due > 1, node, epoch, taken + 0.001)


class ParseTests(unittest.TestCase):
    ID = "00a1b2c3d4e5f607-r1-expiry"

    def test_expiry_line(self):
        line = (f"notice   trialwatchd.events: Trial fleet-3 (id 00a1b2c3d4e5f607) expired at "
                f"2026-11-25 16:00:00.123 UTC event={self.ID} kind=expiry late=false\n")
        event_id, metadata = analysis.parse_event_line(line)
        self.assertEqual(event_id, self.ID)
        self.assertEqual(metadata["kind"], "expiry")
        self.assertEqual(metadata["late"], "false")
        self.assertEqual(metadata["label"], "trialwatchd.events")

    def test_reminder_line_with_more_metadata(self):
        event = "00a1b2c3d4e5f607-r2-reminder-10000ms"
        line = (f"notice   trialwatchd.events: Trial fleet-3 (id 00a1b2c3d4e5f607) ends in 10s epoch=4 "
                f"event={event} kind=reminder late=true node=node2 shard=17")
        event_id, metadata = analysis.parse_event_line(line)
        self.assertEqual(event_id, event)
        self.assertEqual(metadata["node"], "node2")
        self.assertEqual(metadata["shard"], "17")

    def test_quoted_value_and_event_text_in_message(self):
        # a subject that looks like metadata: the last event= pair counts
        line = ('notice   trialwatchd.events: Trial event=ffffffffffffffff-r1-expiry (id 00a1b2c3d4e5f607) '
                f'expired event={self.ID} kind=expiry late=false note="a b"')
        event_id, metadata = analysis.parse_event_line(line)
        self.assertEqual(event_id, self.ID)
        self.assertEqual(metadata["note"], "a b")

    def test_other_lines(self):
        for line in [
            "",
            "warning  trialwatchd: socket taken over path=/tmp/x",
            f"info     trialwatchd.events: something event={self.ID} kind=expiry",  # not a notice
            "notice   trialwatchd.events: Wall clock stepped forward by 2s",
            "notice   trialwatchd: started event=not-an-id",
            "garbage without a label",
        ]:
            self.assertIsNone(analysis.parse_event_line(line), line)

    def test_deliveries_keep_repeats(self):
        line = f"notice   trialwatchd.events: x event={self.ID} kind=expiry late=false\n"
        lines = [line, "notice   trialwatchd: ready\n", line]
        self.assertEqual(analysis.deliveries(lines), [self.ID, self.ID])


class PercentileTests(unittest.TestCase):
    def test_nearest_rank(self):
        values = list(range(1, 101))
        self.assertEqual(analysis.percentile(values, 0.5), 50)
        self.assertEqual(analysis.percentile(values, 0.99), 99)
        self.assertEqual(analysis.percentile(values, 1.0), 100)
        self.assertEqual(analysis.percentile(reversed(values), 0.01), 1)

    def test_small_and_unsorted(self):
        self.assertEqual(analysis.percentile([5.0], 0.99), 5.0)
        self.assertEqual(analysis.percentile([3, 1, 2], 0.5), 2)
        self.assertEqual(analysis.percentile([3, 1, 2], 0.99), 3)
        self.assertEqual(analysis.percentile([0.1] * 1000 + [9.0] * 10, 0.99), 0.1)
        self.assertEqual(analysis.percentile([0.1] * 980 + [9.0] * 20, 0.99), 9.0)

    def test_empty(self):
        with self.assertRaises(ValueError):
            analysis.percentile([], 0.5)


class ExclusionTests(unittest.TestCase):
    def setUp(self):
        self.faults = [
            Fault("kill", "node3", T + 10, T + 13, frozenset({1, 2})),
            Fault("stop", "node2", T + 30, T + 35, frozenset({5})),
            Fault("pg", None, T + 60, T + 62, frozenset()),
        ]
        self.windows = analysis.exclusion_windows(self.faults)
        self.changes = analysis.owner_changes_by_shard([Change(7, 3, "node1", T + 40, "failover"),
                                                       Change(7, 2, "node3", T + 5, "start")])

    def excluded(self, due, shard):
        return analysis.excluded(due, shard, self.windows, self.changes)

    def test_kill_window_only_on_the_victims_shards(self):
        self.assertFalse(self.excluded(T + 9.7, 1))
        self.assertTrue(self.excluded(T + 9.85, 1))  # 0.2 s before
        self.assertTrue(self.excluded(T + 15.9, 2))  # until the restart + 3 s
        self.assertFalse(self.excluded(T + 16.1, 2))
        self.assertFalse(self.excluded(T + 11, 3))  # another node's shard

    def test_stop_window(self):
        self.assertTrue(self.excluded(T + 37.9, 5))
        self.assertFalse(self.excluded(T + 38.1, 5))
        self.assertFalse(self.excluded(T + 32, 6))

    def test_pg_restart_touches_every_shard(self):
        self.assertTrue(self.excluded(T + 59.9, 40))
        self.assertTrue(self.excluded(T + 64.9, 63))
        self.assertFalse(self.excluded(T + 65.1, 63))

    def test_owner_change(self):
        self.assertTrue(self.excluded(T + 40.5, 7))
        self.assertFalse(self.excluded(T + 41.5, 7))
        self.assertFalse(self.excluded(T + 39.9, 7))
        self.assertFalse(self.excluded(T + 40.5, 8))
        self.assertTrue(self.excluded(T + 5.2, 7))

    def test_fault_without_an_end_excludes_to_the_end(self):
        windows = analysis.exclusion_windows([Fault("kill", "node3", T, None, frozenset({1}))])
        self.assertTrue(analysis.excluded(T + 1000, 1, windows, {}))

    def test_untouched_lateness(self):
        rows = [
            row("a", 1, T + 11, T + 11.4),  # in the kill's window
            row("b", 3, T + 11, T + 11.002),
            row("c", 9, T + 61, T + 61.5),  # in the pg window
            row("d", 9, T + 70, T + 70.001),
            row("e", 9, T + 71, T + 71.0, outcome="skipped:already-due-at-start"),
            row("f", 7, T + 40.2, T + 40.3),  # just after an owner change
        ]
        lateness = analysis.untouched_lateness(rows, self.faults, [Change(7, 3, "node1", T + 40, "failover")])
        self.assertEqual(len(lateness), 2)
        self.assertAlmostEqual(sorted(lateness)[0], 0.001, places=5)
        self.assertAlmostEqual(sorted(lateness)[1], 0.002, places=5)


class FailoverTests(unittest.TestCase):
    def test_earliest_orphan(self):
        fault = Fault("kill", "node3", T + 12, T + 15, frozenset({1, 2}))
        rows = [
            row("before", 1, T + 11.9, T + 11.9),  # due before the kill: not orphaned
            row("other", 3, T + 12.1, T + 12.1),  # not the victim's shard
            row("second", 2, T + 12.5, T + 12.6),
            row("first", 1, T + 12.2, T + 12.55, node="node1"),
        ]
        first, seconds = analysis.failover(fault, rows)
        self.assertEqual(first.event_id, "first")
        self.assertAlmostEqual(seconds, 0.35, places=6)

    def test_no_orphans(self):
        fault = Fault("kill", "node3", T + 12, T + 15, frozenset({1}))
        self.assertIsNone(analysis.failover(fault, [row("x", 2, T + 13, T + 13)]))
        self.assertIsNone(analysis.failover(fault._replace(shards=frozenset()), [row("x", 1, T + 13, T + 13)]))


class StaleOwnerTests(unittest.TestCase):
    def setUp(self):
        # node2 owned shards 5 and 6 under epoch 2; during its stop [T+30, T+35] shard 5 went
        # to node1 (epoch 3); shard 6 stayed. After the stop, node2 took shard 5 back (epoch 4)
        # at T+37.
        self.history = [
            Change(5, 2, "node2", T, "start"),
            Change(6, 2, "node2", T, "start"),
            Change(5, 3, "node1", T + 31, "failover"),
            Change(5, 4, "node2", T + 37, "rebalance"),
        ]

    def stale(self, rows):
        return analysis.stale_rows(rows, self.history, "node2", T + 32.5, T + 38, T + 30, T + 35)

    def test_fired_under_a_lost_epoch(self):
        bad = row("bad", 5, T + 35.1, T + 35.2, node="node2", epoch=2)
        self.assertEqual(self.stale([bad]), [bad])

    def test_legitimate_rows(self):
        rows = [
            row("kept-shard", 6, T + 35.1, T + 35.2, node="node2", epoch=2),  # shard 6 never moved
            row("new-owner", 5, T + 35.1, T + 35.2, node="node1", epoch=3),
            row("before-window", 5, T + 30.1, T + 30.2, node="node2", epoch=2),
            row("after-window", 5, T + 38.5, T + 38.6, node="node2", epoch=4),
            row("reowned", 5, T + 37.1, T + 37.2, node="node2", epoch=4),  # took it back first
        ]
        self.assertEqual(self.stale(rows), [])

    def test_epoch_of_another_node(self):
        # the current epoch, but the history gives it to node1
        bad = row("bad", 5, T + 35.9, T + 35.95, node="node2", epoch=3)
        self.assertEqual(self.stale([bad]), [bad])


class ClassifyTests(unittest.TestCase):
    def test_lost_skipped_fired(self):
        expected = [Expected(name, "t", "expiry", T) for name in ("fired", "absent", "skip-ok", "skip-bad")]
        ledger = {
            "fired": row("fired", 1, T, T),
            "skip-ok": row("skip-ok", 1, T, T, outcome="skipped:already-due-at-start"),
            "skip-bad": row("skip-bad", 1, T, T, outcome="skipped:beyond-grace"),
        }
        lost, skipped, fired = analysis.classify(expected, ledger, {"already-due-at-start"})
        self.assertEqual(sorted(lost), ["absent", "skip-bad"])
        self.assertEqual(skipped, {"skip-ok": "already-due-at-start"})
        self.assertEqual(fired, ["fired"])

    def test_repeated(self):
        self.assertEqual(analysis.repeated(["a", "b", "a", "c", "a", "b"]), {"a": 3, "b": 2})
        self.assertEqual(analysis.repeated([]), {})


if __name__ == "__main__":
    unittest.main()
