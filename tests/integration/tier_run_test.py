#!/usr/bin/python3
"""The aggregation tier between real processes (issue 31, docs/tier.md): a tributary-coordinator,
three tributary-aggregator processes and 30 tributary-client processes (Tributary's native trainer,
the mlp on synthetic data), all over mutual TLS on loopback, each aggregator with its own
certificate (`tributary-certs aggregator`).

The same run with the 30 clients connected to the coordinator itself gives bitwise the same final
model (rounds of all 30 clients: the exact partial sums of the three groups add up to the sum one
coordinator folds), with the plain dense codec and with top-k + q8 under error feedback (each
client's residual in its state dir). And a client certificate that says AggregatorHello is refused,
naming why, while the run goes on. About 60 s on 2 cores.
"""
import os
import re
import time
import unittest

from process_harness import CERTS, CLIENT, COORDINATOR, ProcessTest

AGGREGATOR = os.environ.get("TRIBUTARY_AGGREGATOR_BIN")
CLIENTS = 30
GROUPS = 3
DATA = ["data.dataset=synthetic", "data.train_examples=1800", "data.test_examples=100",
        "data.partition=dirichlet:0.5"]


def run_toml(codec, rounds=3):
    return f"""[run]
model = "mlp"
rounds = {rounds}
clients_per_round = {CLIENTS}
min_available = {CLIENTS}
min_completed = {CLIENTS}
round_timeout_s = 120
codec = "{codec}"
seed = 7
[fit]
epochs = 1
batch_size = 16
lr = 0.05
momentum = 0.5
[eval]
every = 0
[data]
dataset = "synthetic"
test_examples = 100
[output]
history = "none"
"""


@unittest.skipUnless(CERTS and COORDINATOR and CLIENT and AGGREGATOR,
                     "run through ctest, which names the binaries")
class TierRunTest(ProcessTest):
    prefix = "trib_tier_"

    def start_aggregator(self, name, coordinator):
        if not os.path.exists(os.path.join(self.pki, "aggregators", name + ".crt")):
            self.certs("aggregator", "--id", name, "--host", "localhost", "--ip", "127.0.0.1")
        ready = self.path(name + ".ready")
        proc = self.start(name, [
            AGGREGATOR, "--coordinator", coordinator, "--listen", "127.0.0.1:0",
            "--ca", f"{self.pki}/ca.crt", "--cert", f"{self.pki}/aggregators/{name}.crt",
            "--key", f"{self.pki}/aggregators/{name}.key", "--heartbeat-s", "1",
            "--ready-file", ready])
        for _ in range(300):
            if os.path.exists(ready) or proc.poll() is not None:
                break
            time.sleep(0.1)
        self.assertTrue(os.path.exists(ready), self.log(name))
        with open(ready) as f:
            return proc, f.readline().strip()

    def clients(self, tag, addresses):
        """Client i connects to addresses[i % len(addresses)], with its own state dir."""
        procs = []
        for i in range(CLIENTS):
            ca, cert, key = self.client_tls(f"edge-{i}")
            procs.append(self.start(f"{tag}-edge-{i}", [
                CLIENT, "--coordinator", addresses[i % len(addresses)], "--ca", ca,
                "--cert", cert, "--key", key, "--num-clients", str(CLIENTS),
                "--client-index", str(i), "--threads", "1", "--log-level", "warn",
                "--state-dir", self.path(f"{tag}-state-{i}"), "--set", "run.model=mlp",
                *[a for kv in DATA for a in ("--set", kv)]]))
        return procs

    def finish(self, tag, coord, procs):
        self.assertEqual(coord.wait(timeout=240), 0, self.log(tag)[-3000:])
        for i, p in enumerate(procs):
            self.assertEqual(p.wait(timeout=60), 0, self.log(f"{tag}-edge-{i}")[-2000:])
        found = re.search(r"final model: .* \(hash ([0-9a-f]{16})\)", self.log(tag))
        self.assertIsNotNone(found, self.log(tag)[-2000:])
        return found.group(1)

    def one_coordinator(self, tag, codec):
        coord, addr = self.start_coordinator(run_toml(codec), name=tag)
        return self.finish(tag, coord, self.clients(tag, [addr]))

    def through_tier(self, tag, codec):
        coord, addr = self.start_coordinator(run_toml(codec), name=tag)
        aggs = [self.start_aggregator(f"{tag}-agg-{g}", addr) for g in range(GROUPS)]
        model = self.finish(tag, coord, self.clients(tag, [a for _, a in aggs]))
        for g, (proc, _) in enumerate(aggs):
            self.assertEqual(proc.wait(timeout=30), 0, self.log(f"{tag}-agg-{g}")[-2000:])
        log = self.log(tag)
        for g in range(GROUPS):
            self.assertIn(f"aggregator {tag}-agg-{g} connected", log)
            agg_log = self.log(f"{tag}-agg-{g}")
            sent = re.findall(r"round (\d+): (\d+) updates \((\d+) accepted\) sent up", agg_log)
            self.assertEqual(sum(int(a) for _, _, a in sent), 3 * CLIENTS // GROUPS, agg_log[-2000:])
        return model

    def check_codec(self, codec):
        alone = self.one_coordinator("alone", codec)
        tier = self.through_tier("tier", codec)
        print(f"{codec}: one coordinator {alone}, coordinator + {GROUPS} aggregators {tier}")
        self.assertEqual(tier, alone)

    def test_dense_updates_give_the_one_coordinator_model(self):
        self.check_codec("dense")

    def test_compressed_updates_with_error_feedback_give_the_one_coordinator_model(self):
        self.check_codec("topk(0.1)+q8")

    def test_a_client_certificate_cannot_act_as_an_aggregator(self):
        coord, addr = self.start_coordinator(run_toml("dense", rounds=1), name="hijack")
        # edge-0's certificate in the aggregator's place: refused at its AggregatorHello.
        ca, cert, key = self.client_tls("edge-0")
        proc = self.start("fake-agg", [AGGREGATOR, "--coordinator", addr, "--listen",
                                       "127.0.0.1:0", "--ca", ca, "--cert", cert, "--key", key])
        self.assertEqual(proc.wait(timeout=30), 1, self.log("fake-agg"))
        self.assertIn("only a certificate made with `tributary-certs aggregator`",
                      self.log("fake-agg"))
        coord.terminate()
        coord.wait(timeout=30)


if __name__ == "__main__":
    unittest.main()
