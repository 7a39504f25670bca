#!/usr/bin/python3
"""An emulated client in a native x86-64 run: the native tributary-coordinator and two native
tributary-client processes, and a third tributary-client under qemu-user, all over mutual TLS on
loopback. Every round must close with all three updates, the emulated client's among them (its
update folds into the same FedAvg), and the run must end well. Two emulated clients:

- aarch64: cross-built (build/aarch64), run under qemu-aarch64. scripts/test-aarch64 names it in
  TRIBUTARY_AARCH64_CLIENT_BIN.
- an x86-64 CPU without AVX (qemu-x86_64 -cpu Westmere): the native build's own tributary-client,
  which must run on the x86-64 baseline (an AVX instruction outside the run-time dispatch would be
  an illegal instruction there). tests/integration/old_cpu_test.sh names it in
  TRIBUTARY_OLD_X86_CLIENT_BIN.

Both need TRIBUTARY_CERTS_BIN, TRIBUTARY_COORDINATOR_BIN and TRIBUTARY_CLIENT_BIN from the native
build.
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
OLD_X86_CLIENT = os.environ.get("TRIBUTARY_OLD_X86_CLIENT_BIN")
QEMU_X86 = shutil.which("qemu-x86_64")
ROUNDS = 3
CLIENTS = 3  # the last one is the aarch64 client
DATA = ["data.dataset=synthetic", "data.train_examples=1500", "data.test_examples=200"]


class MixedArchitectureRunTest(ProcessTest):
    prefix = "trib_mixed_arch_"

    @unittest.skipUnless(all([CERTS, COORDINATOR, CLIENT, ARM_CLIENT, QEMU]),
                         "run through scripts/test-aarch64, which names the binaries")
    def test_an_emulated_aarch64_client_joins_an_x86_run(self):
        self.run_with_emulated_client("arm-client", [QEMU, "-L", "/", ARM_CLIENT])

    @unittest.skipUnless(all([CERTS, COORDINATOR, CLIENT, OLD_X86_CLIENT, QEMU_X86]),
                         "run through tests/integration/old_cpu_test.sh, which names the binaries")
    def test_a_client_on_an_x86_cpu_without_avx_joins_the_run(self):
        self.run_with_emulated_client("westmere-client",
                                      [QEMU_X86, "-cpu", "Westmere", OLD_X86_CLIENT])

    def run_with_emulated_client(self, emulated_name, emulated_cmd):
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
            name = emulated_name if i == CLIENTS - 1 else f"x86-client-{i}"
            ca, cert, key = self.client_tls(name)
            binary = emulated_cmd if i == CLIENTS - 1 else [CLIENT]
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
            self.assertEqual(e["accepted"], CLIENTS, e)
        emulated = [e for e in lines
                    if e["event"] == "update_accepted" and e["client"] == emulated_name]
        self.assertEqual([e["round"] for e in emulated], list(range(1, ROUNDS + 1)))
        refused = [e for e in lines if e["event"] == "update_refused"]
        self.assertEqual(refused, [])
        print(f"mixed run: {ROUNDS} rounds, each with {CLIENTS} updates, {emulated_name}'s "
              f"accepted in rounds {[e['round'] for e in emulated]}", file=sys.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
