#!/usr/bin/python3
"""A coordinator killed (SIGKILL) at random points again and again, restarted each time with
--resume-or-start, ends with exactly the model of a run that was never interrupted.

Three tributary-client processes serve every round (clients_per_round = min_available = 3, so the
selection never depends on who reconnected first) and keep redialling the coordinator's fixed
port. The reference run and the killed run use the same config; their final model files must be
byte for byte the same. The short mode (CI) runs 12 rounds; TRIBUTARY_LONG=1 runs 60 rounds and
prints the number of kills (docs/results.md, reliability).
"""
import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import unittest

from process_harness import CERTS, COORDINATOR, ProcessTest, free_port

CLIENT = os.environ.get("TRIBUTARY_CLIENT_BIN")
LONG = bool(os.environ.get("TRIBUTARY_LONG"))
ROUNDS = 60 if LONG else 12
CLIENTS = 3
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

    def final_hash(self, out):
        with open(self.path(out, "final.safetensors"), "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()

    def test_random_kills_resume_bit_exactly(self):
        port = free_port()
        coord = self.coordinator("reference", "reference", port, resume=False)
        clients = self.clients("reference", port)
        self.assertEqual(coord.wait(timeout=600), 0, self.log("reference"))
        for c in clients:
            c.wait(timeout=60)
        reference = self.final_hash("reference")

        rng = random.Random(int(os.environ.get("KILL_LOOP_SEED", "5")))
        port = free_port()
        clients = self.clients("killed", port)
        kills, starts = 0, 0
        while True:
            starts += 1
            coord = self.coordinator(f"killed-{starts}", "killed", port, resume=True)
            try:
                coord.wait(timeout=rng.uniform(0.3, 1.5))
            except subprocess.TimeoutExpired:
                coord.send_signal(signal.SIGKILL)
                coord.wait()
                kills += 1
                continue
            self.assertEqual(coord.returncode, 0, self.log(f"killed-{starts}"))
            break
        for c in clients:
            c.terminate()
        print(f"kill loop: {ROUNDS} rounds, {kills} SIGKILLs, {starts} starts; final model "
              f"{'identical' if self.final_hash('killed') == reference else 'DIFFERENT'}",
              file=sys.stderr)
        self.assertGreaterEqual(kills, 2, "the run ended before it could be killed")
        self.assertEqual(self.final_hash("killed"), reference)


if __name__ == "__main__":
    unittest.main(verbosity=2)
