# The pure parts of the fleet figures (fleet_figures.py): the figure lines, the percentiles it takes
# from Tests/fleet/analysis.py, the duplicate count and the output check of bench-fleet-check.
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fleet_figures  # noqa: E402


class FigureLines(unittest.TestCase):
    def test_formatting(self):
        self.assertEqual(fleet_figures.figure_line("fleet_lateness_p99", 1.4, "ms"), "fleet_lateness_p99: 1.40 ms")
        self.assertEqual(fleet_figures.figure_line("fleet_fires_per_s", 20512.345, "events/s"),
                         "fleet_fires_per_s: 20512.3 events/s")
        self.assertEqual(fleet_figures.figure_line("fleet_duplicates_under_faults", 0, "events"),
                         "fleet_duplicates_under_faults: 0 events")
        self.assertEqual(fleet_figures.figure_line("x", -1.0, "ms"), "x: -1.00 ms")

    def test_parse_round_trip(self):
        for name, unit in fleet_figures.figure_names():
            line = fleet_figures.figure_line(name, 12.5, unit)
            self.assertEqual(fleet_figures.parse_figure(line), (name, 12.5, unit))
        self.assertIsNone(fleet_figures.parse_figure("fleet: 2000 trials started"))
        self.assertIsNone(fleet_figures.parse_figure("fleet_lateness_p99: fast ms"))

    def test_names(self):
        names = [name for name, _ in fleet_figures.figure_names()]
        self.assertEqual(len(names), len(set(names)))
        for name in ("fleet_fires_per_s", "fleet_failover_stop", "fleet_redeliveries_under_faults",
                     "poller1s_failover_kill", "poller10s_db_statements_idle_per_s"):
            self.assertIn(name, names)
        self.assertIn("fleet_db_transactions_loaded_per_s",
                      [name for name, _ in fleet_figures.figure_names("transactions")])


class Check(unittest.TestCase):
    def output(self, kind="statements"):
        return [fleet_figures.figure_line(name, 1.0, unit) + "\n" for name, unit in fleet_figures.figure_names(kind)]

    def test_complete(self):
        self.assertEqual(fleet_figures.check_output(self.output()), [])
        self.assertEqual(fleet_figures.check_output(self.output("transactions")), [])

    def test_missing_stray_twice_and_unit(self):
        lines = self.output()
        self.assertEqual(fleet_figures.check_output(lines[1:]), ["fleet_fires_per_s missing"])
        self.assertEqual(fleet_figures.check_output(lines + ["progress\n"]), ["not a figure line: 'progress'"])
        self.assertEqual(fleet_figures.check_output(lines + lines[:1]), ["fleet_fires_per_s twice"])
        wrong = ["fleet_fires_per_s: 1.00 ms\n"] + lines[1:]
        self.assertEqual(fleet_figures.check_output(wrong), ["fleet_fires_per_s in ms, not events/s"])


class Measures(unittest.TestCase):
    def test_lateness_uses_nearest_rank(self):
        pairs = [(100.0, 100.0 + index / 1000) for index in range(1, 101)]  # 1 .. 100 ms late
        p50, p99 = fleet_figures.lateness_ms(pairs)
        self.assertAlmostEqual(p50, 50.0, places=6)
        self.assertAlmostEqual(p99, 99.0, places=6)
        self.assertAlmostEqual(p99 / 1000, fleet_figures.analysis.percentile([t - d for d, t in pairs], 0.99))

    def test_duplicates(self):
        self.assertEqual(fleet_figures.duplicates([]), 0)
        self.assertEqual(fleet_figures.duplicates(["a", "b", "c"]), 0)
        self.assertEqual(fleet_figures.duplicates(["a", "b", "a", "a", "c", "c"]), 2)
        self.assertEqual(fleet_figures.duplicates(iter(["x", "x"])), 1)

    def test_first_taken(self):
        self.assertEqual(fleet_figures.first_taken([("a", 3.0, 0.0), ("b", 1.0, 0.0), ("a", 2.0, 0.0)]),
                         {"a": 2.0, "b": 1.0})

    def test_fires_per_s(self):
        self.assertAlmostEqual(fleet_figures.fires_per_s(20_000, 100.0, 102.0), 10_000.0)
        self.assertGreater(fleet_figures.fires_per_s(10, 100.0, 100.0), 0)


if __name__ == "__main__":
    unittest.main()
