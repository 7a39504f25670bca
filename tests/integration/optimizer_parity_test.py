#!/usr/bin/python3
"""The local optimizers (fit.optimizer = adam, adamw) against PyTorch's, through a real run.

A tributary-client (the native engine) trains a model file whose tensors carry PyTorch's names
(Flatten, dense "1", ReLU, dense "3") from weights PyTorch wrote, in a one-round run of three
epochs whose batch is the client's whole share; PyTorch trains the same model from the same
weights with torch.optim.Adam / AdamW on the same data (three full-batch steps). The final models
agree within 1e-5 (two engines' float sums in a different order; Adam divides each step by the
gradient's own size, so the engines' rounding differences stay relative to lr, 0.01 here). With
momentum left at SGD's 0 the same run is plain SGD, checked the same way. And a strategy derived
for local SGD refuses Adam, naming both keys.

Skipped only where python3-torch is not installed (scripts/setup-deps installs it).
"""
import os
import subprocess
import sys
import unittest

from process_harness import CERTS, CLIENT, COORDINATOR, ProcessTest

TORCH_CLIENT = os.environ.get("TORCH_CLIENT_PY")

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

EXAMPLES = 200
HIDDEN = 32
EPOCHS = 3
DATA = ["data.dataset=synthetic", f"data.train_examples={EXAMPLES}", "data.test_examples=200",
        "data.partition=iid", "data.seed=3"]
MODEL = """name = "tiny_torch"
layers = [
  { type = "flatten" },
  { type = "dense", units = 32, name = "1" },
  { type = "relu" },
  { type = "dense", units = 10, name = "3" },
]
"""


@unittest.skipIf(torch is None, "python3-torch is not installed (scripts/setup-deps installs it)")
@unittest.skipUnless(all([CERTS, COORDINATOR, CLIENT, TORCH_CLIENT]),
                     "run through ctest, which names the binaries")
class OptimizerParityTest(ProcessTest):
    prefix = "trib_optimizer_"

    def setUp(self):
        super().setUp()
        sys.path.insert(0, os.path.dirname(TORCH_CLIENT))
        self.model_file = self.path("tiny_torch.toml")
        with open(self.model_file, "w") as f:
            f.write(MODEL)
        self.init = self.path("init.safetensors")
        out = subprocess.run([sys.executable, TORCH_CLIENT, "--init", self.init, "--hidden",
                              str(HIDDEN), "--seed", "5", *self.data_flags()],
                             capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.runs = 0

    @staticmethod
    def data_flags():
        return [a for kv in DATA for a in ("--set", kv)]

    def toml(self, fit, strategy="fedavg"):
        return "\n".join([
            'log_level = "info"', "[run]", f'model = "{self.model_file}"',
            f'initial_model = "{self.init}"', "rounds = 1", "clients_per_round = 1",
            "min_available = 1", "round_timeout_s = 120", f'strategy = "{strategy}"', "[fit]",
            f"epochs = {EPOCHS}", f"batch_size = {EXAMPLES}", *fit, "[eval]", "every = 0",
            "[data]", 'dataset = "synthetic"', f"train_examples = {EXAMPLES}",
            "test_examples = 200", "seed = 3", "[output]", f'final_model = "{self.path(f"final{self.runs}.safetensors")}"', ""])

    def run_native(self, fit):
        """One round of the native engine with `fit` (TOML lines); returns the final model."""
        import tributary as tb
        self.runs += 1
        name = f"coordinator{self.runs}"
        coord, addr = self.start_coordinator(self.toml(fit), name=name)
        ca, cert, key = self.client_tls("native")
        client = self.start(f"native{self.runs}", [
            CLIENT, "--coordinator", addr, "--ca", ca, "--cert", cert, "--key", key,
            "--set", f"run.model={self.model_file}", "--log-level", "warn", *self.data_flags()])
        self.assertEqual(coord.wait(timeout=120), 0, self.log(name))
        self.assertEqual(client.wait(timeout=60), 0, self.log(f"native{self.runs}"))
        return tb.load_safetensors(self.path(f"final{self.runs}.safetensors"))[0]

    def torch_reference(self, make_optimizer):
        import tributary as tb
        from torch_client import make_model
        x, y = tb.load_data(dict(kv.split("=", 1) for kv in DATA) | {"data.num_clients": 1})["train"]
        self.assertEqual(len(y), EXAMPLES)
        model = make_model(x[0].size, [HIDDEN], 10, seed=0)
        tb.to_torch(tb.load_safetensors(self.init)[0], model)
        opt = make_optimizer(model.parameters())
        xt, yt = torch.from_numpy(x), torch.from_numpy(y)
        for _ in range(EPOCHS):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xt), yt).backward()
            opt.step()
        return tb.from_torch(model)

    def check(self, name, got, want):
        import tributary as tb
        init = tb.load_safetensors(self.init)[0]
        self.assertEqual(list(got), list(want))
        diff = max(float(abs(got[k] - want[k]).max()) for k in want)
        moved = max(float(abs(got[k] - init[k]).max()) for k in want)
        print(f"{name}, {EPOCHS} full-batch steps: max |tributary - pytorch| = {diff:.3g} "
              f"(weights moved up to {moved:.3g})")
        self.assertLess(diff, 1e-5, name)
        self.assertGreater(moved, 1e-2, name)  # it trained

    def test_adam_and_adamw_are_pytorchs(self):
        cases = [
            ("adam", ['optimizer = "adam"', "lr = 0.01", "weight_decay = 0.01"],
             lambda p: torch.optim.Adam(p, lr=0.01, weight_decay=0.01)),
            ("adamw", ['optimizer = "adamw"', "lr = 0.01", "weight_decay = 0.05", "beta1 = 0.8",
                       "beta2 = 0.99", "eps = 1e-6"],
             lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.05, betas=(0.8, 0.99),
                                         eps=1e-6)),
            ("sgd", ["lr = 0.1"], lambda p: torch.optim.SGD(p, lr=0.1)),
        ]
        for name, fit, make in cases:
            with self.subTest(optimizer=name):
                self.check(name, self.run_native(fit), self.torch_reference(make))

    def test_a_strategy_derived_for_sgd_refuses_adam(self):
        for strategy in ["scaffold", "fednova"]:
            self.runs += 1
            with open(self.path("refused.toml"), "w") as f:
                f.write(self.toml(['optimizer = "adam"'], strategy=strategy))
            out = subprocess.run([COORDINATOR, "--config", self.path("refused.toml"),
                                  "--set", f"tls.ca={self.pki}/ca.crt",
                                  "--set", f"tls.cert={self.pki}/server.crt",
                                  "--set", f"tls.key={self.pki}/server.key"],
                                 capture_output=True, text=True, timeout=60)
            self.assertNotEqual(out.returncode, 0)
            self.assertIn(f"key 'run.strategy' = '{strategy}' assumes local SGD; fit.optimizer = "
                          "'adam' is refused with it", out.stdout + out.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
