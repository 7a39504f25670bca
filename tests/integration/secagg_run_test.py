#!/usr/bin/python3
"""Secure aggregation between real processes: a tributary-coordinator with `secagg.enabled` and
four tributary-client processes over mutual TLS, each signing its keys with its TLS key. Every
round must close with all four masked inputs, and the final model must match the same run
without secure aggregation to within the quantization (clip 0.5, 16 bits: a level of 1.5e-5 per
value per round, times the rounds). With `randk(0.5)+q8` the masked inputs shrink accordingly.
With differential privacy on the clients the unmasked sum carries the whole noise.
"""
import json
import os
import sys
import unittest

from process_harness import CERTS, COORDINATOR, ProcessTest, read_safetensors

CLIENT = os.environ.get("TRIBUTARY_CLIENT_BIN")
CLIENTS = 4
ROUNDS = 3
DATA = ["data.dataset=synthetic", "data.train_examples=2000", "data.test_examples=200"]


@unittest.skipUnless(all([CERTS, COORDINATOR, CLIENT]), "run through ctest, which names the binaries")
class SecAggRunTest(ProcessTest):
    prefix = "trib_secagg_"

    def federate(self, name, secagg, codec="dense", clip=0.5, lr=0.05, extra="", min_completed=1):
        events = self.path(name + ".jsonl")
        final = self.path(name + ".safetensors")
        coord, addr = self.start_coordinator(f"""[run]
model = "mlp"
rounds = {ROUNDS}
clients_per_round = {CLIENTS}
min_available = {CLIENTS}
min_completed = {min_completed}
round_timeout_s = 60
codec = "{codec}"
[fit]
epochs = 1
lr = {lr}
[eval]
every = 0
[data]
dataset = "synthetic"
test_examples = 200
[secagg]
enabled = {"true" if secagg else "false"}
clip = {clip}
quant_bits = 16
{extra}
[output]
checkpoint_dir = "{self.path(name)}"
event_log = "{events}"
final_model = "{final}"
""", name=name)
        clients = []
        for i in range(CLIENTS):
            ca, cert, key = self.client_tls(f"edge-{i}")
            args = [CLIENT, "--coordinator", addr, "--ca", ca, "--cert", cert, "--key", key,
                    "--set", "run.model=mlp", "--num-clients", str(CLIENTS), "--client-index",
                    str(i), "--log-level", "warn"]
            for kv in DATA:
                args += ["--set", kv]
            clients.append(self.start(f"{name}-edge-{i}", args))
        self.assertEqual(coord.wait(timeout=240), 0, self.log(name))
        for i, c in enumerate(clients):
            self.assertEqual(c.wait(timeout=60), 0, self.log(f"{name}-edge-{i}"))
        with open(events) as f:
            closed = [json.loads(l) for l in f if '"round_closed"' in l]
        self.assertEqual([e["round"] for e in closed], list(range(1, ROUNDS + 1)))
        for e in closed:
            self.assertEqual(e["accepted"], CLIENTS, e)
        return read_safetensors(final), closed

    def test_masked_rounds_match_the_plaintext_run(self):
        plain, _ = self.federate("plain", False)
        masked, closed = self.federate("secagg", True)
        worst = max(abs(a - b) for name in plain for a, b in zip(plain[name], masked[name]))
        up = [e["bytes_up"] for e in closed]
        print(f"secagg run: {ROUNDS} rounds of {CLIENTS} masked inputs; largest difference from "
              f"the plaintext run {worst:.2e}; bytes up per round {up}", file=sys.stderr)
        self.assertLess(worst, ROUNDS * 1.0 / 65535 * 4)

    def test_quantized_random_k_updates_are_summed_masked(self):
        # randk(0.5)+q8: half the coordinates (the same for all four clients each round) at 8
        # bits, weights up to ~500 examples (9 bits), 4 clients (2 bits): about 19 bits for half
        # the values, against 32 for all of them in plaintext dense (0.30x, and the keys and
        # shares).
        final, closed = self.federate("sparse", True, codec="randk(0.5)+q8")
        dense = CLIENTS * 4 * sum(len(v) for v in final.values())
        for e in closed:
            self.assertLess(e["bytes_up"], 0.35 * dense, e)
            self.assertGreater(e["bytes_up"], 0.2 * dense, e)
        self.assertTrue(all(abs(v) < 10 for t in final.values() for v in t))

    def test_clients_add_the_differential_privacy_noise_under_secure_aggregation(self):
        # dp.placement = "client": each of the 4 clients clips its update to C = 0.5 and adds
        # N(0, (zC)^2 / 4) (4 = run.min_completed, the fewest inputs a round may close with); the
        # coordinator unmasks only the sum, which holds the whole noise zC, and releases it over
        # K = 4. With a learning rate of 1e-7 the updates are ~0, so after 3
        # rounds the model moved by noise alone: an rms of zC/K * sqrt(3) per weight.
        dp = """[dp]
enabled = true
placement = "client"
noise_multiplier = 1.0
clip_norm = 0.5
delta = 1e-5
noise_seed = 0"""
        start, _ = self.federate("dp-start", False, lr=1e-7)
        noised, closed = self.federate("dp", True, clip=2.0, lr=1e-7, extra=dp, min_completed=4)
        values = [b - a for name in start for a, b in zip(start[name], noised[name])]
        rms = (sum(v * v for v in values) / len(values)) ** 0.5
        expected = 1.0 * 0.5 / CLIENTS * ROUNDS ** 0.5
        eps = [e["dp"]["epsilon"] for e in closed]
        print(f"dp run: rms change {rms:.4f} (expected {expected:.4f}); epsilon by round {eps}",
              file=sys.stderr)
        self.assertLess(abs(rms / expected - 1), 0.05)
        self.assertTrue(all(0 < a < b for a, b in zip(eps, eps[1:])), eps)
        for e in closed:
            self.assertEqual(e["dp"]["noise_stddev"], 0.5)


if __name__ == "__main__":
    unittest.main(verbosity=2)
