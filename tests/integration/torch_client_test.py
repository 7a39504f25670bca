#!/usr/bin/python3
"""A PyTorch client and a C++ client in one run, over mutual TLS, each its own process.

The run's model is a model file whose tensors carry PyTorch's names; the coordinator starts from
weights PyTorch wrote (torch_client.py --init), the C++ tributary-client trains the model with the
native engine and the PyTorch client with torch, both on their shares of the synthetic data set;
every round folds in both. The final model loads back into the PyTorch model (strict names and
shapes) and classifies the test set well. Skipped only where python3-torch is not installed
(scripts/setup-deps installs it).
"""
import json
import os
import subprocess
import sys
import unittest

from process_harness import CERTS, COORDINATOR, ProcessTest

CLIENT = os.environ.get("TRIBUTARY_CLIENT_BIN")
TORCH_CLIENT = os.environ.get("TORCH_CLIENT_PY")

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

ROUNDS = 4
DATA = ["data.dataset=synthetic", "data.train_examples=3000", "data.test_examples=1000",
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
class TorchClientTest(ProcessTest):
    prefix = "trib_torch_"

    def test_pytorch_and_cpp_clients_train_one_model(self):
        model_file = self.path("tiny_torch.toml")
        with open(model_file, "w") as f:
            f.write(MODEL)
        init = self.path("init.safetensors")
        data_flags = [a for kv in DATA for a in ("--set", kv)]
        out = subprocess.run([sys.executable, TORCH_CLIENT, "--init", init, "--hidden", "32",
                              "--seed", "5", *data_flags], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)

        toml = "\n".join([
            'log_level = "info"', "[run]", f'model = "{model_file}"', f'initial_model = "{init}"',
            f"rounds = {ROUNDS}", "clients_per_round = 2", "min_available = 2",
            "round_timeout_s = 120", "[fit]", "epochs = 1", "batch_size = 32", "lr = 0.1",
            "[eval]", "every = 1", "[data]", 'dataset = "synthetic"', "train_examples = 3000",
            "test_examples = 1000", "seed = 3", "[output]",
            f'event_log = "{self.path("events.jsonl")}"',
            f'final_model = "{self.path("final.safetensors")}"', ""])
        coord, addr = self.start_coordinator(toml)

        def tls(who):
            ca, cert, key = self.client_tls(who)
            return ["--ca", ca, "--cert", cert, "--key", key]

        py = self.start("torch-client", [
            sys.executable, TORCH_CLIENT, "--coordinator", addr, *tls("torch-client"),
            "--hidden", "32", "--num-clients", "2", "--client-index", "1", *data_flags])
        cpp = self.start("cpp-client", [
            CLIENT, "--coordinator", addr, *tls("cpp-client"), "--set", f"run.model={model_file}",
            "--num-clients", "2", "--client-index", "0", "--log-level", "warn", *data_flags])
        self.assertEqual(coord.wait(timeout=300), 0, self.log("coordinator"))
        self.assertEqual(py.wait(timeout=60), 0, self.log("torch-client"))
        self.assertEqual(cpp.wait(timeout=60), 0, self.log("cpp-client"))

        with open(self.path("events.jsonl")) as f:
            events = [json.loads(line) for line in f]
        for r in range(1, ROUNDS + 1):
            got = sorted(e["client"] for e in events
                         if e["event"] == "update_accepted" and e["round"] == r)
            self.assertEqual(got, ["cpp-client", "torch-client"], f"round {r}")
        accuracies = [e["test_accuracy"] for e in events
                      if e["event"] == "round_closed" and "test_accuracy" in e]
        self.assertEqual(len(accuracies), ROUNDS)

        # PyTorch -> coordinator -> PyTorch: the final model loads into the torch model (strict)
        # and classifies the synthetic test set as the coordinator's evaluation said.
        import tributary as tb
        sys.path.insert(0, os.path.dirname(TORCH_CLIENT))
        from torch_client import make_model
        model = make_model(64, [32], 10, seed=0)
        final, meta = tb.load_safetensors(self.path("final.safetensors"))
        self.assertEqual(list(final), ["1.weight", "1.bias", "3.weight", "3.bias"])
        self.assertEqual(meta.get("producer"), "tributary-coordinator")
        tb.to_torch(final, model)
        x, y = tb.load_data(dict(kv.split("=", 1) for kv in DATA) | {"data.num_clients": 1})["eval"]
        with torch.no_grad():
            pred = model(torch.from_numpy(x)).argmax(1).numpy()
        accuracy = float((pred == y).mean())
        self.assertGreater(accuracy, 0.8)
        self.assertAlmostEqual(accuracy, accuracies[-1], delta=0.01)


if __name__ == "__main__":
    unittest.main(verbosity=2)
