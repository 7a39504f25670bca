#!/usr/bin/python3
"""Split learning with a PyTorch device part (docs/split.md), against a real coordinator over
mutual TLS.

The run's model is a model file whose tensors carry PyTorch's names (Flatten, dense "1", ReLU,
dense "3"), cut at 3 (split.cut); the coordinator starts from weights PyTorch wrote
(torch_client.py --init) and holds the server part (dense "3" and the loss).

- torch_client.py --split 3 (examples/pytorch: TorchSplitTrainer, a tributary.SplitTrainer) is the
  only client of an SFLV2 run of two rounds of two epochs, every batch its whole share: the final
  model is what PyTorch computes training the whole model alone on that share (four full-batch SGD
  steps), within 1e-4 (two engines' float32 sums in a different order; the weights are below 1).
  The event log's rounds carry the split figures (2 batches a round, 4 bytes per activation each
  way with the dense codec).
- The U-shaped split (split.head = 5 on a model of two hidden layers): torch_client.py --split 3
  --split-head 5 holds the first and the last dense layers with the labels, the coordinator the
  middle one; an SFLV1 run with it is the same centralized PyTorch training, within 1e-4, and the
  rounds carry both cuts' bytes.
- An in-process client (tributary.Client, split=True) shows what tributary.SplitExchange refuses,
  naming what was wrong (a label above 255, activations whose first dimension is not the labels'
  count, labels that are not 1-D), that a refused call sends nothing (the run completes as if it
  had not happened), and that the exchange is invalid once fit_split has returned.

Skipped only where python3-torch is not installed (scripts/setup-deps installs it).
"""
import json
import os
import subprocess
import sys
import unittest

from process_harness import CERTS, COORDINATOR, ProcessTest

TORCH_CLIENT = os.environ.get("TORCH_CLIENT_PY")

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

EXAMPLES = 200
HIDDEN = 32
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
MODEL_U = """name = "tiny_torch_u"
layers = [
  { type = "flatten" },
  { type = "dense", units = 32, name = "1" },
  { type = "relu" },
  { type = "dense", units = 32, name = "3" },
  { type = "relu" },
  { type = "dense", units = 10, name = "5" },
]
"""


@unittest.skipIf(torch is None, "python3-torch is not installed (scripts/setup-deps installs it)")
@unittest.skipUnless(all([CERTS, COORDINATOR, TORCH_CLIENT]),
                     "run through ctest, which names the binaries")
class TorchSplitTest(ProcessTest):
    prefix = "trib_torch_split_"

    def setUp(self):
        super().setUp()
        sys.path.insert(0, os.path.dirname(TORCH_CLIENT))
        self.model_file = self.path("tiny_torch.toml")
        with open(self.model_file, "w") as f:
            f.write(MODEL)
        self.init = self.write_init("init.safetensors", str(HIDDEN))

    def write_init(self, name, hidden):
        path = self.path(name)
        out = subprocess.run([sys.executable, TORCH_CLIENT, "--init", path, "--hidden", hidden,
                              "--seed", "5", *self.data_flags()], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        return path

    @staticmethod
    def data_flags():
        return [a for kv in DATA for a in ("--set", kv)]

    def start_split_coordinator(self, rounds, epochs, split, model=None, init=None):
        toml = "\n".join([
            'log_level = "info"', "[run]", f'model = "{model or self.model_file}"',
            f'initial_model = "{init or self.init}"', f"rounds = {rounds}",
            "clients_per_round = 1", "min_available = 1", "round_timeout_s = 120", "[split]",
            split, "cut = 3",
            "[fit]", f"epochs = {epochs}", f"batch_size = {EXAMPLES}", "lr = 0.1", "[eval]",
            "every = 1", "[data]", 'dataset = "synthetic"', f"train_examples = {EXAMPLES}",
            "test_examples = 200", "seed = 3", "[output]",
            f'event_log = "{self.path("events.jsonl")}"',
            f'final_model = "{self.path("final.safetensors")}"', ""])
        return self.start_coordinator(toml)

    @staticmethod
    def centralized(init, hidden):
        """The reference: the whole model from `init`, trained alone on the whole data set as the
        runs train it (2 rounds x 2 epochs, one full batch each: four SGD steps, lr 0.1)."""
        import tributary as tb
        from torch_client import make_model

        x, y = tb.load_data(dict(kv.split("=", 1) for kv in DATA) | {"data.num_clients": 1})["train"]
        assert len(y) == EXAMPLES
        model = make_model(x[0].size, hidden, 10, seed=0)
        tb.to_torch(tb.load_safetensors(init)[0], model)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        xt, yt = torch.from_numpy(x), torch.from_numpy(y)
        for _ in range(4):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xt), yt).backward()
            opt.step()
        return tb.from_torch(model)

    def tls_args(self, who):
        ca, cert, key = self.client_tls(who)
        return ["--ca", ca, "--cert", cert, "--key", key]

    def test_sflv2_with_a_pytorch_device_part_is_centralized_training(self):
        import tributary as tb

        coord, addr = self.start_split_coordinator(rounds=2, epochs=2, split='mode = "sflv2"')
        client = self.start("torch-split", [
            sys.executable, TORCH_CLIENT, "--coordinator", addr, *self.tls_args("torch-split"),
            "--split", "3", "--hidden", str(HIDDEN), *self.data_flags()])
        self.assertEqual(coord.wait(timeout=180), 0, self.log("coordinator"))
        self.assertEqual(client.wait(timeout=60), 0, self.log("torch-split"))
        self.assertIn("split learning (sflv2): model tiny_torch cut before layer 3",
                      self.log("coordinator"))

        want = self.centralized(self.init, [HIDDEN])
        got, _ = tb.load_safetensors(self.path("final.safetensors"))
        self.assertEqual(list(got), list(want))
        init = tb.load_safetensors(self.init)[0]
        diff = max(float(abs(got[k] - want[k]).max()) for k in want)
        moved = max(float(abs(got[k] - init[k]).max()) for k in want)
        print(f"SFLV2, PyTorch device part, 2 rounds of 2 epochs: max |split - centralized| = "
              f"{diff:.3g} (weights moved up to {moved:.3g})")
        self.assertLess(diff, 1e-4)
        self.assertGreater(moved, 1e-3)  # it trained

        with open(self.path("events.jsonl")) as f:
            events = [json.loads(line) for line in f]
        closed = [e for e in events if e["event"] == "round_closed"]
        self.assertEqual(len(closed), 2)
        for e in closed:
            split = e["split"]
            self.assertEqual(split["batches"], 2)
            self.assertEqual(split["samples"], 2 * EXAMPLES)
            self.assertEqual(split["bytes_in"], 2 * EXAMPLES * HIDDEN * 4)
            self.assertEqual(split["bytes_out"], 2 * EXAMPLES * HIDDEN * 4)
            self.assertGreater(split["server_seconds"], 0)
            self.assertIn("test_accuracy", e)
        self.assertIn("round 2: fit loss", self.log("torch-split"))

    def test_a_u_shaped_pytorch_device_keeps_the_labels_and_is_centralized_training(self):
        import tributary as tb

        model_file = self.path("tiny_torch_u.toml")
        with open(model_file, "w") as f:
            f.write(MODEL_U)
        hidden = f"{HIDDEN},{HIDDEN}"
        init = self.write_init("init_u.safetensors", hidden)
        coord, addr = self.start_split_coordinator(rounds=2, epochs=2, model=model_file,
                                                   init=init, split='mode = "sflv1"\nhead = 5')
        client = self.start("torch-u", [
            sys.executable, TORCH_CLIENT, "--coordinator", addr, *self.tls_args("torch-u"),
            "--split", "3", "--split-head", "5", "--hidden", hidden, *self.data_flags()])
        self.assertEqual(coord.wait(timeout=180), 0, self.log("coordinator"))
        self.assertEqual(client.wait(timeout=60), 0, self.log("torch-u"))
        self.assertIn("split learning (sflv1, U-shaped): model tiny_torch_u cut before layers 3 "
                      "and 5", self.log("coordinator"))

        want = self.centralized(init, [HIDDEN, HIDDEN])
        got, _ = tb.load_safetensors(self.path("final.safetensors"))
        self.assertEqual(sorted(got), sorted(want))
        start = tb.load_safetensors(init)[0]
        diff = max(float(abs(got[k] - want[k]).max()) for k in want)
        moved = min(float(abs(got[k] - start[k]).max()) for k in want)
        print(f"U-shaped SFLV1, PyTorch front and head, 2 rounds of 2 epochs: max |split - "
              f"centralized| = {diff:.3g} (every tensor moved at least {moved:.3g})")
        self.assertLess(diff, 1e-4)
        self.assertGreater(moved, 1e-4)  # the front, the middle and the head all trained

        with open(self.path("events.jsonl")) as f:
            closed = [json.loads(line) for line in f if '"round_closed"' in line]
        self.assertEqual(len(closed), 2)
        for e in closed:
            # Per batch: the first cut's 32 values and the head's 32 gradients up, as many down.
            self.assertEqual(e["split"]["batches"], 2)
            self.assertEqual(e["split"]["bytes_in"], 2 * EXAMPLES * (HIDDEN + HIDDEN) * 4)
            self.assertEqual(e["split"]["bytes_out"], 2 * EXAMPLES * (HIDDEN + HIDDEN) * 4)
        self.assertIn("round 2: fit loss", self.log("torch-u"))

    def test_the_exchange_names_bad_arguments_and_expires_with_its_fit(self):
        import tributary as tb
        from torch_client import make_model
        from torch_split_trainer import TorchSplitTrainer

        x, y = tb.load_data(dict(kv.split("=", 1) for kv in DATA) | {"data.num_clients": 1})["train"]
        device_part = make_model(x[0].size, [HIDDEN], 10, seed=5)[:3]
        refusals, kept = [], []

        class Probing(TorchSplitTrainer):
            def fit_split(self, parameters, config, exchange):
                kept.append(exchange)
                h = torch.zeros(4, HIDDEN).numpy()
                for activations, labels in [
                        (h, [1, 2, 300, 4]),                    # a label above 255
                        (h, [1, 2, 3]),                         # 4 samples, 3 labels
                        (h, [[1, 2], [3, 4]]),                  # labels not 1-D
                        (h, []),                                # no labels
                        ("not numbers", [1, 2, 3, 4])]:         # activations not floats
                    try:
                        exchange(activations, labels)
                        refusals.append(None)
                    except tb.Error as e:
                        refusals.append((e.code, str(e)))
                self.batches_before = exchange.batches
                result = super().fit_split(parameters, config, exchange)
                self.batches_after = exchange.batches
                return result

        coord, addr = self.start_split_coordinator(rounds=1, epochs=1, split='mode = "sflv2"')
        ca, cert, key = self.client_tls("probe")
        options = tb.ClientOptions(coordinator=addr, ca_cert_file=ca, cert_file=cert,
                                   key_file=key, num_examples=len(y), split=True)
        trainer = Probing(device_part, x, y)
        tb.Client(options, trainer).run()
        self.assertEqual(coord.wait(timeout=60), 0, self.log("coordinator"))

        self.assertEqual([r[0] if r else None for r in refusals], ["InvalidArgument"] * 5)
        for (code, message), expected in zip(refusals, [
                "label 300 (sample 2) is not a class 0..255",
                "with n = 3 (the labels' count)",
                "labels must be a 1-D array of at least one label, got 2 dimension(s)",
                "labels must be a 1-D array of at least one label, got 1 dimension(s) of 0",
                "activations must be an array of floats"]):
            self.assertIn(expected, message)
        # The refused calls sent nothing: the one batch the round had is the only one exchanged.
        self.assertEqual((trainer.batches_before, trainer.batches_after), (0, 1))
        with open(self.path("events.jsonl")) as f:
            closed = [json.loads(line) for line in f if '"round_closed"' in line]
        self.assertEqual(closed[0]["split"]["batches"], 1)
        # Once fit_split has returned, the exchange it was given refuses to be used.
        with self.assertRaises(tb.Error) as cm:
            kept[0](torch.zeros(1, HIDDEN).numpy(), [0])
        self.assertEqual(cm.exception.code, "FailedPrecondition")
        self.assertIn("only during the fit_split call", str(cm.exception))


if __name__ == "__main__":
    unittest.main(verbosity=2)
