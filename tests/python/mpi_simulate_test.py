#!/usr/bin/python3
"""tb.simulate on MPI ranks (issue #30): bench/python/simulate_ranks.py (PyTorch trainers on
Fashion-MNIST, every rank calling tb.simulate the same way) run in one process and under a real
mpirun with 2 and 3 processes (oversubscribed; as root where CI runs). Rank 0 prints the result,
the other ranks return None and print nothing; the model hash is the one-process hash."""
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

try:
    import torch  # noqa: F401
except ImportError:  # pragma: no cover
    torch = None

MPIRUN = os.environ.get("TRIBUTARY_MPIRUN")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
APP = os.path.join(ROOT, "bench", "python", "simulate_ranks.py")
SMALL = ["--rounds", "3", "--clients", "8", "--per-round", "4", "--examples", "2400"]


@unittest.skipUnless(MPIRUN and torch, "needs mpirun (through ctest) and python3-torch")
class MpiSimulateTest(unittest.TestCase):
    def run_app(self, ranks):
        with tempfile.TemporaryDirectory() as d:
            env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                       XDG_STATE_HOME=d)
            cmd = [sys.executable, APP] + SMALL + ["--report-dir", os.path.join(d, "report")]
            if ranks:
                cmd = [MPIRUN, "--oversubscribe", "-np", str(ranks)] + cmd
            t0 = time.time()
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
            print(f"  {ranks or 'no mpirun'}: rc {p.returncode} in {time.time() - t0:.1f} s",
                  file=sys.stderr)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
            self.assertEqual(len(lines), 1, p.stdout + p.stderr)  # rank 0 only
            return json.loads(lines[0])

    def test_the_hash_is_the_one_process_hash_on_any_ranks(self):
        one = self.run_app(0)
        self.assertEqual(one["rounds"], 3)
        self.assertGreater(one["test_accuracy"], 0.3)
        for ranks in (2, 3):
            got = self.run_app(ranks)
            self.assertEqual(got["model_hash"], one["model_hash"], f"{ranks} ranks")
            self.assertEqual(got["test_accuracy"], one["test_accuracy"])
        print(f"  hash {one['model_hash']}", file=sys.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
