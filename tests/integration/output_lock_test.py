#!/usr/bin/python3
"""Two coordinators cannot share one output.checkpoint_dir (issue 28, item 4): a real
tributary-coordinator runs 3 rounds of an mlp with two tributary-client processes; a second one,
started on the same checkpoint directory (its own port, the default event log and final model in
that directory), must exit non-zero within seconds, naming the first's pid and the directory, and
write nothing there. The first then finishes, and every checkpoint it kept, its event log and its
run history record are its own: one RunStarted, and the checkpoints' run_uid is its run's.

Before the fix the second one started and listened (the test's 20 s wait for it to exit fails),
appended its own RunStarted to the shared event log, and its checkpoints would have interleaved.

tributary-sim's sim.report_dir is locked the same way: a second process holding it makes
tributary-sim refuse to start, naming that process's pid.
"""
import fcntl
import json
import os
import socket
import sqlite3
import struct
import subprocess
import time
import unittest

from process_harness import CERTS, CLIENT, COORDINATOR, ProcessTest

SIM = os.environ.get("TRIBUTARY_SIM_BIN")
ROUNDS = 3
DATA = ["data.dataset=synthetic", "data.train_examples=2000", "data.test_examples=200"]


def metadata(path):
    """A safetensors file's metadata."""
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(size))["__metadata__"]


@unittest.skipUnless(all([CERTS, COORDINATOR, CLIENT]), "run through ctest, which names the binaries")
class OutputLockTest(ProcessTest):
    prefix = "trib_lock_"

    def toml(self):
        return f"""[run]
model = "mlp"
rounds = {ROUNDS}
clients_per_round = 2
min_available = 2
round_timeout_s = 60
[fit]
epochs = 1
[eval]
every = 0
[data]
dataset = "synthetic"
test_examples = 200
[output]
checkpoint_dir = "{self.path('ck')}"
history = "{self.path('history.db')}"
"""

    def test_a_second_coordinator_on_one_checkpoint_dir_refuses_to_start(self):
        ck = self.path("ck")
        first, addr = self.start_coordinator(self.toml(), name="first")

        # The second: same config, its own port and ready file.
        with open(self.path("second.toml"), "w") as f:
            f.write(self.toml())
        command = [COORDINATOR, "--config", self.path("second.toml"),
                   "--set", "net.listen=127.0.0.1:0",
                   "--set", f"tls.ca={self.pki}/ca.crt", "--set", f"tls.cert={self.pki}/server.crt",
                   "--set", f"tls.key={self.pki}/server.key",
                   "--set", f"output.ready_file={self.path('second.ready')}"]
        start = time.monotonic()
        second = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.procs.append(second)
        try:
            output, _ = second.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            second.kill()
            output, _ = second.communicate()
            self.fail("the second coordinator on the same checkpoint dir did not exit within 20 s "
                      f"(ready file written: {os.path.exists(self.path('second.ready'))}):\n{output}")
        seconds = time.monotonic() - start
        print(f"second coordinator: exit {second.returncode} after {seconds:.2f} s: {output.strip()}")
        self.assertNotEqual(second.returncode, 0, output)
        self.assertLess(seconds, 10.0)
        self.assertIn(f"output.checkpoint_dir {ck} is in use by another run", output)
        self.assertIn(f"pid {first.pid} on host {socket.gethostname()}", output)
        self.assertIn(f"{ck}/LOCK is locked", output)
        self.assertFalse(os.path.exists(self.path("second.ready")))

        # The first runs to its end with two clients.
        clients = self.start_mlp_clients(addr, 2, DATA)
        self.assertEqual(first.wait(timeout=120), 0, self.log("first"))
        for i, c in enumerate(clients):
            self.assertEqual(c.wait(timeout=60), 0, self.log(f"edge-{i}"))

        # Its event log holds one run: its own.
        with open(os.path.join(ck, "events.jsonl")) as f:
            events = [json.loads(line) for line in f]
        started = [e for e in events if e["event"] == "run_started"]
        self.assertEqual(len(started), 1, started)
        uid = started[0]["run_uid"]
        self.assertRegex(uid, r"^[0-9a-f]{32}$")
        # Every checkpoint it kept is its own, newest first.
        kept = [os.path.join(ck, "checkpoint.safetensors")] + [
            os.path.join(ck, f"checkpoint.{g}.safetensors") for g in (1, 2)]
        rounds = [int(metadata(p)["rounds_done"]) for p in kept]
        uids = [metadata(p)["run_uid"] for p in kept]
        print(f"checkpoints: rounds {rounds}, run_uid {set(uids)} (the run's: {uid})")
        self.assertEqual(rounds, [3, 2, 1])
        self.assertEqual(uids, [uid] * 3)
        # The lock file names the first, and its history record is one run with that uid.
        with open(os.path.join(ck, "LOCK")) as f:
            self.assertEqual(json.load(f)["pid"], first.pid)
        if os.path.exists(self.path("history.db")):  # a build with the run history
            db = sqlite3.connect(self.path("history.db"))
            runs = db.execute("SELECT id, run_uid, status, rounds_done, pid FROM runs").fetchall()
            db.close()
            print(f"history: {runs}")
            self.assertEqual(runs, [(1, uid, "finished", ROUNDS, first.pid)])

    @unittest.skipUnless(SIM, "run through ctest, which names tributary-sim")
    def test_a_second_simulation_on_one_report_dir_refuses_to_start(self):
        report = self.path("report")
        os.makedirs(report)
        with open(os.path.join(report, "LOCK"), "w") as holder:
            fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
            holder.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                     "program": "python3", "since": int(time.time())}))
            holder.flush()
            out = subprocess.run([SIM, "--set", f"sim.report_dir={report}", "--set", "run.rounds=1",
                                  "--set", "data.num_clients=4", "--set", "run.clients_per_round=2",
                                  "--set", "data.dataset=synthetic", "--set", "data.train_examples=2000",
                                  "--set", "data.test_examples=200", "--set", "run.model=mlp",
                                  "--set", "output.history=none"],
                                 capture_output=True, text=True, timeout=60)
            print(f"tributary-sim: exit {out.returncode}: {out.stderr.strip()}")
            self.assertNotEqual(out.returncode, 0, out.stdout + out.stderr)
            self.assertIn(f"sim.report_dir {report} is in use by another run (python3, pid "
                          f"{os.getpid()} on host {socket.gethostname()}", out.stderr)
            self.assertFalse(os.path.exists(os.path.join(report, "events.jsonl")))


if __name__ == "__main__":
    unittest.main(verbosity=2)
