#!/usr/bin/python3
"""An aarch64 client in an x86-64 run: the native tributary-coordinator and two native
tributary-client processes, and one tributary-client cross-built for aarch64 running under
qemu-user, all over mutual TLS on loopback. Every round must close with all three updates, the
aarch64 client's among them (its update folds into the same FedAvg), and the run must end well.

scripts/test-aarch64 runs it with TRIBUTARY_CERTS_BIN, TRIBUTARY_COORDINATOR_BIN and
TRIBUTARY_CLIENT_BIN from the native build and TRIBUTARY_AARCH64_CLIENT_BIN from build/aarch64.
"""
import json
import os
import shutil
import sys
import unittest

from process_harness import CERTS, COORDINATOR, ProcessTest

CLIENT = os.environ.get("TRIBUTARY_CLIENT_BIN")
ARM_CLIENT = os.environ.get("TRIBUTARY_AARCH64_CLIENT_BIN")
QEMU = shutil.which("qemu-aarch64")
ROUNDS = 3
CLIENTS = 3  # the last one is the aarch64 client
DATA = ["data.dataset=synthetic", "data.train_examples=1500", "data.test_examples=200"]


@unittest.skipUnless(all([CERTS, COORDINATOR, CLIENT, ARM_CLIENT, QEMU]),
                     "run through scripts/test-aarch64, which names the binaries")
class MixedArchitectureRunTest(ProcessTest):
    prefix = "trib_mixed_arch_"

    def test_an_emulated_aarch64_client_joins_an_x86_run(self):
        events = self.path("events.jsonl")
        coord, addr = self.start_coordinator(f"""[run]
model = "mlp"
rounds = {ROUNDS}
clients_per_round = {CLIENTS}
min_available = {CLIENTS}
min_completed = {CLIENTS}
round_timeout_s = 300
[fit]
epochs = 1
lr = 0.05
[eval]
every = 0
[data]
dataset = "synthetic"
test_examples = 200
[output]
event_log = "{events}"
""")
        clients = []
        for i in range(CLIENTS):
            name = "arm-client" if i == CLIENTS - 1 else f"x86-client-{i}"
            ca, cert, key = self.client_tls(name)
            binary = [QEMU, "-L", "/", ARM_CLIENT] if i == CLIENTS - 1 else [CLIENT]
            args = binary + ["--coordinator", addr, "--ca", ca, "--cert", cert, "--key", key,
                             "--set", "run.model=mlp", "--num-clients", str(CLIENTS),
                             "--client-index", str(i), "--log-level", "info"]
            for kv in DATA:
                args += ["--set", kv]
            clients.append((name, self.start(name, args)))
        self.assertEqual(coord.wait(timeout=600), 0, self.log("coordinator"))
        for name, c in clients:
            self.assertEqual(c.wait(timeout=120), 0, self.log(name))
        with open(events) as f:
            lines = [json.loads(l) for l in f]
        closed = [e for e in lines if e["event"] == "round_closed"]
        self.assertEqual([e["round"] for e in closed], list(range(1, ROUNDS + 1)))
        for e in closed:
            self.assertEqual(e["completed"], CLIENTS, e)
        arm = [e for e in lines if e["event"] == "update_accepted" and e["client"] == "arm-client"]
        self.assertEqual([e["round"] for e in arm], list(range(1, ROUNDS + 1)))
        refused = [e for e in lines if e["event"] == "update_refused"]
        self.assertEqual(refused, [])
        print(f"mixed run: {ROUNDS} rounds, each with {CLIENTS} updates, the aarch64 client's "
              f"accepted in rounds {[e['round'] for e in arm]}", file=sys.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
