"""ProcessTest: a unittest base for runs of real processes (a tributary-coordinator and its
clients) over mutual TLS on loopback, for the Python integration tests.

Each test gets a temporary directory with a PKI (a CA and the coordinator's certificate; client
certificates on demand), starts processes whose output goes to <name>.log there, and starts the
coordinator from a TOML text with [tls], [net] and output.ready_file filled in. The directory is
removed after a passing test (kept after a failing one, or always with TRIBUTARY_TEST_KEEP=1).
The binaries come from the environment ctest sets: TRIBUTARY_CERTS_BIN, TRIBUTARY_COORDINATOR_BIN.
"""
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

CERTS = os.environ.get("TRIBUTARY_CERTS_BIN")
COORDINATOR = os.environ.get("TRIBUTARY_COORDINATOR_BIN")
CLIENT = os.environ.get("TRIBUTARY_CLIENT_BIN")

# The clients' data for a cnn run on synthetic 28x28 images (CNN_RUN_TOML): --set values.
CNN_CLIENT_DATA = ["run.model=cnn", "data.dataset=synthetic", "data.train_examples=3000",
                   "data.test_examples=200", "data.synthetic.height=28", "data.synthetic.width=28"]


def read_safetensors(path):
    """The tensors of a safetensors file (F32 only) as {name: flat float32 numpy array}."""
    import json
    import struct

    import numpy as np
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        begin, end = t["data_offsets"]
        out[name] = np.frombuffer(data[begin:end], "<f4")
    return out


def write_safetensors(path, tensors):
    """Writes {name: array} in the safetensors format (8-byte header length, JSON header, F32
    data in order): a run.initial_model for the coordinator."""
    import json
    import struct

    import numpy as np
    header, offset, blobs = {}, 0, []
    for name, arr in tensors.items():
        b = np.ascontiguousarray(arr, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(b)]}
        offset += len(b)
        blobs.append(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def ephemeral_ports():
    """The kernel's range for ports it picks itself (connect() without bind, bind to port 0)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(v) for v in f.read().split())
            return low, high
    except (OSError, ValueError):
        return 32768, 60999


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago, for a coordinator that must come back
    on the same port. It is drawn below the kernel's ephemeral range: a port from bind(0) would be
    in that range, where any test's outgoing connection or listener on port 0 could take it before
    the coordinator binds it (EADDRINUSE, a failed test). Below it, only another test's
    free_port() could, one draw in thousands."""
    low, _ = ephemeral_ports()
    rng = random.SystemRandom()
    for _ in range(100):
        port = rng.randrange(max(1024, low - 12000), low)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:  # a crowded machine: any port the kernel gives
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cnn_run_toml(rounds, clients):
    """The coordinator's [run], [fit], [eval] and [data] for the cnn on synthetic 28x28 images:
    rounds of about a second on 2 cores (long enough to be watched or killed in), every client in
    every round, server-side evaluation after each. Tables of the caller's may follow."""
    return f"""[run]
model = "cnn"
rounds = {rounds}
clients_per_round = {clients}
min_available = {clients}
min_completed = {clients}
round_timeout_s = 120
[fit]
epochs = 1
[eval]
every = 1
[data]
dataset = "synthetic"
test_examples = 200
synthetic.height = 28
synthetic.width = 28
"""


class ProcessTest(unittest.TestCase):
    prefix = "trib_it_"

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix=self.prefix)
        self.pki = os.path.join(self.dir, "pki")
        self.certs("init")
        self.certs("server", "--host", "localhost", "--ip", "127.0.0.1")
        self.procs, self.logs = [], []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for f in self.logs:
            f.close()

    def run(self, result=None):
        # The directory goes after tearDown, once the result says whether this test failed.
        result = super().run(result)
        if not hasattr(self, "dir"):  # skipped before setUp made it
            return result
        failed = result is not None and any(
            t is self for t, _ in result.failures + result.errors)
        if not failed and not os.environ.get("TRIBUTARY_TEST_KEEP"):
            shutil.rmtree(self.dir, ignore_errors=True)
        else:
            print(f"kept {self.dir}", file=sys.stderr)
        return result

    def certs(self, *args):
        subprocess.run([CERTS, *args, "--dir", self.pki], check=True, capture_output=True)

    def client_tls(self, name):
        """(ca, cert, key) of client `name`, made on first use."""
        if not os.path.exists(os.path.join(self.pki, "clients", name + ".crt")):
            self.certs("client", "--id", name)
        return (f"{self.pki}/ca.crt", f"{self.pki}/clients/{name}.crt",
                f"{self.pki}/clients/{name}.key")

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def log(self, name):
        with open(self.path(name + ".log")) as f:
            return f.read()

    def start(self, name, args):
        f = open(self.path(name + ".log"), "w")
        self.logs.append(f)
        p = subprocess.Popen(args, stdout=f, stderr=subprocess.STDOUT)
        self.procs.append(p)
        return p

    def start_monitored_cnn_run(self, rounds, clients, token, linger_s=0):
        """Starts the coordinator of a cnn_run_toml run with its monitor on a free port of
        127.0.0.1 behind `token` (serving linger_s seconds after the run), and its event log at
        events.jsonl; returns (process, "host:port" of the clients' listener, the monitor's port,
        the event log's path)."""
        port = free_port()
        events = self.path("events.jsonl")
        coord, addr = self.start_coordinator(cnn_run_toml(rounds, clients) + f"""[monitor]
listen = "127.0.0.1:{port}"
token = "{token}"
linger_s = {linger_s}
[output]
event_log = "{events}"
""")
        return coord, addr, port, events

    def start_cnn_clients(self, addr, n, *extra, only=None):
        """Starts n tributary-client processes, edge-0 .. edge-<n-1> (or those of them whose index
        is in `only`), for a cnn_run_toml run at `addr`, each with its share of the data and one
        thread; `extra` goes to each one's command line. Returns the processes."""
        procs = []
        for i in range(n) if only is None else only:
            ca, cert, key = self.client_tls(f"edge-{i}")
            procs.append(self.start(f"edge-{i}", [
                CLIENT, "--coordinator", addr, "--ca", ca, "--cert", cert, "--key", key,
                "--num-clients", str(n), "--client-index", str(i), "--threads", "1",
                *[a for kv in CNN_CLIENT_DATA for a in ("--set", kv)], *extra]))
        return procs

    def start_mlp_clients(self, addr, n, data, prefix=""):
        """Starts n tributary-client processes, <prefix>edge-0 .. edge-<n-1>, training the mlp at
        `addr`, each on its share of `data` (--set values such as "data.dataset=synthetic"),
        logging warnings only. Returns the processes."""
        procs = []
        for i in range(n):
            ca, cert, key = self.client_tls(f"edge-{i}")
            procs.append(self.start(f"{prefix}edge-{i}", [
                CLIENT, "--coordinator", addr, "--ca", ca, "--cert", cert, "--key", key,
                "--set", "run.model=mlp", "--num-clients", str(n), "--client-index", str(i),
                "--log-level", "warn", *[a for kv in data for a in ("--set", kv)]]))
        return procs

    def start_coordinator(self, toml, host="127.0.0.1", name="coordinator", port=0, args=()):
        """Starts the coordinator on `toml` plus this test's TLS files, `port` on `host` (0: a free
        one) and a ready file (given as --set, so `toml` need not mention them), with `args` added
        to its command line; waits until it listens and returns (process, "host:port"). Its output
        goes to <name>.log; its checkpoints, event log and final model to <name>-out when `toml`
        names no output.checkpoint_dir."""
        ready = self.path(name + ".ready")
        if os.path.exists(ready):
            os.remove(ready)  # a coordinator started earlier in this test left its own
        with open(self.path(name + ".toml"), "w") as f:
            f.write(toml)
        sets = {"net.listen": f"{host}:{port}", "net.heartbeat_interval_s": "1",
                "tls.ca": f"{self.pki}/ca.crt", "tls.cert": f"{self.pki}/server.crt",
                "tls.key": f"{self.pki}/server.key", "output.ready_file": ready}
        # Outputs in this test's directory unless `toml` places them: the default,
        # runs/coordinator under the working directory, is shared by every test ctest runs at
        # once, and a second coordinator there is refused (its lock, docs/operations.md).
        if "checkpoint_dir" not in toml:
            sets["output.checkpoint_dir"] = self.path(name + "-out")
        command = [COORDINATOR, "--config", self.path(name + ".toml"), *args]
        for key, value in sets.items():
            command += ["--set", f"{key}={value}"]
        coord = self.start(name, command)
        for _ in range(300):
            if os.path.exists(ready) or coord.poll() is not None:
                break
            time.sleep(0.1)
        self.assertTrue(os.path.exists(ready), self.log(name))
        with open(ready) as f:  # its first line; "monitor=host:port" may follow
            return coord, f.readline().strip()
