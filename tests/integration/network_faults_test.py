#!/usr/bin/python3
"""Rounds keep closing over a bad network: a tributary-coordinator and three tributary-client
processes talk through a fault-injecting TCP proxy (fault_proxy.py) with 200 ms of delay each way,
5% of chunks "lost" (held for a retransmission timeout), a partition of every connection in the
middle of the run, and a 1 Mbit/s cap. Each run must complete with every client's update in every
round. The short mode (CI) partitions for 5 s; TRIBUTARY_LONG=1 partitions for 30 s and runs more
rounds. Prints each scenario's round durations (docs/results.md, reliability).
"""
import json
import os
import sys
import time
import unittest

from fault_proxy import FaultProxy
from process_harness import CERTS, COORDINATOR, ProcessTest

CLIENT = os.environ.get("TRIBUTARY_CLIENT_BIN")
LONG = bool(os.environ.get("TRIBUTARY_LONG"))
CLIENTS = 3
MODEL = """name = "tiny"
layers = [
  { type = "flatten" },
  { type = "dense", units = 32 },
  { type = "relu" },
  { type = "dense", units = 10 },
]
"""
DATA = ["data.dataset=synthetic", "data.train_examples=1500", "data.test_examples=300"]


@unittest.skipUnless(all([CERTS, COORDINATOR, CLIENT]), "run through ctest, which names the binaries")
class NetworkFaultsTest(ProcessTest):
    prefix = "trib_netfaults_"

    def federate(self, name, rounds, proxy_args, during=None):
        """Runs `rounds` rounds with every client behind a FaultProxy(**proxy_args); `during`,
        when given, is called with the proxy once round 1 has closed. Returns the round
        durations."""
        model = self.path("tiny.toml")
        with open(model, "w") as f:
            f.write(MODEL)
        events = self.path(name + ".jsonl")
        coord, addr = self.start_coordinator(f"""log_level = "info"
[net]
client_timeout_s = 8
[run]
model = "{model}"
rounds = {rounds}
clients_per_round = {CLIENTS}
min_available = {CLIENTS}
round_timeout_s = 90
[fit]
epochs = 1
lr = 0.1
[eval]
every = 0
[data]
dataset = "synthetic"
test_examples = 300
[output]
event_log = "{events}"
""")
        proxy = FaultProxy(int(addr.rsplit(":", 1)[1]), **proxy_args)
        try:
            clients = []
            for i in range(CLIENTS):
                ca, cert, key = self.client_tls(f"edge-{i}")
                args = [CLIENT, "--coordinator", f"127.0.0.1:{proxy.port}", "--ca", ca, "--cert",
                        cert, "--key", key, "--set", f"run.model={model}", "--num-clients",
                        str(CLIENTS), "--client-index", str(i), "--log-level", "warn",
                        "--set", "net.connect_timeout_s=3", "--set", "backoff.initial_s=0.2",
                        "--set", "backoff.max_s=2"]
                for kv in DATA:
                    args += ["--set", kv]
                clients.append(self.start(f"{name}-edge-{i}", args))
            if during:
                for _ in range(600):
                    if os.path.exists(events) and '"round_closed"' in open(events).read():
                        break
                    time.sleep(0.1)
                during(proxy)
            self.assertEqual(coord.wait(timeout=300), 0, self.log("coordinator"))
            for i, c in enumerate(clients):
                self.assertEqual(c.wait(timeout=60), 0, self.log(f"{name}-edge-{i}"))
        finally:
            proxy.stop()
        with open(events) as f:
            closed = [json.loads(l) for l in f if '"round_closed"' in l]
        self.assertEqual([e["round"] for e in closed], list(range(1, rounds + 1)))
        for e in closed:
            self.assertEqual(e["completed"], CLIENTS, e)
        durations = [round(e["duration_s"], 2) for e in closed]
        attempts = [e["attempts"] for e in closed]
        print(f"{name}: {rounds} rounds closed, durations {durations} s, attempts {attempts}",
              file=sys.stderr)
        return closed

    def test_200ms_delay_each_way(self):
        closed = self.federate("delay", 4 if LONG else 3, {"delay": 0.2})
        # A round is at least a task down and an update up: two 200 ms trips.
        self.assertTrue(all(e["duration_s"] >= 0.4 for e in closed), closed)

    def test_5_percent_loss(self):
        self.federate("loss", 6 if LONG else 3, {"loss": 0.05, "seed": 7})

    def test_a_partition_in_the_middle_of_the_run(self):
        seconds = 30 if LONG else 5

        def partition(proxy):
            proxy.partition(True)
            time.sleep(seconds)
            proxy.partition(False)

        # 300 ms each way keeps a round in flight when the partition begins, right after round 1.
        closed = self.federate("partition", 4, {"delay": 0.3}, during=partition)
        # The round the partition hit waited it out, or was retried after it.
        hit = [e for e in closed if e["attempts"] > 1 or e["duration_s"] >= seconds - 1]
        self.assertTrue(hit, closed)
        # The clients saw their connection go silent and came back.
        logs = "".join(self.log(f"partition-edge-{i}") for i in range(CLIENTS))
        self.assertIn("reconnecting", logs)

    def test_1_mbit_per_second(self):
        self.federate("bandwidth", 4 if LONG else 3, {"rate": 125_000})


if __name__ == "__main__":
    unittest.main(verbosity=2)
