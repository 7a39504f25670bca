#!/usr/bin/python3
"""One authenticated client cannot take over the model by inflating its weight (issue 28, item 1):
a real tributary-coordinator running FedAvg and ten Python-package clients (tributary.Client) in
this process, over mutual TLS on loopback. Nine are honest: 100 examples, announced at Hello, and
a delta of +0.01 on every weight. The tenth announces 100 examples at Hello too, then claims 1e9
in each update with a delta of -1. Before the fix the coordinator weighted it by its claim (99.99991%
of the weight) and the global mean went to -1.999998 in two rounds; now its updates are refused
(more than it announced), a security warning names it and both numbers, and the mean is the honest
clients' 0.02. About 2 s.
"""
import os
import sys
import unittest

import numpy as np

from process_harness import CERTS, COORDINATOR, ProcessTest

try:
    import tributary as tb
except ImportError:  # run through ctest, which sets PYTHONPATH
    tb = None

HONEST, ROUNDS, SIZE = 9, 2, 4


class DeltaTrainer(tb.Trainer if tb else object):
    """Adds `delta` to every weight and claims `claimed` examples."""

    def __init__(self, delta, claimed):
        self.delta, self.claimed = np.float32(delta), claimed

    def get_parameters(self):
        return {"w": np.zeros(SIZE, np.float32)}

    def fit(self, parameters, config):
        return tb.FitResult({k: v + self.delta for k, v in parameters.items()}, self.claimed)


@unittest.skipUnless(tb and CERTS and COORDINATOR, "run through ctest, which names the binaries")
class WeightInflationTest(ProcessTest):
    prefix = "trib_weights_"

    def test_an_update_claiming_more_than_its_hello_is_refused(self):
        init = self.path("init.safetensors")
        tb.save_safetensors(init, {"w": np.zeros(SIZE, np.float32)})
        final = self.path("final.safetensors")
        coord, addr = self.start_coordinator(f"""[run]
model = ""
initial_model = "{init}"
rounds = {ROUNDS}
clients_per_round = {HONEST + 1}
min_available = {HONEST + 1}
min_completed = {HONEST}
round_timeout_s = 10
max_round_attempts = 2
[eval]
every = 0
[net]
max_handshakes_per_address = 16  # the ten clients connect at once from 127.0.0.1
[output]
checkpoint_dir = "{self.path('ckpt')}"
final_model = "{final}"
history = "none"
""")
        tb.set_log_level("warn")  # the clients' per-task lines would bury the result
        clients = []
        for i in range(HONEST + 1):
            hostile = i == HONEST
            name = "hostile" if hostile else f"honest-{i}"
            ca, cert, key = self.client_tls(name)
            options = tb.ClientOptions(coordinator=addr, ca_cert_file=ca, cert_file=cert,
                                       key_file=key, num_examples=100)
            options.backoff.max_attempts = 5
            trainer = DeltaTrainer(-1.0, 10**9) if hostile else DeltaTrainer(0.01, 100)
            clients.append(tb.Client(options, trainer))
        for c in clients:
            c.start()
        for c in clients:
            c.wait()
        self.assertEqual(coord.wait(timeout=30), 0, self.log("coordinator"))
        mean = float(np.mean(tb.load_checkpoint_model(final)["w"]))
        log = self.log("coordinator")
        refusals = log.count("security: client hostile claims 1000000000 examples")
        print(f"global mean after {ROUNDS} rounds: {mean:.6f} (honest clients alone: 0.02); "
              f"the hostile client's updates refused: {refusals}", file=sys.stderr)
        self.assertAlmostEqual(mean, 0.02, delta=1e-6)
        self.assertEqual(refusals, ROUNDS, log)
        self.assertIn("more than the 100 it announced at Hello", log)


if __name__ == "__main__":
    unittest.main()
