#!/usr/bin/python3
"""SCAFFOLD between real processes (issue 34): a tributary-coordinator running
`run.strategy = "scaffold"` and two tributary-client processes (Tributary's native trainer, the
mlp on synthetic data, with label skew Dirichlet(0.3)), over mutual TLS on loopback.

Each client keeps its control variate c_i in its state dir (client/client_state.h). The run is
stopped after round 2 (the coordinator finishes its 2 rounds; both clients end with it), and then
the coordinator resumes from its checkpoint to round 4 with both clients restarted on their state
dirs. Its final model is bitwise the model of a 4-round run that never stopped: the restarted
clients trained with the control variates they had. The same restart with one client's
scaffold_control.safetensors deleted ends elsewhere, so the comparison can fail. About 15 s.
"""
import os
import re
import shutil
import unittest

from process_harness import CERTS, CLIENT, COORDINATOR, ProcessTest

# 28x28 images: the mlp has 199,210 parameters, so an update with its control delta (8 bytes a
# parameter) is past the dense update alone's message cap (4 a parameter plus slack): the cap must
# count the control delta (coordinator_service.cc).
DATA = ["run.model=mlp", "data.dataset=synthetic", "data.train_examples=1200",
        "data.test_examples=100", "data.partition=dirichlet:0.3", "data.synthetic.height=28",
        "data.synthetic.width=28"]


def run_toml(rounds, ckpt, final):
    return f"""[run]
model = "mlp"
rounds = {rounds}
clients_per_round = 2
min_available = 2
min_completed = 2
round_timeout_s = 60
strategy = "scaffold"
[fit]
epochs = 1
batch_size = 32
lr = 0.05
momentum = 0.5
[eval]
every = 0
[data]
dataset = "synthetic"
test_examples = 100
synthetic.height = 28
synthetic.width = 28
[output]
checkpoint_dir = "{ckpt}"
final_model = "{final}"
history = "none"
"""


@unittest.skipUnless(CERTS and COORDINATOR and CLIENT, "run through ctest, which names the binaries")
class ScaffoldRunTest(ProcessTest):
    prefix = "trib_scaffold_"

    def clients(self, addr, states, tag):
        procs = []
        for i, state in enumerate(states):
            ca, cert, key = self.client_tls(f"edge-{i}")
            procs.append(self.start(f"{tag}-edge-{i}", [
                CLIENT, "--coordinator", addr, "--ca", ca, "--cert", cert, "--key", key,
                "--num-clients", "2", "--client-index", str(i), "--threads", "1",
                "--state-dir", state, "--log-level", "warn",
                *[a for kv in DATA for a in ("--set", kv)]]))
        return procs

    def run_to_end(self, name, rounds, ckpt, states, resume=False):
        """Runs the coordinator `name` to `rounds` with clients on `states`; returns the final
        model's hash from its log."""
        final = self.path(name + ".safetensors")
        coord, addr = self.start_coordinator(run_toml(rounds, ckpt, final), name=name,
                                             args=["--resume"] if resume else [])
        procs = self.clients(addr, states, name)
        self.assertEqual(coord.wait(timeout=120), 0, self.log(name)[-3000:])
        for i, p in enumerate(procs):
            self.assertEqual(p.wait(timeout=30), 0, self.log(f"{name}-edge-{i}")[-2000:])
        found = re.search(r"final model: .* \(hash ([0-9a-f]{16})\)", self.log(name))
        self.assertIsNotNone(found, self.log(name)[-2000:])
        return found.group(1)

    def test_restarted_clients_keep_their_control_variates(self):
        # The run that never stopped.
        whole = self.run_to_end("whole", 4, self.path("whole-ckpt"),
                                [self.path("whole-0"), self.path("whole-1")])
        # Two rounds; coordinator and clients end.
        states = [self.path("state-0"), self.path("state-1")]
        self.run_to_end("first", 2, self.path("ckpt"), states)
        control = os.path.join(states[1], "scaffold_control.safetensors")
        self.assertTrue(os.path.exists(control), os.listdir(states[1]))
        # A copy of everything, with edge-1's control variate lost.
        for src in ["ckpt", "state-0", "state-1"]:
            shutil.copytree(self.path(src), self.path("lost-" + src))
        os.remove(os.path.join(self.path("lost-state-1"), "scaffold_control.safetensors"))

        resumed = self.run_to_end("resumed", 4, self.path("ckpt"), states, resume=True)
        lost = self.run_to_end("lost", 4, self.path("lost-ckpt"),
                               [self.path("lost-state-0"), self.path("lost-state-1")],
                               resume=True)
        print(f"final model hash: unbroken {whole}, restarted {resumed}, restarted without "
              f"edge-1's control variate {lost}")
        self.assertEqual(resumed, whole)
        self.assertNotEqual(lost, whole)
        self.assertIn("scaffold", self.log("resumed"))


if __name__ == "__main__":
    unittest.main()
