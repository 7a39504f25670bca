#!/usr/bin/python3
"""The run history across a coordinator killed mid-round: a real tributary-coordinator with
output.history in the test's directory, two real tributary-client processes over mutual TLS, and
the `tributary runs` CLI reading the history as the run goes. The config sets the secret
dp.noise_seed (without DP, so it changes nothing), which the history must not hold.

The coordinator is SIGKILLed while a round is open; `runs show --json` must then read the run as
interrupted with its closed rounds. The coordinator restarted with --resume and the same config
finishes the run, and the history holds ONE run, finished, resumed once, with every round. `runs log
--follow` on the live resumed run exits by itself when the run ends. Clients refused at Hello are
named in the event log and the history.
"""
import json
import os
import signal
import struct
import subprocess
import time
import unittest

from process_harness import CERTS, CLIENT, COORDINATOR, ProcessTest, cnn_run_toml, free_port

TRIBUTARY = os.environ.get("TRIBUTARY_BIN")
ROUNDS = 5
CLIENTS = 2


def checkpoint_round(path):
    """The rounds_done a checkpoint file says it holds (its safetensors metadata)."""
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
    return int(header["__metadata__"]["rounds_done"])


@unittest.skipUnless(all([CERTS, COORDINATOR, CLIENT, TRIBUTARY]),
                     "run through ctest, which names the binaries")
class HistoryTest(ProcessTest):
    prefix = "trib_history_"

    def setUp(self):
        super().setUp()
        self.db = self.path("state", "history.db")
        self.port = free_port()

    def coordinator(self, name, resume):
        """Starts the coordinator on a fixed port (the clients redial it after the kill) and waits
        until it listens."""
        toml = 'log_level = "info"\n' + cnn_run_toml(ROUNDS, CLIENTS) + f"""[output]
checkpoint_dir = "{self.path('ck')}"
event_log = "{self.path('events.jsonl')}"
history = "{self.db}"
[dp]
noise_seed = 90210
"""
        coord, _ = self.start_coordinator(toml, name=name, port=self.port,
                                          args=["--resume"] if resume else [])
        return coord

    def clients(self):
        return self.start_cnn_clients(f"127.0.0.1:{self.port}", CLIENTS,
                                      "--set", "backoff.initial_s=0.1", "--set", "backoff.max_s=0.5",
                                      "--set", "net.connect_timeout_s=2")

    def runs(self, *args, check=True):
        """`tributary runs ARGS --db <this test's history>`; its CompletedProcess."""
        out = subprocess.run([TRIBUTARY, "runs", *args, "--db", self.db], capture_output=True,
                             text=True, timeout=60)
        if check:
            self.assertEqual(out.returncode, 0, out.stderr)
        return out

    def runs_json(self, *args):
        return json.loads(self.runs(*args, "--json").stdout)

    def test_a_killed_and_resumed_run_is_one_record(self):
        coord = self.coordinator("first", resume=False)
        clients = self.clients()

        # Wait for a round to have closed and the next one to be open, then kill the coordinator.
        deadline = time.time() + 240
        run_id = None
        while time.time() < deadline and coord.poll() is None:
            listed = self.runs("ls", "--json", check=False)  # fails until the schema is in
            if listed.returncode == 0:
                runs = json.loads(listed.stdout)
                if runs:
                    run_id = runs[0]["id"]
                    show = self.runs_json("show", str(run_id))
                    open_rounds = [r for r in show["rounds"] if r["closed_at"] is None]
                    if show["rounds_done"] >= 1 and open_rounds:
                        break
            time.sleep(0.05)
        self.assertIsNone(coord.poll(), "the run ended before it could be killed: " +
                          self.log("first"))
        coord.send_signal(signal.SIGKILL)
        coord.wait()
        self.assertIn(f"history: run {run_id} in {self.db}", self.log("first"))

        # What the killed coordinator left: the run, interrupted, with its closed rounds.
        show = self.runs_json("show", str(run_id))
        self.assertEqual(show["status"], "interrupted")
        self.assertEqual(show["recorded_status"], "running")
        self.assertEqual(show["pid"], coord.pid)
        self.assertGreaterEqual(show["rounds_done"], 1)
        self.assertLess(show["rounds_done"], ROUNDS)
        self.assertEqual(show["checkpoint_dir"], os.path.realpath(self.path("ck")))
        closed = [r for r in show["rounds"] if r["closed_at"] is not None]
        self.assertEqual([r["round"] for r in closed], list(range(1, show["rounds_done"] + 1)))
        self.assertIn("interrupted", self.runs("show", str(run_id)).stdout)
        self.assertIn("interrupted", self.runs("ls").stdout)

        # The restart resumes the same run record; `runs log --follow` follows it to its end.
        coord = self.coordinator("resumed", resume=True)
        follow = subprocess.Popen([TRIBUTARY, "runs", "log", str(run_id), "--follow", "--json",
                                   "--db", self.db], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        self.assertEqual(coord.wait(timeout=300), 0, self.log("resumed"))
        followed, errors = follow.communicate(timeout=30)
        self.assertEqual(follow.returncode, 0, errors)
        for c in clients:
            try:
                c.wait(timeout=60)
            except subprocess.TimeoutExpired:
                c.terminate()
        followed = [json.loads(line) for line in followed.splitlines()]
        self.assertEqual(followed[-1]["event"], "run_finished")
        self.assertIn(f"history: run {run_id} in {self.db} (resumed once)", self.log("resumed"))

        runs = self.runs_json("ls")
        self.assertEqual(len(runs), 1, runs)
        run = runs[0]
        self.assertEqual(run["id"], run_id)
        self.assertEqual(run["status"], "finished")
        self.assertEqual(run["resumes"], 1)
        self.assertEqual(run["rounds_done"], ROUNDS)
        self.assertEqual(run["rounds_total"], ROUNDS)
        self.assertEqual(run["producer"], "tributary-coordinator")
        self.assertEqual(run["config"]["output.history"], self.db)
        self.assertEqual(run["config"]["run.rounds"], ROUNDS)
        # dp.noise_seed is a secret (whoever knows it can subtract the noise): not recorded.
        self.assertEqual(run["config"]["dp.noise_seed"], "<redacted>")
        self.assertNotIn("90210", json.dumps(run))
        self.assertTrue(os.path.exists(run["final_model"]), run["final_model"])
        show = self.runs_json("show", str(run_id))
        self.assertEqual([r["round"] for r in show["rounds"]], list(range(1, ROUNDS + 1)))
        for r in show["rounds"]:
            self.assertIsNotNone(r["closed_at"], r)
            self.assertEqual(r["accepted"], CLIENTS, r)
            self.assertGreater(r["bytes_up"], 0, r)
            self.assertIsNotNone(r["eval_accuracy"], r)
        # Where each round's checkpoint is now: the newest three (output.keep_checkpoints), older
        # ones deleted.
        ck = os.path.realpath(self.path("ck"))
        self.assertEqual([r["checkpoint_path"] for r in show["rounds"]],
                         [""] * (ROUNDS - 3) + [f"{ck}/checkpoint.2.safetensors",
                                                f"{ck}/checkpoint.1.safetensors",
                                                f"{ck}/checkpoint.safetensors"])
        for r in show["rounds"][-3:]:
            self.assertEqual(checkpoint_round(r["checkpoint_path"]), r["round"], r)

        # The events of both processes, in one sequence: two starts, the second resumed.
        events = [json.loads(line) for line in self.runs("log", str(run_id), "--json")
                  .stdout.splitlines()]
        self.assertEqual([e["seq"] for e in events], list(range(1, len(events) + 1)))
        starts = [e for e in events if e["event"] == "run_started"]
        self.assertEqual(len(starts), 2)
        self.assertEqual(starts[0]["resumed_from"], "")
        self.assertNotEqual(starts[1]["resumed_from"], "")
        # One run: the resumed process kept the killed one's run_uid (from its checkpoint).
        self.assertRegex(starts[0]["run_uid"], r"^[0-9a-f]{32}$")
        self.assertEqual(starts[1]["run_uid"], starts[0]["run_uid"])
        self.assertEqual(events[-1]["event"], "run_finished")
        self.assertEqual(followed, events[-len(followed):])
        text = self.runs("log", str(run_id)).stdout
        self.assertIn("run_finished", text)

        # Clear errors, and a reader never creates a database.
        missing = self.runs("show", "999", check=False)
        self.assertEqual(missing.returncode, 1)
        self.assertIn("no run 999", missing.stderr)
        nowhere = self.path("nowhere.db")
        out = subprocess.run([TRIBUTARY, "runs", "ls", "--db", nowhere], capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(out.returncode, 1)
        self.assertIn("there is no run history at " + nowhere, out.stderr)
        self.assertFalse(os.path.exists(nowhere))

    def test_clients_refused_at_hello_are_named_in_the_event_log_and_the_history(self):
        """Issue 27, item 5: of two clients refused at Hello from one address, the log (rate-limited
        per reason and address) names only the first. The event log and the history name both,
        with the reason, while the coordinator still waits for clients it can admit."""
        events_path = self.path("events.jsonl")
        toml = cnn_run_toml(ROUNDS, CLIENTS) + f"""[output]
checkpoint_dir = "{self.path('ck')}"
event_log = "{events_path}"
history = "{self.db}"
"""
        coord, addr = self.start_coordinator(toml)
        # Clients of another model (an mlp, not the run's cnn): refused for their layout.
        self.start_cnn_clients(addr, CLIENTS, "--set", "run.model=mlp")
        wanted = {f"edge-{i}" for i in range(CLIENTS)}

        def refused_in(events):
            return {e["client"]: e for e in events if e["event"] == "client_refused"}

        deadline = time.time() + 60
        logged = {}
        while time.time() < deadline and not wanted <= logged.keys():
            with open(events_path) as f:
                logged = refused_in(json.loads(line) for line in f if line.strip())
            time.sleep(0.1)
        self.assertEqual(wanted - logged.keys(), set(), self.log("coordinator"))
        for name in wanted:
            e = logged[name]
            self.assertEqual(e["address"], "127.0.0.1", e)
            self.assertEqual(e["code"], "LAYOUT_MISMATCH", e)
            self.assertIn("the client's model layout is not this run's", e["reason"])
            self.assertGreaterEqual(e["count"], 1, e)
        # The history has them too, committed as they came: the run is still waiting.
        self.assertIsNone(coord.poll())
        run_id = self.runs_json("ls")[0]["id"]
        recorded = refused_in(json.loads(line) for line in
                              self.runs("log", str(run_id), "--json").stdout.splitlines())
        self.assertEqual(wanted - recorded.keys(), set(), recorded)
        for name in wanted:
            self.assertEqual(recorded[name]["code"], "LAYOUT_MISMATCH")
        self.assertIn("client_refused", self.runs("log", str(run_id)).stdout)
        coord.send_signal(signal.SIGTERM)
        self.assertEqual(coord.wait(timeout=60), 0, self.log("coordinator"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
