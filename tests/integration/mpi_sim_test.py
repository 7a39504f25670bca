#!/usr/bin/python3
"""tributary-sim under a real mpirun (issue #30): Open MPI's launcher starts 1, 2 or 3 processes on
localhost (oversubscribed; as root where CI runs), rank 0 runs the run and the others train its
clients. For each mode that distributes, the final model's hash (printed, and in report.json) is
the one of the same run without mpirun, for any number of ranks and threads per rank; the report
says it ran on MPI ranks. A rank with other data is refused before the first round, secure
aggregation distributes too (the key phases and masking on rank 0), and a rank that cannot start,
or is killed mid-run, ends the whole job (no rank waits for ever); the killed run then resumes
from its checkpoint under another number of ranks, to the model of one unbroken process.

The short mode (CI) runs FedAvg on 1, 2 and 3 ranks and 2 ranks x 2 threads, and the modes whose
messages differ from FedAvg's (client state under error feedback, secure aggregation's phases,
split learning's activations, asynchronous jobs) on 3 ranks; TRIBUTARY_LONG=1 runs every mode on
2 and 3 ranks. tests/sim/rank_sim_test.cc runs every mode on in-process ranks in both.

Real data: Fashion-MNIST (Debian's dataset-fashion-mnist), the mlp model.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

SIM = os.environ.get("TRIBUTARY_SIM_BIN")
MPIRUN = os.environ.get("TRIBUTARY_MPIRUN")
LONG = bool(os.environ.get("TRIBUTARY_LONG"))

# 12 clients, 6 per round, 4 rounds of one local epoch on 12,000 Fashion-MNIST images: every
# client trains twice on average, so error feedback's state travels between ranks.
BASE = ["--rounds", "4", "--set", "run.model=mlp", "--set", "run.clients_per_round=6",
        "--set", "data.num_clients=12", "--set", "data.dataset=fashion-mnist",
        "--set", "data.train_examples=12000", "--set", "data.test_examples=2000",
        "--set", "data.partition=dirichlet:0.5", "--set", "fit.epochs=1",
        "--set", "fit.batch_size=32", "--set", "fit.lr=0.05", "--set", "eval.every=2",
        "--set", "hetero.speed_tiers=phone:0.5:2000,laptop:0.5:8000"]

MODES = {
    "fedavg": [],
    "fedadam": ["run.strategy=fedadam"],
    "topk+q8 with error feedback": ["run.codec=topk(0.1)+q8"],
    "dp (server)": ["dp.enabled=true", "dp.noise_seed=3"],
    "sign-flip attack": ["attack.kind=sign_flip", "attack.fraction=0.3"],
    "dropouts and over-selection": ["hetero.dropout=0.2", "hetero.availability=0.8",
                                    "run.over_selection=1.4"],
    "secure aggregation": ["secagg.enabled=true"],
    "labels:2 with feature noise": ["data.partition=labels:2+noise:0.2"],
    "split learning (sflv1)": ["split.mode=sflv1"],
    "U-shaped split learning": ["split.mode=sflv1", "split.head=4"],
    "asynchronous": ["run.mode=async", "run.concurrency=4", "run.buffer_size=3",
                     "run.max_staleness=6"],
}
# The short mode's modes besides FedAvg: each sends the ranks a kind of message the others do not.
SHORT_MODES = {"topk+q8 with error feedback", "secure aggregation", "split learning (sflv1)",
               "asynchronous"}


def layouts_of(name):
    """(ranks, threads per rank) to run a mode on, besides the run without mpirun."""
    if name == "fedavg":
        return [(1, 1), (2, 1), (3, 1), (2, 2)]
    return [(2, 1), (3, 1)] if LONG else [(3, 1)]


def sets(pairs):
    out = []
    for p in pairs:
        out += ["--set", p]
    return out


@unittest.skipUnless(SIM and MPIRUN, "run through ctest, which names tributary-sim and mpirun")
class MpiSimTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="trib_mpi_sim_")
        self.env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                        OMPI_MCA_rmaps_base_oversubscribe="1",
                        XDG_STATE_HOME=os.path.join(self.dir, "state"))
        self.runs = 0

    def tearDown(self):
        ok = all(e is None for _, e in (self._outcome.result.errors +
                                         self._outcome.result.failures)) \
            if hasattr(self._outcome, "result") else True
        if ok and not os.environ.get("TRIBUTARY_TEST_KEEP"):
            shutil.rmtree(self.dir, ignore_errors=True)
        else:
            print(f"kept {self.dir}", file=sys.stderr)

    def sim(self, ranks, extra, threads=1, timeout=240, mpmd=None, extra_args=()):
        """Runs tributary-sim (without mpirun when ranks is 0); returns (rc, output, report)."""
        self.runs += 1
        report = os.path.join(self.dir, f"run{self.runs}")
        args = [SIM] + BASE + sets(extra) + sets([f"sim.threads={threads}",
                                                  f"sim.report_dir={report}"]) + list(extra_args)
        if ranks:
            cmd = [MPIRUN, "--oversubscribe", "-np", str(ranks)] + args
            if mpmd:
                cmd += [":", "-np", "1"] + args + sets(mpmd)
        else:
            cmd = args
        t0 = time.time()
        p = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=timeout)
        out = p.stdout + p.stderr
        rep = None
        if os.path.exists(os.path.join(report, "report.json")):
            with open(os.path.join(report, "report.json")) as f:
                rep = json.load(f)
        print(f"  {ranks or 'no mpirun'} ranks x {threads} threads: rc {p.returncode} in "
              f"{time.time() - t0:.1f} s", file=sys.stderr)
        return p.returncode, out, rep

    def hash_of(self, rc, out, rep):
        self.assertEqual(rc, 0, out)
        m = re.search(r"final model hash ([0-9a-f]{16})", out)
        self.assertIsNotNone(m, out)
        self.assertEqual(rep["totals"]["model_hash"], m.group(1))
        return m.group(1)

    def test_every_mode_gives_the_one_process_hash_on_any_ranks(self):
        for name, extra in MODES.items():
            if not LONG and name != "fedavg" and name not in SHORT_MODES:
                continue
            print(f"{name}:", file=sys.stderr)
            rc, out, rep = self.sim(0, extra)
            one = self.hash_of(rc, out, rep)
            self.assertEqual(rep["totals"]["mode"], "in-process")
            self.assertEqual(rep["totals"]["rounds"], 4)
            if "labels:2" in name:  # the report keeps the split: two classes a client, the noise
                part = rep["partition"]
                self.assertEqual((part["min_classes"], part["max_classes"]), (2, 2), part)
                self.assertAlmostEqual(part["noise_levels"][11], 0.2)
                self.assertEqual(part["noise_levels"][0], 0.0)
            for ranks, threads in layouts_of(name):
                rc, out, rep = self.sim(ranks, extra, threads)
                self.assertEqual(self.hash_of(rc, out, rep), one,
                                 f"{name}: {ranks} ranks x {threads} threads\n{out}")
                self.assertEqual(rep["totals"]["rounds"], 4)
                if ranks > 1:
                    self.assertEqual(rep["totals"]["mode"], "mpi")
                    self.assertEqual(rep["totals"]["ranks"], ranks)
                    self.assertIn(f"distributed simulation: {ranks} ranks, {threads} threads each",
                                  out)
                    # Only rank 0 prints the run: one line per round, one end line.
                    self.assertEqual(len(re.findall(r"^(?:round|step) +4/4", out, re.M)), 1, out)
                    self.assertEqual(out.count("final model hash"), 1, out)
            print(f"  hash {one}", file=sys.stderr)

    def test_a_rank_with_other_data_is_refused_before_the_first_round(self):
        rc, out, rep = self.sim(1, [], mpmd=["data.seed=99"])
        self.assertNotEqual(rc, 0, out)
        self.assertIn("rank 1 loaded other data or another config than rank 0", out)
        self.assertNotIn("round   1/4", out)

    def test_a_rank_that_cannot_start_ends_the_job(self):
        t0 = time.time()
        rc, out, rep = self.sim(1, [], mpmd=["data.partition=nonsense"], timeout=120)
        self.assertNotEqual(rc, 0, out)
        self.assertIn("tributary-sim (rank 1):", out)
        self.assertIn("nonsense", out)
        self.assertLess(time.time() - t0, 60)

    def test_rank_0_refusing_to_start_ends_the_job(self):
        # Rank 0 refuses (a --resume with no checkpoint): the other ranks wait for its work, and the
        # job hung until mpirun was killed. Now rank 0 ends the whole job.
        t0 = time.time()
        empty = os.path.join(self.dir, "no-checkpoints")
        rc, out, rep = self.sim(2, [f"output.checkpoint_dir={empty}"], timeout=120,
                                extra_args=["--resume"])
        self.assertNotEqual(rc, 0, out)
        self.assertIn("no checkpoint", out)
        self.assertIn("tributary-sim (rank 0 of 2): ending the whole job (exit 2)", out)
        self.assertLess(time.time() - t0, 60)

    def test_deploy_under_mpirun_is_refused_naming_why(self):
        # --deploy starts its own coordinator and client processes: under mpirun every rank would
        # start a deployment of its own. Each rank refuses, and the job ends with exit 2.
        t0 = time.time()
        rc, out, rep = self.sim(2, [], timeout=120, extra_args=["--deploy"])
        self.assertEqual(rc, 2, out)
        self.assertIn("--deploy starts its own processes; not under mpirun", out)
        self.assertIn("ending the whole job (exit 2)", out)
        self.assertLess(time.time() - t0, 60)

    def test_a_rank_whose_config_does_not_parse_ends_the_job(self):
        # Rank 1's --set names no key: it used to exit alone and rank 0 waited for it for ever.
        t0 = time.time()
        rc, out, rep = self.sim(1, [], mpmd=["run.bogus=1"], timeout=120)
        self.assertNotEqual(rc, 0, out)
        self.assertIn("unknown key 'run.bogus'", out)
        self.assertIn("tributary-sim (rank 1 of 2): ending the whole job (exit 2)", out)
        self.assertLess(time.time() - t0, 60)

    def test_a_rank_killed_mid_run_ends_the_job_and_the_run_resumes_on_other_ranks(self):
        report = os.path.join(self.dir, "killed")
        ckpt = os.path.join(self.dir, "checkpoints")
        log = open(os.path.join(self.dir, "killed.log"), "w")
        resumable = ["run.codec=topk(0.1)+q8", "hetero.dropout=0.2", "run.over_selection=1.4",
                     f"output.checkpoint_dir={ckpt}"]
        args = [SIM] + BASE + sets([f"sim.report_dir={report}", "sim.threads=1"] + resumable) + [
            "--rounds", "12"]
        p = subprocess.Popen([MPIRUN, "--oversubscribe", "-np", "2"] + args, env=self.env,
                             stdout=log, stderr=subprocess.STDOUT)
        try:
            victim, t0 = None, time.time()
            while victim is None and time.time() - t0 < 60 and p.poll() is None:
                time.sleep(0.1)
                with open(log.name) as f:
                    if "round   3/12" not in f.read():
                        continue
                for pid in filter(str.isdigit, os.listdir("/proc")):
                    try:
                        with open(f"/proc/{pid}/environ", "rb") as f:
                            env = f.read().split(b"\0")
                        with open(f"/proc/{pid}/cmdline", "rb") as f:
                            cmd = f.read()
                    except OSError:
                        continue
                    if b"OMPI_COMM_WORLD_RANK=1" in env and report.encode() in cmd:
                        victim = int(pid)
            self.assertIsNotNone(victim, "rank 1 was not found running")
            os.kill(victim, 9)
            killed = time.time()
            rc = p.wait(timeout=60)
            took = time.time() - killed
        finally:
            if p.poll() is None:
                p.kill()
            log.close()
        with open(log.name) as f:
            out = f.read()
        print(f"  rank 1 killed after round 3: mpirun ended {took:.2f} s later with rc {rc}",
              file=sys.stderr)
        self.assertNotEqual(rc, 0, out)
        self.assertLess(took, 30)
        self.assertNotIn("final model hash", out)

        # --resume under 3 ranks goes on from the newest checkpoint to the model of one unbroken
        # process, and its report covers all 12 rounds.
        rc, out, rep = self.sim(3, resumable, extra_args=["--resume", "--rounds", "12"])
        resumed = self.hash_of(rc, out, rep)
        m = re.search(r"resume: the simulation goes on from round (\d+)", out)
        self.assertIsNotNone(m, out)
        self.assertGreaterEqual(int(m.group(1)), 3)
        self.assertLess(int(m.group(1)), 12)
        self.assertEqual(rep["totals"]["rounds"], 12)
        self.assertEqual(len(rep["rounds"]), 12)
        rc, out, rep = self.sim(0, resumable[:-1], extra_args=["--rounds", "12"])
        self.assertEqual(self.hash_of(rc, out, rep), resumed, out)
        print(f"  resumed from round {m.group(1)} on 3 ranks: hash {resumed}, as one process",
              file=sys.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
