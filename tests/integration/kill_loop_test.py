#!/usr/bin/python3
"""A coordinator killed (SIGKILL) at random points again and again, restarted each time with
--resume-or-start, ends with exactly the model of a run that was never interrupted.

Three tributary-client processes serve every round (clients_per_round = min_available = 3, so the
selection never depends on who reconnected first) and keep redialling the coordinator's fixed
port. The reference run and the killed run use the same config; their final model files must be
byte for byte the same. The short mode (CI) runs 12 rounds; TRIBUTARY_LONG=1 runs 60 rounds and
prints the number of kills (docs/results.md, reliability).

Bounded, so it cannot hang CI: each start of the killed run lives a random time drawn from
[0.3 s, max(1.5 s, 1 s + 1.5 x the reference run's time per round)], cut short once it has closed
a round: then it is killed at a random moment of its next round. Kills land before, during and
after rounds, and every start makes at most about two rounds of progress, so the run is killed at
least a few times however much faster it runs than the reference did. After MAX_STARTS starts (or
KILL_BUDGET_S seconds of killing) the last start runs to the end without a kill.
"""
import hashlib
import os
import random
import re
import shutil
import signal
import sys
import time
import unittest

from process_harness import CERTS, COORDINATOR, ProcessTest, free_port

CLIENT = os.environ.get("TRIBUTARY_CLIENT_BIN")
LONG = bool(os.environ.get("TRIBUTARY_LONG"))
ROUNDS = 60 if LONG else 12
CLIENTS = 3
MAX_STARTS = int(os.environ.get("KILL_LOOP_MAX_STARTS", 120 if LONG else 30))
KILL_BUDGET_S = float(os.environ.get("KILL_LOOP_BUDGET_S", 300 if LONG else 150))
MODEL = """name = "mlp2"
layers = [
  { type = "flatten" },
  { type = "dense", units = 200 },
  { type = "relu" },
  { type = "dense", units = 10 },
]
"""
DATA = ["data.dataset=synthetic", "data.synthetic.height=28", "data.synthetic.width=28",
        "data.train_examples=12000", "data.test_examples=300"]


@unittest.skipUnless(all([CERTS, COORDINATOR, CLIENT]), "run through ctest, which names the binaries")
class KillLoopTest(ProcessTest):
    prefix = "trib_killloop_"

    def config(self, out):
        model = self.path("mlp2.toml")
        with open(model, "w") as f:
            f.write(MODEL)
        return f"""log_level = "info"
[run]
model = "{model}"
rounds = {ROUNDS}
clients_per_round = {CLIENTS}
min_available = {CLIENTS}
round_timeout_s = 60
seed = 11
[fit]
epochs = 3
lr = 0.05
[eval]
every = 0
[data]
dataset = "synthetic"
synthetic.height = 28
synthetic.width = 28
test_examples = 300
[output]
checkpoint_dir = "{self.path(out)}"
final_model = "{self.path(out, 'final.safetensors')}"
"""

    def coordinator(self, name, out, port, resume):
        with open(self.path(name + ".toml"), "w") as f:
            f.write(self.config(out))
        args = [COORDINATOR, "--config", self.path(name + ".toml"), "--set",
                f"net.listen=127.0.0.1:{port}", "--set", "net.heartbeat_interval_s=1"]
        for key, value in (("tls.ca", "ca.crt"), ("tls.cert", "server.crt"),
                           ("tls.key", "server.key")):
            args += ["--set", f"{key}={self.pki}/{value}"]
        if resume:
            args.append("--resume-or-start")
        return self.start(name, args)

    def clients(self, tag, port):
        procs = []
        for i in range(CLIENTS):
            ca, cert, key = self.client_tls(f"edge-{i}")
            procs.append(self.start(f"{tag}-edge-{i}", [
                CLIENT, "--coordinator", f"127.0.0.1:{port}", "--ca", ca, "--cert", cert, "--key",
                key, "--set", f"run.model={self.path('mlp2.toml')}", "--num-clients", str(CLIENTS),
                "--client-index", str(i), "--log-level", "warn",
                *[a for kv in DATA for a in ("--set", kv)], "--set", "backoff.initial_s=0.1", "--set", "backoff.max_s=0.5",
                "--set", "net.connect_timeout_s=2"]))
        return procs

    def live_until_kill(self, name, coord, rng, low, high, round_s):
        """Waits for the moment to kill start `name`: a random time in [low, high], or, should it
        close a round first, a random moment within the next round. True when it still runs."""
        deadline = time.monotonic() + rng.uniform(low, high)
        while time.monotonic() < deadline and coord.poll() is None:
            if re.search(r"^round +\d+/\d+", self.log(name), re.M):
                time.sleep(rng.uniform(0.0, round_s))
                break
            time.sleep(0.02)
        return coord.poll() is None

    def final_hash(self, out):
        with open(self.path(out, "final.safetensors"), "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()

    def test_random_kills_resume_bit_exactly(self):
        port = free_port()
        t0 = time.monotonic()
        coord = self.coordinator("reference", "reference", port, resume=False)
        clients = self.clients("reference", port)
        self.assertEqual(coord.wait(timeout=600), 0, self.log("reference"))
        reference_s = time.monotonic() - t0
        for c in clients:
            c.wait(timeout=60)
        reference = self.final_hash("reference")

        # The time per round of this machine, start-up and joining included: a start that lives
        # up to one and a half of them (plus a second for the clients to redial) often gets a
        # round done, and often dies before one. (Three of them let a run finish between two kills
        # once under `ctest -j2`: the reference ran while every long test started, at 0.8 s per
        # round, and the killed run after, at about a third of that.)
        round_s = reference_s / ROUNDS
        low, high = 0.3, max(1.5, 1.0 + 1.5 * round_s)
        rng = random.Random(int(os.environ.get("KILL_LOOP_SEED", "5")))
        port = free_port()
        clients = self.clients("killed", port)
        kills, starts = 0, 0
        t1 = time.monotonic()
        while True:
            starts += 1
            coord = self.coordinator(f"killed-{starts}", "killed", port, resume=True)
            last = starts >= MAX_STARTS or time.monotonic() - t1 > KILL_BUDGET_S
            # The last start is not killed: it must finish the run (and a hang fails here).
            if not last and self.live_until_kill(f"killed-{starts}", coord, rng, low, high,
                                                 round_s):
                coord.send_signal(signal.SIGKILL)
                coord.wait()
                kills += 1
                continue
            coord.wait(timeout=600)
            self.assertEqual(coord.returncode, 0, self.log(f"killed-{starts}"))
            break
        killed_s = time.monotonic() - t1
        for c in clients:
            c.terminate()
        print(f"kill loop: {ROUNDS} rounds, {kills} SIGKILLs, {starts} starts (cap {MAX_STARTS}), "
              f"kills after {low:.1f}-{high:.1f} s; reference run {reference_s:.1f} s "
              f"({round_s:.2f} s per round), killed run {killed_s:.1f} s; final model "
              f"{'identical' if self.final_hash('killed') == reference else 'DIFFERENT'}",
              file=sys.stderr)
        self.assertGreaterEqual(kills, 2, "the run ended before it could be killed")
        self.assertEqual(self.final_hash("killed"), reference)

if __name__ == "__main__":
    unittest.main(verbosity=2)
