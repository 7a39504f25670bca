#!/usr/bin/python3
"""The native engine against PyTorch, through real runs: the local optimizers and the layers.

Each case is a model file whose tensors carry PyTorch's names (Flatten, dense "1", an activation,
dense "3") and the same model in PyTorch (nn.Sequential); PyTorch writes the starting weights. A
tributary-client trains the model file in a one-round run of three epochs whose batch is the
client's whole share (so the order of samples only reorders sums), and PyTorch trains its model from
the same weights on the same data (three full-batch steps). The final models agree within 1e-5:
two engines' float sums in a different order.

- Optimizers (fit.optimizer): adam, adamw (other betas and eps) and sgd, with a ReLU model.
  A strategy derived for local SGD (scaffold, fednova) refuses Adam, naming both keys.
- Layers: sigmoid, tanh and GELU (erf form) between the dense layers, and a conv2d model with
  avgpool2d and globalavgpool (PyTorch's AvgPool2d and AdaptiveAvgPool2d(1); conv weights moved
  from OIHW to OHWI), the same conv model with a groupnorm after the convolution
  (nn.GroupNorm(2, 4)), and a dense model with a layernorm (nn.LayerNorm(32)), trained by SGD:
  their forward and backward are PyTorch's (each step's gradient flows through them, and the
  norms' gamma and beta train too).
- depthwiseconv2d: a depthwise-separable block (conv2d, depthwise 3x3 as PyTorch's
  Conv2d(4, 4, 3, padding=1, groups=4), pointwise 1x1 conv2d), globalavgpool and a dense head.
- Losses: the ReLU model trained with `loss = "mse"` and `loss = "bce"` against PyTorch's
  nn.MSELoss and nn.BCEWithLogitsLoss on the one-hot labels.
- Freezing: the ReLU model with its first dense layer `frozen = true`, trained by SGD with
  momentum and weight decay, against PyTorch with that layer's requires_grad off: the layer keeps
  its starting values exactly and the head trains as PyTorch's.
- conv1d: the 8x8 images read as 8 steps of 8 channels (PyTorch's Conv1d on [N, 8 channels,
  8 steps]; weights moved from [out, in, k] to [out, k, in]), with relu, globalavgpool
  (AdaptiveAvgPool1d(1)) and a dense head.
- embedding: 200 texts of 12 token ids (0 to 19 of a vocabulary of 24) in an .npz the client and the coordinator
  read (data.dataset = "files"), an embedding of dim 6 (PyTorch's nn.Embedding on the ids as
  integers), a dense layer over the 12 x 6 values, relu and a dense head.
- add: a residual block (dense, relu, dense, relu, plus the first relu's output, dense) against
  an nn.Sequential whose forward adds the same tensors.
- sequence lengths: texts of 3 to 12 tokens padded with the embedding's `pad` through an LSTM, a
  GRU and an LSTM, against PyTorch's layers on pack_padded_sequence of the same lengths.
- lstm and gru: the same texts through an embedding, an LSTM of 8 units returning every step, a
  GRU of 7 returning every step and an LSTM of 8 returning the last (PyTorch's nn.LSTM and nn.GRU,
  batch_first; tensors weight_ih_l0 ... bias_hh_l0, the gates in PyTorch's order) and a dense
  head.

Skipped only where python3-torch is not installed (scripts/setup-deps installs it).
"""
import os
import subprocess
import unittest

from process_harness import CERTS, CLIENT, COORDINATOR, ProcessTest

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

EXAMPLES = 200
HIDDEN = 32
EPOCHS = 3
DATA = ["data.dataset=synthetic", f"data.train_examples={EXAMPLES}", "data.test_examples=200",
        "data.partition=iid", "data.seed=3"]
TORCH_LAYERS = {"relu": "ReLU", "sigmoid": "Sigmoid", "tanh": "Tanh", "gelu": "GELU"}
def recurrent_layers(vocab, pad=""):
    """An embedding (`pad`: its pad key, or none), an LSTM and a GRU returning every step, an LSTM
    returning the last, a dense head: the model file's layers."""
    return [f'{{ type = "embedding", vocab = {vocab}, dim = 6{pad}, name = "embed" }}',
            '{ type = "lstm", units = 8, return_sequences = true, name = "seq" }',
            '{ type = "gru", units = 7, return_sequences = true, name = "gated" }',
            '{ type = "lstm", units = 8, name = "last" }',
            '{ type = "dense", units = 10, name = "head" }']


def recurrent_model(vocab, lengths=None):
    """recurrent_layers() in PyTorch, its tensors named alike; with `lengths`, the embedded texts go
    through pack_padded_sequence of those lengths."""
    class Recurrent(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(vocab, 6)
            self.seq = torch.nn.LSTM(6, 8, batch_first=True)
            self.gated = torch.nn.GRU(8, 7, batch_first=True)
            self.last = torch.nn.LSTM(7, 8, batch_first=True)
            self.head = torch.nn.Linear(8, 10)

        def forward(self, x):
            steps = self.embed(x)
            if lengths is not None:
                steps = torch.nn.utils.rnn.pack_padded_sequence(
                    steps, lengths, batch_first=True, enforce_sorted=False)
            every, _ = self.seq(steps)
            every, _ = self.gated(every)
            _, (h, _) = self.last(every)
            return self.head(h[0])

    return Recurrent()


@unittest.skipIf(torch is None, "python3-torch is not installed (scripts/setup-deps installs it)")
@unittest.skipUnless(all([CERTS, COORDINATOR, CLIENT]), "run through ctest, which names the binaries")
class PyTorchParityTest(ProcessTest):
    prefix = "trib_parity_"

    def setUp(self):
        super().setUp()
        self.runs = 0

    def data(self):
        import tributary as tb
        x, y = tb.load_data(dict(kv.split("=", 1) for kv in DATA) | {"data.num_clients": 1})["train"]
        self.assertEqual(len(y), EXAMPLES)
        return x, y

    def prepare(self, activation, loss=None, frozen=False):
        """Writes the model file (with `loss` when given) and PyTorch's starting weights; returns
        the torch model."""
        import tributary as tb
        x, _ = self.data()
        torch.manual_seed(5)
        model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(x[0].size, HIDDEN),
                                    getattr(torch.nn, TORCH_LAYERS[activation])(),
                                    torch.nn.Linear(HIDDEN, 10))
        self.model_file = self.path(f"{activation}.toml")
        with open(self.model_file, "w") as f:
            f.write(f'name = "tiny_{activation}"\n' + (f'loss = "{loss}"\n' if loss else "") +
                    f'layers = [\n  {{ type = "flatten" }},\n'
                    f'  {{ type = "dense", units = {HIDDEN}, name = "1"'
                    + (", frozen = true" if frozen else "") + ' },\n'
                    f'  {{ type = "{activation}" }},\n'
                    f'  {{ type = "dense", units = 10, name = "3" }},\n]\n')
        self.init = self.path(f"init_{activation}.safetensors")
        tb.save_safetensors(self.init, tb.from_torch(model), {"producer": "pytorch_parity_test"})
        if frozen:
            model[1].requires_grad_(False)
        return model

    def prepare_model(self, name, layers, model):
        """Writes the model file (`layers`: its TOML entries) and `model`'s starting weights
        (conv weights moved to OHWI); returns `model`."""
        import tributary as tb
        self.model_file = self.path(f"{name}.toml")
        with open(self.model_file, "w") as f:
            f.write(f'name = "{name}"\nlayers = [\n' + "".join(f"  {l},\n" for l in layers) + "]\n")
        self.init = self.path(f"init_{name}.safetensors")
        tb.save_safetensors(self.init, self.to_native(tb.from_torch(model)),
                            {"producer": "pytorch_parity_test"})
        return model

    def prepare_pooled(self, group_norm=False):
        """conv2d 4 (3x3, padding 1), [groupnorm 2,] relu, avgpool2d 2, globalavgpool, dense 10,
        and the nn.Sequential of the same layers (AdaptiveAvgPool2d(1) and Flatten for the global
        pooling), whose tensors are named alike."""
        x, _ = self.data()
        self.assertEqual(x.shape[1:], (8, 8, 1))
        torch.manual_seed(6)
        norm = [torch.nn.GroupNorm(2, 4)] if group_norm else []
        model = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, padding=1), *norm, torch.nn.ReLU(),
                                    torch.nn.AvgPool2d(2), torch.nn.AdaptiveAvgPool2d(1),
                                    torch.nn.Flatten(), torch.nn.Linear(4, 10))
        last = len(model) - 1
        layers = ['{ type = "conv2d", filters = 4, kernel = 3, padding = 1, name = "0" }',
                  *(['{ type = "groupnorm", groups = 2, name = "1" }'] if group_norm else []),
                  '{ type = "relu" }', '{ type = "avgpool2d", size = 2 }',
                  '{ type = "globalavgpool" }', f'{{ type = "dense", units = 10, name = "{last}" }}']
        return self.prepare_model("groupnorm" if group_norm else "pooled", layers, model)

    def prepare_conv1d(self):
        """conv1d 4 (kernel 3, padding 1) over 8 steps of 8 channels, relu, globalavgpool,
        dense 10, and its nn.Sequential."""
        torch.manual_seed(8)
        model = torch.nn.Sequential(torch.nn.Conv1d(8, 4, 3, padding=1), torch.nn.ReLU(),
                                    torch.nn.AdaptiveAvgPool1d(1), torch.nn.Flatten(),
                                    torch.nn.Linear(4, 10))
        layers = ['{ type = "conv1d", filters = 4, kernel = 3, padding = 1, name = "0" }',
                  '{ type = "relu" }', '{ type = "globalavgpool" }',
                  '{ type = "dense", units = 10, name = "4" }']
        return self.prepare_model("conv1d", layers, model)

    def prepare_separable(self):
        """conv2d 4, relu, depthwiseconv2d 3x3, relu, conv2d 6 (1x1), relu, globalavgpool,
        dense 10, and its nn.Sequential."""
        torch.manual_seed(9)
        model = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.ReLU(),
                                    torch.nn.Conv2d(4, 4, 3, padding=1, groups=4), torch.nn.ReLU(),
                                    torch.nn.Conv2d(4, 6, 1), torch.nn.ReLU(),
                                    torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                                    torch.nn.Linear(6, 10))
        layers = ['{ type = "conv2d", filters = 4, kernel = 3, padding = 1, name = "0" }',
                  '{ type = "relu" }',
                  '{ type = "depthwiseconv2d", kernel = 3, padding = 1, name = "2" }',
                  '{ type = "relu" }', '{ type = "conv2d", filters = 6, kernel = 1, name = "4" }',
                  '{ type = "relu" }', '{ type = "globalavgpool" }',
                  '{ type = "dense", units = 10, name = "8" }']
        return self.prepare_model("separable", layers, model)

    def prepare_layernorm(self):
        """flatten, dense 32, layernorm, relu, dense 10 and its nn.Sequential."""
        x, _ = self.data()
        torch.manual_seed(7)
        model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(x[0].size, HIDDEN),
                                    torch.nn.LayerNorm(HIDDEN), torch.nn.ReLU(),
                                    torch.nn.Linear(HIDDEN, 10))
        layers = ['{ type = "flatten" }', f'{{ type = "dense", units = {HIDDEN}, name = "1" }}',
                  '{ type = "layernorm", name = "2" }', '{ type = "relu" }',
                  '{ type = "dense", units = 10, name = "4" }']
        return self.prepare_model("layernorm", layers, model)

    @staticmethod
    def to_native(params):
        """PyTorch's conv weights (OIHW; Conv1d's [O, I, K]) as the native engine's (OHWI;
        [O, K, I])."""
        return {k: v.transpose(0, 2, 3, 1).copy() if v.ndim == 4
                else v.transpose(0, 2, 1).copy() if v.ndim == 3 else v
                for k, v in params.items()}

    def toml(self, fit, strategy="fedavg", data=None):
        data = data or ['dataset = "synthetic"', f"train_examples = {EXAMPLES}",
                        "test_examples = 200", "seed = 3"]
        return "\n".join([
            'log_level = "info"', "[run]", f'model = "{self.model_file}"',
            f'initial_model = "{self.init}"', "rounds = 1", "clients_per_round = 1",
            "min_available = 1", "round_timeout_s = 120", f'strategy = "{strategy}"', "[fit]",
            f"epochs = {EPOCHS}", f"batch_size = {EXAMPLES}", *fit, "[eval]", "every = 0",
            "[data]", *data, "[output]",
            f'final_model = "{self.path(f"final{self.runs}.safetensors")}"', ""])

    def run_native(self, fit, data=None):
        """One round of the native engine with `fit` (TOML lines) on `data` (key=value pairs of
        the data section; default: DATA's synthetic set); returns the final model."""
        import tributary as tb
        self.runs += 1
        name = f"coordinator{self.runs}"
        section = None
        if data:  # "data.key=value" as the coordinator's [data] lines
            section = [f"{k[len('data.'):]} = {v if v.isdigit() else chr(34) + v + chr(34)}"
                       for k, v in (kv.split("=", 1) for kv in data)]
        coord, addr = self.start_coordinator(self.toml(fit, data=section), name=name)
        ca, cert, key = self.client_tls("native")
        client = self.start(f"native{self.runs}", [
            CLIENT, "--coordinator", addr, "--ca", ca, "--cert", cert, "--key", key,
            "--set", f"run.model={self.model_file}", "--log-level", "warn",
            *[a for kv in (data or DATA) for a in ("--set", kv)]])
        self.assertEqual(coord.wait(timeout=120), 0, self.log(name))
        self.assertEqual(client.wait(timeout=60), 0, self.log(f"native{self.runs}"))
        return tb.load_safetensors(self.path(f"final{self.runs}.safetensors"))[0]

    def torch_reference(self, model, make_optimizer, nchw=False, steps=False, loss=None):
        """`nchw`: images to PyTorch's [N, C, H, W]; `steps`: each image's rows as steps and its
        columns as channels, [N, W, H]."""
        import tributary as tb
        x, y = self.data()
        opt = make_optimizer(model.parameters())
        xt, yt = torch.from_numpy(x), torch.from_numpy(y)
        if nchw:
            xt = xt.permute(0, 3, 1, 2).contiguous()
        if steps:
            xt = xt.reshape(xt.shape[0], xt.shape[1], -1).permute(0, 2, 1).contiguous()
        for _ in range(EPOCHS):
            opt.zero_grad()
            out = model(xt)
            if loss == "mse":
                onehot = torch.nn.functional.one_hot(yt.long(), out.shape[1]).float()
                torch.nn.functional.mse_loss(out, onehot).backward()
            elif loss == "bce":
                onehot = torch.nn.functional.one_hot(yt.long(), out.shape[1]).float()
                torch.nn.functional.binary_cross_entropy_with_logits(out, onehot).backward()
            else:
                torch.nn.functional.cross_entropy(out, yt).backward()
            opt.step()
        return self.to_native(tb.from_torch(model)) if nchw or steps else tb.from_torch(model)

    def check(self, name, activation, fit, make_optimizer, loss=None, frozen=False):
        import tributary as tb
        conv = activation in ("pooled", "groupnorm", "separable")
        if activation == "separable":
            model = self.prepare_separable()
        elif conv:
            model = self.prepare_pooled(group_norm=activation == "groupnorm")
        elif activation == "layernorm":
            model = self.prepare_layernorm()
        elif activation == "conv1d":
            model = self.prepare_conv1d()
        else:
            model = self.prepare(activation, loss=loss, frozen=frozen)
        got = self.run_native(fit)
        want = self.torch_reference(model, make_optimizer, nchw=conv,
                                    steps=activation == "conv1d", loss=loss)
        init = tb.load_safetensors(self.init)[0]
        self.assertEqual(list(got), list(want))
        # A frozen layer does not move: here it is enough that the weights moved somewhere.
        self.assert_matches(name, got, want, init, 1e-2, every=False)

    def test_adam_adamw_and_sgd_are_pytorchs(self):
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
                self.check(name, "relu", fit, make)

    def test_sigmoid_tanh_and_gelu_are_pytorchs(self):
        for activation in ["sigmoid", "tanh", "gelu"]:
            with self.subTest(layer=activation):
                self.check(activation, activation, ["lr = 0.5"],
                           lambda p: torch.optim.SGD(p, lr=0.5))

    def test_average_and_global_average_pooling_are_pytorchs(self):
        self.check("avgpool2d + globalavgpool", "pooled", ["lr = 0.5"],
                   lambda p: torch.optim.SGD(p, lr=0.5))

    def test_group_norm_and_layer_norm_are_pytorchs(self):
        self.check("conv2d + groupnorm", "groupnorm", ["lr = 0.5"],
                   lambda p: torch.optim.SGD(p, lr=0.5))
        self.check("dense + layernorm", "layernorm", ["lr = 0.2"],
                   lambda p: torch.optim.SGD(p, lr=0.2))

    def test_depthwise_separable_convolution_is_pytorchs(self):
        self.check("conv2d + depthwiseconv2d + 1x1 conv2d", "separable", ["lr = 0.5"],
                   lambda p: torch.optim.SGD(p, lr=0.5))

    def test_mse_and_bce_losses_are_pytorchs(self):
        for loss in ["mse", "bce"]:
            with self.subTest(loss=loss):
                self.check(f"relu, loss {loss}", "relu", ["lr = 0.5"],
                           lambda p: torch.optim.SGD(p, lr=0.5), loss=loss)

    def test_a_frozen_layer_is_pytorchs_without_grad(self):
        import tributary as tb
        self.check("relu, first dense frozen", "relu",
                   ["lr = 0.2", "momentum = 0.9", "weight_decay = 0.01"],
                   lambda p: torch.optim.SGD([q for q in p if q.requires_grad], lr=0.2,
                                             momentum=0.9, weight_decay=0.01), frozen=True)
        got = tb.load_safetensors(self.path(f"final{self.runs}.safetensors"))[0]
        init = tb.load_safetensors(self.init)[0]
        for key in ["1.weight", "1.bias"]:
            self.assertTrue((got[key] == init[key]).all(), key)

    def test_conv1d_is_pytorchs(self):
        self.check("conv1d + globalavgpool", "conv1d", ["lr = 0.5"],
                   lambda p: torch.optim.SGD(p, lr=0.5))

    def token_data(self):
        """200 texts of 12 token ids (0 to 19) and their classes, written to tokens.npz; returns
        (ids, labels, the data keys that read the file)."""
        import numpy as np
        rng = np.random.default_rng(11)
        labels = rng.integers(0, 10, EXAMPLES)
        # Class k favours tokens 2k and 2k+1; a third of the positions are any token.
        ids = np.where(rng.random((EXAMPLES, 12)) < 0.33, rng.integers(0, 20, (EXAMPLES, 12)),
                       2 * labels[:, None] + rng.integers(0, 2, (EXAMPLES, 12)))
        data_file = self.path("tokens.npz")
        np.savez(data_file, x=ids.astype(np.float32), y=labels.astype(np.uint8))
        return ids, labels, ["data.dataset=files", f"data.train={data_file}",
                             f"data.test={data_file}", "data.num_classes=10"]

    def token_run(self, name, layers, model, tokens=None):
        """Trains the model file of `layers` (whose starting weights are `model`'s) through a real
        run and `model` in PyTorch, by SGD (lr 0.5) on `tokens` (ids, labels, data keys; default
        token_data()); returns the two results, the starting weights and the ids."""
        import tributary as tb
        ids, labels, data = tokens or self.token_data()
        self.prepare_model(name, layers, model)
        init = tb.load_safetensors(self.init)[0]
        got = self.run_native(["lr = 0.5"], data=data)
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        xt, yt = torch.from_numpy(ids).long(), torch.from_numpy(labels).long()
        for _ in range(EPOCHS):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xt), yt).backward()
            opt.step()
        want = tb.from_torch(model)
        self.assertEqual(sorted(got), sorted(want))
        return got, want, init, ids

    def assert_matches(self, name, got, want, init, moved_at_least, every=True):
        """got within 1e-5 of want, and every tensor (or, with every=False, some tensor) moved from
        init by more than moved_at_least (it trained)."""
        self.assertEqual(sorted(got), sorted(want))
        diff = max(float(abs(got[k] - want[k]).max()) for k in want)
        moved = (min if every else max)(float(abs(got[k] - init[k]).max()) for k in want)
        print(f"{name}, {EPOCHS} full-batch steps: max |tributary - pytorch| = {diff:.3g} "
              f"({'every tensor moved at least' if every else 'weights moved up to'} "
              f"{moved:.3g})")
        self.assertLess(diff, 1e-5, name)
        self.assertGreater(moved, moved_at_least, name)

    def test_embedding_is_pytorchs(self):
        torch.manual_seed(12)
        # A vocabulary of 24 of which the texts use 0 .. 19.
        model = torch.nn.Sequential(torch.nn.Embedding(24, 6), torch.nn.Flatten(),
                                    torch.nn.Linear(72, 16), torch.nn.ReLU(),
                                    torch.nn.Linear(16, 10))
        got, want, init, ids = self.token_run("embedding", [
            '{ type = "embedding", vocab = 24, dim = 6, name = "0" }', '{ type = "flatten" }',
            '{ type = "dense", units = 16, name = "2" }', '{ type = "relu" }',
            '{ type = "dense", units = 10, name = "4" }'], model)
        diff = max(float(abs(got[k] - want[k]).max()) for k in want)
        moved = float(abs(got["0.weight"] - init["0.weight"]).max())
        print(f"embedding, {EPOCHS} full-batch steps: max |tributary - pytorch| = {diff:.3g} "
              f"(the table moved up to {moved:.3g})")
        self.assertLess(diff, 1e-5)
        self.assertGreater(moved, 1e-2)  # the table trained
        # Rows of tokens no text holds keep their values: no sample's gradient reached them.
        unused = sorted(set(range(24)) - set(ids.flatten().tolist()))
        self.assertEqual(unused[-4:], [20, 21, 22, 23])
        for t in unused:
            self.assertTrue((got["0.weight"][t] == init["0.weight"][t]).all(), t)

    def test_lstm_and_gru_are_pytorchs(self):
        torch.manual_seed(13)
        got, want, init, _ = self.token_run("lstm", recurrent_layers(20),
                                            recurrent_model(20))
        self.assertIn("seq.weight_hh_l0", want)
        self.assertIn("gated.bias_hh_l0", want)
        self.assert_matches("embedding + LSTM + GRU + LSTM", got, want, init, 1e-4)

    def test_sequence_lengths_are_pack_padded_sequences(self):
        """Texts of 3 to 12 tokens padded with token 20 (the embedding's pad) through an LSTM and a
        GRU returning every step and an LSTM returning the last: PyTorch's layers on
        pack_padded_sequence of the same lengths."""
        import numpy as np
        rng = np.random.default_rng(15)
        labels = rng.integers(0, 10, EXAMPLES)
        ids = np.where(rng.random((EXAMPLES, 12)) < 0.33, rng.integers(0, 20, (EXAMPLES, 12)),
                       2 * labels[:, None] + rng.integers(0, 2, (EXAMPLES, 12)))
        lengths = rng.integers(3, 13, EXAMPLES)
        for s, n in enumerate(lengths):
            ids[s, n:] = 20
        data_file = self.path("padded.npz")
        np.savez(data_file, x=ids.astype(np.float32), y=labels.astype(np.uint8))
        data = ["data.dataset=files", f"data.train={data_file}", f"data.test={data_file}",
                "data.num_classes=10"]
        torch.manual_seed(16)
        got, want, init, _ = self.token_run(
            "padded", recurrent_layers(21, ", pad = 20"),
            recurrent_model(21, torch.from_numpy(lengths)), (ids, labels, data))
        self.assert_matches("padded texts (lengths 3 to 12), embedding + LSTM + GRU + LSTM", got,
                            want, init, 1e-4)
        # The pad token's row never reaches a recurrent step: no gradient, its starting values.
        self.assertTrue((got["embed.weight"][20] == init["embed.weight"][20]).all())

    def test_a_residual_block_is_pytorchs(self):
        class Residual(torch.nn.Sequential):
            """flatten, dense, relu, dense, relu, (+ the first relu's output), dense: the tensors
            are named by position as the model file names them."""
            def forward(self, x):
                a = self[2](self[1](self[0](x)))
                return self[6](self[5](a + self[4](self[3](a))))

        import tributary as tb
        x, _ = self.data()
        torch.manual_seed(14)
        model = Residual(torch.nn.Flatten(), torch.nn.Linear(x[0].size, HIDDEN), torch.nn.ReLU(),
                         torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.ReLU(), torch.nn.Identity(),
                         torch.nn.Linear(HIDDEN, 10))
        self.prepare_model("residual", [
            '{ type = "flatten" }', f'{{ type = "dense", units = {HIDDEN}, name = "1" }}',
            '{ type = "relu" }', f'{{ type = "dense", units = {HIDDEN}, name = "3" }}',
            '{ type = "relu" }', '{ type = "add", from = 2 }',
            '{ type = "dense", units = 10, name = "6" }'], model)
        init = tb.load_safetensors(self.init)[0]
        got = self.run_native(["lr = 0.5"])
        want = self.torch_reference(model, lambda p: torch.optim.SGD(p, lr=0.5))
        self.assert_matches("residual add", got, want, init, 1e-3)

    def test_a_strategy_derived_for_sgd_refuses_adam(self):
        self.prepare("relu")
        for strategy in ["scaffold", "fednova"]:
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
