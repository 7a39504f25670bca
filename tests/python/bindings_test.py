#!/usr/bin/python3
"""The Python bindings (module tributary): weights crossing the boundary with names, shapes and
order intact; trainers' results and failures; the simulator driven from Python with a Python
trainer (exact FedAvg arithmetic); options, errors and files. Run by ctest with PYTHONPATH set to
the build tree's python/ directory."""
import os
import signal
import tempfile
import time
import unittest

import numpy as np

import tributary as tb

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None


class PlusOne(tb.Trainer):
    """fit returns the global model plus 1 everywhere; records what it was given."""
    calls = []

    def __init__(self, x, y):
        self.n = len(y)
        self.shape = x.shape

    def get_parameters(self):
        return {"enc/0.W": np.zeros((3, 2), np.float32), "head:b": np.zeros(4, np.float32)}

    def fit(self, parameters, config):
        PlusOne.calls.append(([(k, v.shape, v.dtype) for k, v in parameters.items()],
                              config.epochs, config.lr, self.shape))
        return {k: v + 1.0 for k, v in parameters.items()}, self.n, {"train_loss": 0.5}


class BindingsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.init = os.path.join(self.dir, "init.safetensors")
        tb.save_safetensors(self.init, {"enc/0.W": np.arange(6, dtype=np.float32).reshape(3, 2),
                                        "head:b": np.full(4, -2.0, np.float32)})

    def tearDown(self):
        self.tmp.cleanup()

    def sim_config(self, **extra):
        config = {"run.model": "", "run.initial_model": self.init, "run.rounds": 3,
                  "run.clients_per_round": 4, "run.codec": "dense", "eval.every": 0,
                  "data.dataset": "synthetic", "data.train_examples": 400,
                  "data.test_examples": 100, "data.num_clients": 4, "data.partition": "iid",
                  "fit.epochs": 3, "fit.lr": 0.25, "sim.threads": 2}
        config.update(extra)
        return config

    def test_simulate_runs_python_trainers_and_averages_exactly(self):
        PlusOne.calls = []
        seen = []
        result = tb.simulate(self.sim_config(), trainer=PlusOne, on_round=seen.append)
        self.assertEqual([r["round"] for r in result["rounds"]], [1, 2, 3])
        self.assertEqual([r["accepted"] for r in result["rounds"]], [4, 4, 4])
        self.assertEqual(len(seen), 3)
        self.assertAlmostEqual(result["rounds"][0]["train_loss"], 0.5)
        final = result["final_model"]
        self.assertEqual(list(final), ["enc/0.W", "head:b"])  # names and order kept
        np.testing.assert_array_equal(final["enc/0.W"],
                                      np.arange(6, dtype=np.float32).reshape(3, 2) + 3)
        np.testing.assert_array_equal(final["head:b"], np.full(4, 1.0, np.float32))
        self.assertEqual(len(PlusOne.calls), 12)
        names, epochs, lr, shape = PlusOne.calls[0]
        self.assertEqual(names, [("enc/0.W", (3, 2), np.float32), ("head:b", (4,), np.float32)])
        self.assertEqual((epochs, lr), (3, 0.25))
        self.assertEqual(shape[1:], (8, 8, 1))  # the synthetic images, NHWC
        self.assertEqual(sum(c[3][0] for c in PlusOne.calls[:4]), 400)  # the partition's shares

    def test_a_trainer_that_raises_is_a_client_error_and_the_run_fails_naming_it(self):
        class Raises(PlusOne):
            def fit(self, parameters, config):
                raise ValueError("no GPU today")

        with self.assertRaises(tb.Error) as ctx:
            tb.simulate(self.sim_config(**{"run.max_round_attempts": 1}), trainer=Raises)
        self.assertIn("no GPU today", str(ctx.exception))
        self.assertIn("ValueError", str(ctx.exception))

    def test_an_exception_in_on_round_is_raised_after_the_run(self):
        seen = []

        def on_round(r):
            seen.append(r["round"])
            raise KeyError("dashboard down")

        with self.assertRaises(KeyError):
            tb.simulate(self.sim_config(), trainer=PlusOne, on_round=on_round)
        self.assertEqual(seen, [1])  # later rounds ran without the callback

    def test_ctrl_c_stops_a_simulation_after_the_round_in_progress(self):
        # SIGINT while the run goes on (sent from the round callback, after round 2): simulate
        # stops once the round in progress is over and raises KeyboardInterrupt, instead of
        # running its 2,000 rounds first.
        seen = []

        class Slow(PlusOne):  # a round takes at least 20 ms: the signal is seen within 100 ms
            def fit(self, parameters, config):
                time.sleep(0.01)
                return super().fit(parameters, config)

        def on_round(r):
            seen.append(r["round"])
            if r["round"] == 2:
                os.kill(os.getpid(), signal.SIGINT)

        with self.assertRaises(KeyboardInterrupt):
            tb.simulate(self.sim_config(**{"run.rounds": 2000}), trainer=Slow, on_round=on_round)
        self.assertGreaterEqual(len(seen), 2)
        self.assertLess(len(seen), 100)
        self.assertEqual(seen, list(range(1, len(seen) + 1)))

    def test_results_of_another_layout_or_type_are_refused_with_the_reason(self):
        class Extra(PlusOne):
            def fit(self, parameters, config):
                out = dict(parameters)
                out["surprise"] = np.zeros(1, np.float32)
                return out, 10

        class NotAMapping(PlusOne):
            def fit(self, parameters, config):
                return [1, 2, 3], 10

        for trainer, text in ((Extra, "fit's result has more, starting with tensor 2 'surprise'"),
                              (NotAMapping, "not a mapping")):
            with self.assertRaises(tb.Error) as ctx:
                tb.simulate(self.sim_config(**{"run.max_round_attempts": 1}), trainer=trainer)
            self.assertIn(text, str(ctx.exception), trainer.__name__)

    def test_a_trainer_of_another_model_is_refused_naming_the_tensor(self):
        # The trainer's get_parameters has the run's two tensors, the first transposed: the run
        # fails before any client trains, naming that tensor on both sides (not two fingerprints).
        class Transposed(PlusOne):
            def get_parameters(self):
                return {"enc/0.W": np.zeros((2, 3), np.float32), "head:b": np.zeros(4, np.float32)}

        PlusOne.calls = []
        with self.assertRaises(tb.Error) as ctx:
            tb.simulate(self.sim_config(), trainer=Transposed)
        self.assertIn("the trainer's model is not the run's (run.model or run.initial_model): "
                      "tensor 0 is 'enc/0.W' [3, 2] F32 in the run's model and 'enc/0.W' [2, 3] "
                      "F32 in the trainer's", str(ctx.exception))
        self.assertEqual(PlusOne.calls, [])

    def test_client_options_and_errors(self):
        o = tb.ClientOptions(coordinator="127.0.0.1:1", ca_cert_file=os.path.join(self.dir, "no"),
                             cert_file="c", key_file="k", num_examples=7, heartbeat_interval_s=2.5)
        self.assertEqual((o.num_examples, o.heartbeat_interval_s, o.device), (7, 2.5, "cpu"))
        o.backoff.max_attempts = 3
        self.assertEqual(o.backoff.max_attempts, 3)
        # A value of the wrong type names the field and both types, set either way.
        with self.assertRaises(TypeError) as ctx:
            tb.ClientOptions(num_examples="10")
        self.assertIn("ClientOptions.num_examples takes a value of type int, not str ('10')",
                      str(ctx.exception))
        with self.assertRaises(TypeError) as ctx:
            o.heartbeat_interval_s = "fast"
        self.assertIn("ClientOptions.heartbeat_interval_s takes a value of type float, not str",
                      str(ctx.exception))
        self.assertEqual(o.backoff.seed, 0)  # 0: each client draws its own jitter seed
        # Set by the client runtime when a fit's result is no longer wanted; never by default.
        self.assertFalse(tb.FitConfig().stop_requested)
        with self.assertRaises(TypeError):
            tb.ClientOptions(coordinatr="typo:1")
        with self.assertRaises(ValueError):
            o.connect_timeout_s = -1
        with self.assertRaises(ValueError) as bad:  # the message names the range it checks
            o.heartbeat_interval_s = 1e30
        self.assertIn("heartbeat_interval_s = 1e+30 must be in [0, 1e9] seconds", str(bad.exception))
        with self.assertRaises(tb.Error) as ctx:
            tb.Client(o, PlusOne(np.zeros((1, 1)), [0]))
        self.assertEqual(ctx.exception.code, "NotFound")
        self.assertIn(os.path.join(self.dir, "no"), str(ctx.exception))
        with self.assertRaises(tb.Error) as ctx:
            tb.Client(tb.ClientOptions(coordinator="no-port"), PlusOne(np.zeros((1, 1)), [0]))
        self.assertEqual(ctx.exception.code, "InvalidArgument")
        with self.assertRaises(tb.Error) as ctx:
            tb.set_log_level("loud")
        self.assertIn("loud", str(ctx.exception))
        tb.set_log_level("info")

    def test_safetensors_and_checkpoints_keep_names_shapes_order_and_values(self):
        path = os.path.join(self.dir, "m.safetensors")
        weights = {"z.last": np.float32([[1.5, -2]]), "a.first": np.float64([3.25]),
                   "scalar": np.float32(7)}
        tb.save_safetensors(path, weights, {"producer": "test"})
        back, meta = tb.load_safetensors(path)
        self.assertEqual(list(back), ["z.last", "a.first", "scalar"])
        self.assertEqual(meta, {"producer": "test"})
        self.assertEqual(back["scalar"].shape, ())
        for k in weights:
            np.testing.assert_array_equal(back[k], np.asarray(weights[k], np.float32))
        self.assertEqual(tb.load_checkpoint_model(path).keys(), back.keys())
        with self.assertRaises(tb.Error) as ctx:
            tb.load_safetensors(os.path.join(self.dir, "missing.safetensors"))
        self.assertEqual(ctx.exception.code, "NotFound")

    def test_load_data_gives_the_clients_share(self):
        shares = [tb.load_data({"data.dataset": "synthetic", "data.train_examples": 300,
                                "data.test_examples": 90, "data.num_clients": 3,
                                "data.client_index": i}) for i in range(3)]
        self.assertEqual(sum(len(s["train"][1]) for s in shares), 300)
        self.assertEqual(sum(len(s["eval"][1]) for s in shares), 90)
        x, y = shares[0]["train"]
        self.assertEqual((x.dtype, y.dtype, x.shape[1:]), (np.float32, np.int64, (8, 8, 1)))
        self.assertEqual(shares[0]["num_classes"], 10)
        with self.assertRaises(tb.Error) as ctx:
            tb.load_data({"data.partition": "bogus:1"})
        self.assertIn("data.partition", str(ctx.exception))
        # An index past the clients is named, as tributary-client names it (it was MemoryError).
        for index, clients in ((2, 2), (-1, 2), (1, 1)):
            with self.assertRaises(tb.Error) as ctx:
                tb.load_data({"data.dataset": "synthetic", "data.train_examples": 50,
                              "data.num_clients": clients, "data.client_index": index})
            self.assertEqual(ctx.exception.code, "InvalidArgument")
            self.assertIn("data.client_index", str(ctx.exception))
            self.assertIn(f"= {index} must be in [0, data.num_clients = {clients})",
                          str(ctx.exception))

    @unittest.skipIf(torch is None, "python3-torch is not installed")
    def test_torch_state_dicts_round_trip(self):
        model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4, 3),
                                    torch.nn.ReLU(), torch.nn.Linear(3, 2))
        params = tb.from_torch(model)
        self.assertEqual(list(params), ["1.weight", "1.bias", "3.weight", "3.bias"])
        path = os.path.join(self.dir, "torch.safetensors")
        tb.save_safetensors(path, model.state_dict())  # torch tensors are accepted as they are
        other = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4, 3),
                                    torch.nn.ReLU(), torch.nn.Linear(3, 2))
        tb.to_torch(tb.load_safetensors(path)[0], other)
        for a, b in zip(model.parameters(), other.parameters()):
            self.assertTrue(torch.equal(a, b))


if __name__ == "__main__":
    unittest.main(verbosity=2)
