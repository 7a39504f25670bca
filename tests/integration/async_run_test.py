#!/usr/bin/python3
"""Asynchronous aggregation (run.mode = "async", FedBuff) between real processes over mutual TLS.

1. A tributary-coordinator and five clients of the Python package (tributary.Client), four fast
   (0.2 s a task) and one ten times slower (2 s), all five training at once (run.concurrency = 5)
   and a step every two updates. The slow client never stalls the run: every step takes a small
   part of the slow client's task time, and the slow client's update, when it comes, is folded in
   with its staleness (the event log says which version it trained on and how stale it was).
2. The coordinator is killed (SIGKILL) after a step, while its next buffer is filling, and
   restarted with --resume: it goes on from the checkpoint's step and finishes the run, and the
   clients, which keep redialling, need no change.
3. Secure aggregation in cohorts: six tributary-client processes, dispatched three at a time, each
   cohort with its own session; every step is a cohort's unmasked sum, and the coordinator never
   sees a plaintext update.

Run through ctest (it names the binaries and PYTHONPATH): ctest -R AsyncAggregation -V
"""
import json
import os
import signal
import sys
import time
import unittest

import numpy as np

from process_harness import CERTS, COORDINATOR, ProcessTest, free_port, write_safetensors

CLIENT = os.environ.get("TRIBUTARY_CLIENT_BIN")

FAST_S, SLOW_S = 0.2, 2.0

# One client: adds 0.01 to every weight after `delay` seconds of "training".
CLIENT_PY = r'''
import sys, time
import numpy as np
import tributary as tb

addr, ca, cert, key, delay = sys.argv[1:6]


class Trainer(tb.Trainer):
    def get_parameters(self):
        return {"w": np.zeros(4, np.float32)}

    def fit(self, parameters, config):
        time.sleep(float(delay))
        return tb.FitResult({k: v + np.float32(0.01) for k, v in parameters.items()}, 100,
                            {"train_loss": 0.5})

    def evaluate(self, parameters, config):
        return tb.EvalResult(0.5, 0.5, 100)


options = tb.ClientOptions(coordinator=addr, ca_cert_file=ca, cert_file=cert, key_file=key,
                           num_examples=100)
options.backoff.max_attempts = 60
options.backoff.max_delay_s = 0.5
options.backoff.initial_delay_s = 0.2
try:
    tb.Client(options, Trainer()).run()
except tb.Error as e:
    print(f"client: the run did not complete: {e}", file=sys.stderr)
    sys.exit(1)
print("client: the run is complete")
'''



def read_events(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


@unittest.skipUnless(CERTS and COORDINATOR, "run through ctest, which names the binaries")
class AsyncRunTest(ProcessTest):
    prefix = "trib_async_"

    def setUp(self):
        super().setUp()
        self.init = self.path("init.safetensors")
        write_safetensors(self.init, {"w": np.zeros(4, np.float32)})
        self.script = self.path("client.py")
        with open(self.script, "w") as f:
            f.write(CLIENT_PY)

    def toml(self, steps, events, ckpt):
        return f"""log_level = "info"
[run]
model = ""
initial_model = "{self.init}"
mode = "async"
rounds = {steps}
clients_per_round = 2
concurrency = 5
buffer_size = 2
max_staleness = 200
staleness_weight = "sqrt"
min_available = 5
round_timeout_s = 30
codec = "dense"
[eval]
every = 0
[output]
event_log = "{events}"
checkpoint_dir = "{ckpt}"
final_model = "{self.path('final.safetensors')}"
"""

    def start_clients(self, addr):
        procs = []
        for i, delay in enumerate([FAST_S] * 4 + [SLOW_S]):
            name = f"{'slow' if delay == SLOW_S else 'fast'}-{i}"
            ca, cert, key = self.client_tls(name)
            procs.append(self.start(name, [sys.executable, self.script, addr, ca, cert, key,
                                           str(delay)]))
        return procs

    def test_a_client_ten_times_slower_never_stalls_the_run(self):
        steps = 30
        events = self.path("events.jsonl")
        coord, addr = self.start_coordinator(self.toml(steps, events, self.path("ckpt")))
        start = time.monotonic()
        self.start_clients(addr)
        rc = coord.wait(timeout=120)
        wall = time.monotonic() - start
        log = self.log("coordinator")
        self.assertEqual(rc, 0, log[-3000:])
        evs = read_events(events)
        closed = [e for e in evs if e["event"] == "round_closed"]
        self.assertEqual(len(closed), steps, log[-3000:])
        durations = [c["duration_s"] for c in closed]
        slow = [e for e in evs if e["event"] == "update_accepted" and e["client"] == "slow-4"]
        print(f"{steps} steps in {wall:.1f} s wall; longest step {max(durations):.2f} s "
              f"(the slow client's task takes {SLOW_S} s); slow client's accepted updates: "
              + ", ".join(f"trained on v{e['trained_on']}, staleness {e['staleness']}, weight "
                          f"{e['staleness_weight']:.3f}" for e in slow))
        for c in closed:
            self.assertIn("staleness", c)
            self.assertEqual(c["accepted"], 2)
        # No step waits for the slow client: each is a fraction of its task time.
        self.assertLess(max(durations), SLOW_S / 2, durations)
        # It took part: its update was folded in, stale, and discounted by 1/sqrt(1 + staleness).
        self.assertGreaterEqual(len(slow), 1, log[-3000:])
        for e in slow:
            self.assertGreaterEqual(e["staleness"], 2)
            self.assertAlmostEqual(e["staleness_weight"], 1 / np.sqrt(1 + e["staleness"]),
                                   places=6)
        # The final model: 30 steps of the mean of two discounted +0.01 deltas, each at most 0.01.
        with open(self.path("final.safetensors"), "rb") as f:
            import struct
            n = struct.unpack("<Q", f.read(8))[0]
            f.read(n)
            w = np.frombuffer(f.read(), "<f4")
        self.assertTrue(np.all(w > 0.0) and np.all(w <= steps * 0.01 + 1e-6), w)

    def test_sigkill_mid_buffer_then_resume_finishes_the_run(self):
        steps = 24
        port = free_port()
        events, ckpt = self.path("events.jsonl"), self.path("ckpt")
        toml = self.toml(steps, events, ckpt)
        coord, addr = self.start_coordinator(toml, port=port, name="first")
        self.start_clients(addr)
        # Kill it once a step is checkpointed and an update of the next buffer is in.
        deadline = time.monotonic() + 60
        while True:
            self.assertLess(time.monotonic(), deadline, self.log("first")[-3000:])
            evs = read_events(events)
            closed = [i for i, e in enumerate(evs) if e["event"] == "round_closed"]
            if len(closed) >= 4 and any(e["event"] == "update_accepted"
                                        for e in evs[closed[-1] + 1:]):
                break
            time.sleep(0.02)
        coord.send_signal(signal.SIGKILL)
        coord.wait(timeout=10)
        steps_before = len([e for e in read_events(events) if e["event"] == "round_closed"])
        print(f"killed after {steps_before} steps, mid-buffer")
        second, _ = self.start_coordinator(toml, port=port, name="second", args=["--resume"])
        rc = second.wait(timeout=120)
        log = self.log("second")
        self.assertEqual(rc, 0, log[-3000:])
        evs = read_events(events)
        started = [e for e in evs if e["event"] == "run_started"]
        self.assertEqual(len(started), 2)
        resumed_at = started[1]["rounds_done"]
        print(f"resumed at step {resumed_at} (its checkpoint's); ran to {steps}")
        # Every step is checkpointed, and the driver writes a step's checkpoint before its
        # round_closed event (coordinator/run_driver.cc): the resume starts from the last step
        # logged before the kill, or from the next one when the kill fell between that step's
        # checkpoint and its event (CI saw it: 4 steps logged, resumed at 5). Never from earlier.
        self.assertIn(resumed_at, (steps_before, steps_before + 1))
        written = [e["round"] for e in evs[:evs.index(started[1])]
                   if e["event"] == "checkpoint_written" and not e.get("error")]
        # A checkpoint whose event was logged is on disk: the resume starts from it or a later one.
        self.assertIn(resumed_at, (written[-1], written[-1] + 1), written[-3:])
        finished = [e for e in evs if e["event"] == "run_finished"]
        self.assertEqual(len(finished), 1)
        self.assertTrue(finished[0]["ok"], finished[0])
        self.assertEqual(finished[0]["rounds_done"], steps)
        after = [e for e in evs[evs.index(started[1]):] if e["event"] == "round_closed"]
        self.assertEqual([e["round"] for e in after], list(range(resumed_at + 1, steps + 1)))


    @unittest.skipUnless(CLIENT, "run through ctest, which names tributary-client")
    def test_secure_aggregation_cohorts_between_real_processes(self):
        steps, clients = 4, 6
        events = self.path("secagg.jsonl")
        coord, addr = self.start_coordinator(f"""[run]
model = "mlp"
mode = "async"
rounds = {steps}
clients_per_round = 3
concurrency = {clients}
buffer_size = 3
min_available = {clients}
round_timeout_s = 60
[fit]
epochs = 1
lr = 0.05
[eval]
every = 0
[data]
dataset = "synthetic"
test_examples = 200
[secagg]
enabled = true
clip = 0.5
quant_bits = 16
[output]
event_log = "{events}"
final_model = "{self.path('secagg.safetensors')}"
""", name="secagg")
        procs = []
        for i in range(clients):
            ca, cert, key = self.client_tls(f"edge-{i}")
            procs.append(self.start(f"secagg-edge-{i}", [
                CLIENT, "--coordinator", addr, "--ca", ca, "--cert", cert, "--key", key,
                "--set", "run.model=mlp", "--num-clients", str(clients), "--client-index", str(i),
                "--log-level", "warn", "--set", "data.dataset=synthetic",
                "--set", "data.train_examples=1200", "--set", "data.test_examples=200"]))
        self.assertEqual(coord.wait(timeout=240), 0, self.log("secagg")[-3000:])
        evs = read_events(events)
        closed = [e for e in evs if e["event"] == "round_closed"]
        print("secure cohorts: " + "; ".join(
            f"step {e['round']}: {e['accepted']} masked inputs, staleness max "
            f"{e['staleness']['max']}, {e['bytes_up']} bytes up" for e in closed))
        self.assertEqual([e["round"] for e in closed], list(range(1, steps + 1)))
        for e in closed:
            self.assertEqual(e["accepted"], 3, e)  # one cohort's survivors: all three
            self.assertIn("staleness", e)
        # Only masked sums reached the coordinator: no plaintext update was accepted.
        self.assertFalse([e for e in evs if e["event"] == "update_accepted"])
        self.assertTrue(os.path.exists(self.path("secagg.safetensors")))


if __name__ == "__main__":
    unittest.main(verbosity=2)
