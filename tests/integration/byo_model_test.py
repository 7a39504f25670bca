#!/usr/bin/python3
"""Bring your own model, end to end: a tributary-coordinator that knows only a safetensors file
(a 21-float logistic regression; a two-layer net with odd tensor names) runs C++, C and Python
clients over mutual TLS, each its own process; the final model must equal a FedAvg computed here,
independently (NumPy, float64), from the same data and the same training rule. A client whose
layout differs is refused at connect, named, and never selected; a run that fails is an error in
every client API. Files are written and read with this test's own safetensors code.

Run by ctest (tests/integration/CMakeLists.txt), which sets the binaries' paths and PYTHONPATH.
"""
import json
import os
import struct
import subprocess
import sys
import time
import unittest

import numpy as np

from process_harness import CERTS, COORDINATOR, ProcessTest, write_safetensors

CPP_CLIENT = os.environ.get("BYO_CLIENT_BIN")
C_CLIENT = os.environ.get("BYO_CLIENT_C_BIN")
PY_CLIENT = os.environ.get("BYO_CLIENT_PY")
DIM = 20
HIDDEN = 3
EXAMPLES = {"cpp-client": 40, "c-client": 55, "py-client": 70}
ROUNDS, EPOCHS, LR = 3, 2, 0.5



def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    data = raw[8 + n:]
    out = {}
    for name, t in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        a, b = t["data_offsets"]
        assert t["dtype"] == "F32", t
        out[name] = np.frombuffer(data[a:b], dtype="<f4").reshape(t["shape"])
    return out


def layout(hidden):
    if hidden == 0:
        return [("weight", (1, DIM)), ("bias", (1,))]
    return [("encoder/0.W", (hidden, DIM)), ("encoder/0.b", (hidden,)), ("head:W", (1, hidden)),
            ("head:b", (1,))]


def reference_step(p, x, y, hidden, lr):
    """One full-batch gradient step on the mean binary cross-entropy, float64 (the rule every
    client implements in its own language)."""
    n = len(y)
    if hidden == 0:
        hid, w2, b2 = x, p["weight"], p["bias"]
    else:
        hid = np.tanh(x @ p["encoder/0.W"].T + p["encoder/0.b"])
        w2, b2 = p["head:W"], p["head:b"]
    z = hid @ w2[0] + b2[0]
    g = (1.0 / (1.0 + np.exp(-z)) - y) / n
    q = dict(p)
    names = ("weight", "bias") if hidden == 0 else ("head:W", "head:b")
    q[names[0]] = p[names[0]] - lr * (g @ hid)[None, :]
    q[names[1]] = p[names[1]] - lr * np.array([g.sum()])
    if hidden:
        dh = np.outer(g, w2[0]) * (1.0 - hid * hid)
        q["encoder/0.W"] = p["encoder/0.W"] - lr * (dh.T @ x)
        q["encoder/0.b"] = p["encoder/0.b"] - lr * dh.sum(axis=0)
    return q


def reference_fedavg(init, data, hidden):
    w = {k: v.astype(np.float64) for k, v in init.items()}
    for _ in range(ROUNDS):
        total = sum(len(y) for _, y in data.values())
        new = {k: np.zeros_like(v) for k, v in w.items()}
        for x, y in data.values():
            p = w
            for _ in range(EPOCHS):
                p = reference_step(p, x.astype(np.float64), y.astype(np.float64), hidden, LR)
            for k in new:
                new[k] += len(y) / total * p[k]
        w = new
    return w


@unittest.skipUnless(all([CERTS, COORDINATOR, CPP_CLIENT, C_CLIENT, PY_CLIENT]),
                     "run through ctest, which names the binaries")
class ByoModelTest(ProcessTest):
    prefix = "trib_byo_"

    def start_run(self, init_path, extra="", federated=False):
        return self.start_coordinator(f"""log_level = "info"
[run]
model = ""
initial_model = "{init_path}"
rounds = {ROUNDS}
clients_per_round = 3
min_available = 3
round_timeout_s = 60
codec = "dense"
{extra}
[fit]
epochs = {EPOCHS}
lr = {LR}
[eval]
every = 0
federated_every = {1 if federated else 0}
[output]
checkpoint_dir = "{self.path('ckpt')}"
event_log = "{self.path('events.jsonl')}"
final_model = "{self.path('final.safetensors')}"
""")

    def client_args(self, kind, name, addr, hidden, dim=DIM, data=None):
        ca, cert, key = self.client_tls(name)
        data = data or name
        x, y = self.path(data + ".x.f32"), self.path(data + ".y.f32")
        if kind == "c":
            return [C_CLIENT, addr, ca, cert, key, x, y, str(dim), str(hidden)]
        flags = ["--coordinator", addr, "--ca", ca, "--cert", cert, "--key", key,
                 "--features", x, "--labels", y, "--dim", str(dim), "--hidden", str(hidden)]
        if kind == "cpp":
            return [CPP_CLIENT, *flags]
        return [sys.executable, PY_CLIENT, *flags]

    def make_data(self, seed):
        rng = np.random.default_rng(seed)
        truth = rng.normal(size=DIM)
        data = {}
        for name, n in EXAMPLES.items():
            x = rng.normal(size=(n, DIM)).astype(np.float32)
            y = ((x @ truth + 0.5 * rng.normal(size=n)) > 0).astype(np.float32)
            x.tofile(self.path(name + ".x.f32"))
            y.tofile(self.path(name + ".y.f32"))
            data[name] = (x, y)
        return data

    def federate(self, hidden, seed):
        rng = np.random.default_rng(seed)
        init = {name: (0.3 * rng.normal(size=shape)).astype(np.float32)
                for name, shape in layout(hidden)}
        init_path = self.path("init.safetensors")
        write_safetensors(init_path, init)
        data = self.make_data(seed + 1)
        coord, addr = self.start_run(init_path, federated=True)

        # A client with another layout connects first: refused at once, with the tensor named.
        # It trains on py-client's data, with one hidden unit more: its first tensor differs.
        wrong = self.start("wrong-client", self.client_args("py", "wrong-client", addr, hidden + 1,
                                                            data="py-client"))
        self.assertEqual(wrong.wait(timeout=60), 1, self.log("wrong-client"))
        wrong_log = self.log("wrong-client")
        self.assertIn("FailedPrecondition", wrong_log)
        self.assertIn("LAYOUT_MISMATCH", wrong_log)
        first = layout(hidden)[0]
        wrong_first = layout(hidden + 1)[0]
        self.assertIn(f"tensor 0 is '{first[0]}' [{', '.join(map(str, first[1]))}] F32 in the "
                      f"run's model and '{wrong_first[0]}' "
                      f"[{', '.join(map(str, wrong_first[1]))}] F32 in the client's", wrong_log)

        clients = {"cpp-client": "cpp", "c-client": "c", "py-client": "py"}
        procs = {n: self.start(n, self.client_args(k, n, addr, hidden)) for n, k in clients.items()}
        self.assertEqual(coord.wait(timeout=120), 0, self.log("coordinator"))
        for name, p in procs.items():
            self.assertEqual(p.wait(timeout=60), 0, self.log(name))
            self.assertIn("the run is complete", self.log(name))

        # Refused at connect, visible at the default log level, and never selected.
        coordinator_log = self.log("coordinator")
        self.assertIn("refusing wrong-client", coordinator_log)
        with open(self.path("events.jsonl")) as f:
            events = [json.loads(line) for line in f]
        accepted = [e["client"] for e in events if e["event"] == "update_accepted"]
        self.assertEqual(sorted(accepted), sorted(list(clients) * ROUNDS))
        opened = [e for e in events if e["event"] == "round_opened"]
        self.assertEqual([e["selected"] for e in opened], [3] * ROUNDS)
        self.assertEqual(sum(e["event"] == "update_refused" for e in events), 0)
        # Federated evaluation works for a model the coordinator cannot run: every round, all
        # three clients evaluate (Trainer::evaluate / the C callback / Python's evaluate).
        evaluated = [e for e in events if e["event"] == "federated_evaluated"]
        self.assertEqual([(e["round"], e["clients"], e["num_examples"]) for e in evaluated],
                         [(r, 3, sum(EXAMPLES.values())) for r in range(1, ROUNDS + 1)])
        for e in evaluated:
            self.assertTrue(0.0 <= e["accuracy"] <= 1.0 and e["loss"] > 0, e)

        # The final model: the clients' names, shapes and order, and FedAvg's values.
        final = read_safetensors(self.path("final.safetensors"))
        self.assertEqual([(k, v.shape) for k, v in final.items()],
                         [(k, tuple(s)) for k, s in layout(hidden)])
        self.assertEqual(sum(v.size for v in final.values()),
                         21 if hidden == 0 else HIDDEN * DIM + 2 * HIDDEN + 1)
        expected = reference_fedavg(init, data, hidden)
        for name in final:
            np.testing.assert_allclose(final[name], expected[name], rtol=1e-4, atol=1e-5,
                                       err_msg=name)
            # And training moved the model: the check is not satisfied by the initial weights.
            self.assertGreater(np.abs(expected[name] - init[name]).max(), 1e-3, name)
        # The last checkpoint holds the same model, named the same way.
        ckpt = read_safetensors(self.path("ckpt", "checkpoint.safetensors"))
        for name in final:
            np.testing.assert_array_equal(ckpt["model." + name], final[name])

    def test_logistic_regression_of_21_floats(self):
        self.federate(hidden=0, seed=11)

    def test_two_layer_net_with_odd_tensor_names(self):
        self.federate(hidden=HIDDEN, seed=23)

    def test_a_failed_run_is_an_error_in_every_client_api(self):
        init_path = self.path("init.safetensors")
        write_safetensors(init_path, {n: np.zeros(s, np.float32) for n, s in layout(0)})
        self.make_data(5)
        # Every update claims fewer examples than the run allows: the round's only attempt fails.
        # (A client announcing more than run.max_num_examples is refused at Hello instead.)
        coord, addr = self.start_run(init_path, "max_round_attempts = 1\nmin_num_examples = 1000\n")
        clients = {"cpp-client": "cpp", "c-client": "c", "py-client": "py"}
        procs = {n: self.start(n, self.client_args(k, n, addr, 0)) for n, k in clients.items()}
        self.assertNotEqual(coord.wait(timeout=120), 0, self.log("coordinator"))
        for name, p in procs.items():
            self.assertEqual(p.wait(timeout=60), 1, self.log(name))
            out = self.log(name)
            self.assertIn("the run did not complete", out)
            self.assertIn("Aborted", out)  # TRIBUTARY_ABORTED in C: its name is printed
            self.assertIn("round 1 failed 1 attempts", out)

    def test_a_certificate_from_another_ca_ends_every_client_api_at_the_first_attempt(self):
        init_path = self.path("init.safetensors")
        write_safetensors(init_path, {n: np.zeros(s, np.float32) for n, s in layout(0)})
        self.make_data(7)
        coord, addr = self.start_run(init_path)
        # Certificates from a CA of their own, which the coordinator does not trust.
        rogue = self.path("rogue-pki")
        subprocess.run([CERTS, "init", "--dir", rogue], check=True, capture_output=True)
        clients = {"cpp-client": "cpp", "c-client": "c", "py-client": "py"}
        procs = {}
        for name, kind in clients.items():
            subprocess.run([CERTS, "client", "--id", name, "--dir", rogue], check=True,
                           capture_output=True)
            args = self.client_args(kind, name, addr, 0)
            # The same positions and flags, with the rogue certificate and key.
            args = [a.replace(f"{self.pki}/clients/", f"{rogue}/clients/") for a in args]
            procs[name] = (self.start(name, args), time.monotonic())
        for name, (p, started) in procs.items():
            # max_attempts = 20 in every example: retrying would take minutes.
            self.assertEqual(p.wait(timeout=60), 1, self.log(name))
            self.assertLess(time.monotonic() - started, 20, self.log(name))
            out = self.log(name)
            self.assertIn("PermissionDenied", out)  # TRIBUTARY_PERMISSION_DENIED's name in C
            self.assertIn("tlsv1 alert unknown ca", out)
            self.assertNotIn("reconnecting in", out)
        coord.kill()


if __name__ == "__main__":
    unittest.main(verbosity=2)
