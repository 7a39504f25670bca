#!/usr/bin/python3
"""tributary-sim stopped by SIGINT or SIGTERM (a real process): it stops once the round in progress
is over instead of dying mid-round, says after which round, exits 2, and finishes the run as
stopped: the event log ends with run_finished, the report directory is released, and the
checkpoints of the rounds it did are there for --resume, which goes on from them to the end."""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest

SIM = os.environ.get("TRIBUTARY_SIM_BIN")


def sim_args(report, checkpoints, rounds):
    keys = {"sim.report_dir": report, "output.checkpoint_dir": checkpoints,
            "run.rounds": rounds, "data.num_clients": 4, "run.clients_per_round": 2,
            "data.dataset": "synthetic", "data.train_examples": 2000,
            "data.test_examples": 200, "run.model": "mlp", "output.history": "none",
            "sim.threads": 1}
    args = [SIM]
    for k, v in keys.items():
        args += ["--set", f"{k}={v}"]
    return args


class SimStopTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.report = os.path.join(self.tmp.name, "report")
        self.checkpoints = os.path.join(self.tmp.name, "ck")

    def tearDown(self):
        self.tmp.cleanup()

    def run_until_round(self, sig, rounds=100000, at_round=3):
        proc = subprocess.Popen(sim_args(self.report, self.checkpoints, rounds),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            m = re.match(r"round\s+(\d+)/", line)
            if m and int(m.group(1)) >= at_round:
                proc.send_signal(sig)
                break
        out, err = proc.communicate(timeout=120)
        lines.append(out)
        print("".join(lines)[-2000:], err[-2000:], sep="\n", file=sys.stderr)
        return proc.returncode, "".join(lines), err

    def finished_event(self):
        with open(os.path.join(self.report, "events.jsonl")) as f:
            events = [json.loads(line) for line in f if line.strip()]
        finished = [e for e in events if e.get("event") == "run_finished"]
        self.assertEqual(len(finished), 1, events[-3:])
        return finished[0]

    @unittest.skipUnless(SIM, "run through ctest, which names tributary-sim")
    def test_sigint_stops_after_the_round_in_progress_and_the_run_resumes(self):
        code, out, err = self.run_until_round(signal.SIGINT)
        self.assertEqual(code, 2, err)
        self.assertIn("simulator: stopped on request after ", err)
        done = int(err.split("stopped on request after ")[1].split(" ")[0])
        self.assertGreaterEqual(done, 3)
        self.assertLess(done, 100000)
        self.assertIn(f"of 100000 rounds", err)
        finished = self.finished_event()
        self.assertTrue(finished["ok"], finished)
        self.assertEqual(finished["rounds_done"], done)
        # The report directory is free again, and the checkpoints go on to round done + 2.
        resumed = subprocess.run(sim_args(self.report, self.checkpoints, done + 2) +
                                 ["--resume"],
                                 capture_output=True, text=True, timeout=120)
        print(resumed.stdout[-1500:], resumed.stderr[-1500:], sep="\n", file=sys.stderr)
        self.assertEqual(resumed.returncode, 0, resumed.stderr)
        rounds = [int(m.group(1)) for m in re.finditer(r"^round\s+(\d+)/", resumed.stdout, re.M)]
        self.assertEqual(rounds, [done + 1, done + 2])  # the rounds done before are not re-run

    @unittest.skipUnless(SIM, "run through ctest, which names tributary-sim")
    def test_sigterm_stops_it_too(self):
        code, out, err = self.run_until_round(signal.SIGTERM, at_round=1)
        self.assertEqual(code, 2, err)
        self.assertIn("simulator: stopped on request after ", err)
        self.assertTrue(self.finished_event()["ok"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
