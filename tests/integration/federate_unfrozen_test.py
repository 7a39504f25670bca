#!/usr/bin/python3
"""run.federate = "unfrozen" between real processes over mutual TLS (docs/models.md, "Federating
only the unfrozen tensors").

A tributary-coordinator and two tributary-client processes train a model file whose first dense
layer is frozen (flatten, dense 32 frozen, relu, dense 10 on 8x8 synthetic images: 2,080 frozen
and 330 trained parameters), three rounds of FedAvg, twice: federating every tensor, then only the
unfrozen ones. The final models are the same bit for bit and the frozen layer keeps its starting
values; the event log's rounds show the updates carrying the head alone (under a fifth of the
bytes) and the downloads carrying the frozen layer only in the first round (each client's first
task), so later rounds send under a fifth of the bytes too.

Run through ctest (it names the binaries): ctest -R FederatingOnlyTheUnfrozenTensors -V
"""
import json
import os
import unittest

import numpy as np

from process_harness import CERTS, COORDINATOR, ProcessTest, read_safetensors

CLIENT = os.environ.get("TRIBUTARY_CLIENT_BIN")
ROUNDS = 3
DATA = ["data.dataset=synthetic", "data.train_examples=400", "data.test_examples=100",
        "data.partition=iid", "data.seed=3"]


@unittest.skipUnless(all([CERTS, COORDINATOR, CLIENT]), "run through ctest, which names the binaries")
class FederateUnfrozenTest(ProcessTest):
    prefix = "trib_federate_"

    def setUp(self):
        super().setUp()
        self.model_file = self.path("frozen_body.toml")
        with open(self.model_file, "w") as f:
            f.write('name = "frozen_body"\nlayers = [\n  { type = "flatten" },\n'
                    '  { type = "dense", units = 32, name = "body", frozen = true },\n'
                    '  { type = "relu" },\n  { type = "dense", units = 10, name = "head" },\n]\n')

    def run_federated(self, federate):
        events = self.path(f"events_{federate}.jsonl")
        final = self.path(f"final_{federate}.safetensors")
        toml = "\n".join([
            'log_level = "info"', "[run]", f'model = "{self.model_file}"', f"rounds = {ROUNDS}",
            "clients_per_round = 2", "min_available = 2", "round_timeout_s = 60",
            f'federate = "{federate}"', "[fit]", "epochs = 1", "batch_size = 32", "lr = 0.1",
            "momentum = 0.5", "[eval]", "every = 0", "[data]", 'dataset = "synthetic"',
            "train_examples = 400", "test_examples = 100", "seed = 3", "[output]",
            f'event_log = "{events}"', f'final_model = "{final}"', ""])
        name = f"coordinator_{federate}"
        coord, addr = self.start_coordinator(toml, name=name)
        clients = []
        for i in range(2):
            ca, cert, key = self.client_tls(f"edge-{i}")
            clients.append(self.start(f"{federate}-edge-{i}", [
                CLIENT, "--coordinator", addr, "--ca", ca, "--cert", cert, "--key", key,
                "--set", f"run.model={self.model_file}", "--log-level", "warn",
                *[a for kv in DATA for a in ("--set", kv)]]))
        self.assertEqual(coord.wait(timeout=120), 0, self.log(name)[-3000:])
        for i, c in enumerate(clients):
            self.assertEqual(c.wait(timeout=60), 0, self.log(f"{federate}-edge-{i}")[-3000:])
        with open(events) as f:
            evs = [json.loads(line) for line in f if line.strip()]
        closed = [e for e in evs if e["event"] == "round_closed"]
        self.assertEqual(len(closed), ROUNDS, self.log(name)[-3000:])
        return read_safetensors(final), closed, self.log(name)

    def test_only_the_head_travels_and_the_model_is_the_same(self):
        every, every_rounds, _ = self.run_federated("all")
        head, head_rounds, log = self.run_federated("unfrozen")
        self.assertIn("run.federate = 'unfrozen': 2 of model frozen_body's 4 tensors (330 of 2410 "
                      "parameters) are aggregated and sent", log)
        self.assertEqual(sorted(every), sorted(head))
        for name in every:
            self.assertTrue(np.array_equal(every[name], head[name]), name)
        self.assertFalse(np.array_equal(head["head.weight"], np.zeros_like(head["head.weight"])))
        for a, b in zip(every_rounds, head_rounds):
            print(f"round {a['round']}: up {a['bytes_up']} -> {b['bytes_up']} bytes, down "
                  f"{a['bytes_down']} -> {b['bytes_down']} bytes")
            self.assertEqual(a["accepted"], 2)
            self.assertEqual(b["accepted"], 2)
            self.assertLess(b["bytes_up"], a["bytes_up"] / 5)
        # Round 1: each client's first task brings the frozen layer; later rounds the head alone.
        self.assertGreater(head_rounds[0]["bytes_down"], 0.95 * every_rounds[0]["bytes_down"])
        for a, b in zip(every_rounds[1:], head_rounds[1:]):
            self.assertLess(b["bytes_down"], a["bytes_down"] / 5)


if __name__ == "__main__":
    unittest.main()
