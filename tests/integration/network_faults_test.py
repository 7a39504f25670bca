#!/usr/bin/python3
"""Rounds keep closing over a bad network: a tributary-coordinator and three tributary-client
processes talk through a fault-injecting TCP proxy (fault_proxy.py) with 200 ms of delay each way,
5% of chunks "lost" (held for a retransmission timeout), and a partition of every connection in
the middle of the run; for the 1 Mbit/s cap, the clients run in a network namespace joined to the
coordinator's by a veth pair shaped with tbf (netns_link.py; where that cannot be made, without
root, the proxy paces the bytes instead and says so). Each run must complete with every client's
update in every round. The short mode (CI) partitions for 5 s; TRIBUTARY_LONG=1 partitions for 30 s and runs more
rounds. Prints each scenario's round durations (docs/results.md, reliability).
"""
import json
import os
import sys
import time
import unittest

from fault_proxy import FaultProxy
from netns_link import NetnsLink
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

    @staticmethod
    def read_if_exists(path):
        if not os.path.exists(path):
            return ""
        with open(path) as f:
            return f.read()

    def federate(self, name, rounds, proxy_args=None, during=None, link=None):
        """Runs `rounds` rounds with every client behind a FaultProxy(**proxy_args), or, given a
        NetnsLink, inside its namespace; `during`, when given, is called with the proxy once
        round 1 has closed. Returns the round_closed events."""
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
""", host=link.host_ip if link else "127.0.0.1")
        port = int(addr.rsplit(":", 1)[1])
        proxy = FaultProxy(port, **proxy_args) if proxy_args is not None else None
        target = f"127.0.0.1:{proxy.port}" if proxy else f"{link.host_ip}:{port}"
        try:
            clients = []
            for i in range(CLIENTS):
                ca, cert, key = self.client_tls(f"edge-{i}")
                args = [CLIENT, "--coordinator", target, "--ca", ca, "--cert",
                        cert, "--key", key, "--set", f"run.model={model}", "--num-clients",
                        str(CLIENTS), "--client-index", str(i), "--log-level", "warn",
                        "--set", "net.connect_timeout_s=3", "--set", "backoff.initial_s=0.2",
                        "--set", "backoff.max_s=2"]
                for kv in DATA:
                    args += ["--set", kv]
                if link:
                    args = link.wrap(args)
                clients.append(self.start(f"{name}-edge-{i}", args))
            if during:
                for _ in range(600):
                    if '"round_closed"' in self.read_if_exists(events):
                        break
                    time.sleep(0.1)
                during(proxy)
            self.assertEqual(coord.wait(timeout=300), 0, self.log("coordinator"))
            for i, c in enumerate(clients):
                self.assertEqual(c.wait(timeout=60), 0, self.log(f"{name}-edge-{i}"))
        finally:
            if proxy:
                proxy.stop()
        with open(events) as f:
            closed = [json.loads(l) for l in f if '"round_closed"' in l]
        self.assertEqual([e["round"] for e in closed], list(range(1, rounds + 1)))
        for e in closed:
            self.assertEqual(e["accepted"], CLIENTS, e)
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
        rounds = 4 if LONG else 3
        link = NetnsLink.create(rate="1mbit")
        if link is None:
            print(f"bandwidth: no tbf link ({NetnsLink.unavailable}); pacing in the proxy",
                  file=sys.stderr)
            self.federate("bandwidth", rounds, {"rate": 125_000})
            return
        try:
            # The server certificate must also name the address the clients dial.
            self.certs("server", "--force", "--host", "localhost", "--ip", "127.0.0.1", "--ip",
                       link.host_ip)
            closed = self.federate("bandwidth", rounds, link=link)
            print(link.qdisc(), file=sys.stderr)
        finally:
            link.close()
        # Every round's tasks go down to the three clients through the one 1 Mbit/s link: the
        # round lasts at least their bytes' transmission time, less tbf's 4 kB burst.
        for e in closed:
            self.assertGreaterEqual(e["duration_s"], (e["bytes_down"] - 4096) * 8 / 1e6, e)


if __name__ == "__main__":
    unittest.main(verbosity=2)
