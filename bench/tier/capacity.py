#!/usr/bin/python3
"""Capacity of one process, with and without the aggregation tier (docs/results.md).

Runs a real tributary-coordinator (and tributary-aggregator processes) with fleet_load's clients
(bench/tier/fleet_load.cc: many mutual-TLS clients in one process, each with its own certificate,
answering tasks at once with a dense update of the run's model, one tensor of --floats floats),
all on this machine over loopback, and prints:

  idle    N clients connected, no round: the coordinator's RSS per client, joins per second, and
          the coordinator's CPU while they sit idle (heartbeats every --heartbeat-s);
  rounds  N connected, rounds of K clients (K = 100 and 1,000): round seconds (median), and the
          coordinator's CPU per round;
  tier    the same through coordinator + A aggregators (each process's RSS per client it holds);
  flat    rounds of 100 through the tier as the clients below it grow (--flat): the coordinator's
          CPU per round should stay flat.

Usage: bench/tier/capacity.py [--build build/release] [--clients 1000] [--floats 10000]
       [--aggregators 4] [--rounds 20] [--round-sizes 100,1000] [--flat 250,500,1000,2000]
       [--only idle,rounds,tier,flat] [--heartbeat-s 5] [--idle-s 10] [--keep]
A run whose rounds do not all close with every selected client's update fails (exit 1).
The harness and the servers share the machine's cores, so the figures are a floor.
"""
import argparse
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

TICK = os.sysconf("SC_CLK_TCK")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


def write_model(path, floats):
    header = json.dumps({"w": {"dtype": "F32", "shape": [floats],
                               "data_offsets": [0, 4 * floats]}}).encode()
    header += b" " * (-len(header) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + b"\0" * (4 * floats))


class Bench:
    def __init__(self, args):
        self.a = args
        self.dir = tempfile.mkdtemp(prefix="trib_capacity_")
        self.pki = os.path.join(self.dir, "pki")
        self.bin = lambda *p: os.path.join(args.build, *p)
        self.certs("init")
        self.certs("server", "--host", "localhost", "--ip", "127.0.0.1")
        self.model = os.path.join(self.dir, "init.safetensors")
        write_model(self.model, args.floats)
        self.procs = []
        self.count = 0

    def certs(self, *args):
        subprocess.run([self.bin("crypto", "tributary-certs"), *args, "--dir", self.pki],
                       check=True, capture_output=True)

    def start(self, name, argv):
        log = open(os.path.join(self.dir, name + ".log"), "w")
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, text=True)
        self.procs.append(p)
        return p

    def wait_file(self, path, proc, what, timeout=60):
        deadline = time.monotonic() + timeout
        while not os.path.exists(path):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not start: see {self.dir}")
            time.sleep(0.05)
        with open(path) as f:
            return f.readline().strip()

    def coordinator(self, name, rounds, per_round, min_available):
        out = os.path.join(self.dir, name)
        toml = os.path.join(self.dir, name + ".toml")
        with open(toml, "w") as f:
            f.write(f"""log_level = "warn"
[run]
model = ""
initial_model = "{self.model}"
rounds = {rounds}
clients_per_round = {per_round}
min_available = {min_available}
round_timeout_s = 300
codec = "dense"
[eval]
every = 0
[output]
history = "none"
checkpoint_dir = "{out}"
""")
        ready = os.path.join(self.dir, name + ".ready")
        p = self.start(name, [self.bin("coordinator", "tributary-coordinator"), "--config", toml,
                              "--set", "net.listen=127.0.0.1:0",
                              "--set", f"net.heartbeat_interval_s={self.a.heartbeat_s}",
                              "--set", f"tls.ca={self.pki}/ca.crt",
                              "--set", f"tls.cert={self.pki}/server.crt",
                              "--set", f"tls.key={self.pki}/server.key",
                              "--set", f"output.ready_file={ready}"])
        return p, self.wait_file(ready, p, name), os.path.join(out, "events.jsonl")

    def aggregators(self, name, coordinator, n):
        out = []
        for g in range(n):
            agg = f"{name}-agg-{g}"
            if not os.path.exists(os.path.join(self.pki, "aggregators", agg + ".crt")):
                self.certs("aggregator", "--id", agg, "--host", "localhost", "--ip", "127.0.0.1")
            ready = os.path.join(self.dir, agg + ".ready")
            p = self.start(agg, [self.bin("aggregator", "tributary-aggregator"),
                                 "--coordinator", coordinator, "--listen", "127.0.0.1:0",
                                 "--ca", f"{self.pki}/ca.crt",
                                 "--cert", f"{self.pki}/aggregators/{agg}.crt",
                                 "--key", f"{self.pki}/aggregators/{agg}.key",
                                 "--heartbeat-s", str(self.a.heartbeat_s),
                                 "--log-level", "warn", "--ready-file", ready])
            out.append((p, self.wait_file(ready, p, agg)))
        return out

    def fleet(self, name, endpoints, n):
        log = os.path.join(self.dir, name + ".log")
        p = self.start(name, [self.bin("bench", "tier", "fleet_load"), "--coordinator",
                              ",".join(endpoints), "--ca-dir", self.pki, "--clients", str(n),
                              "--floats", str(self.a.floats), "--prefix", f"{name}-",
                              "--report-s", "5"])
        deadline = time.monotonic() + 600
        while True:
            with open(log) as f:
                for line in f:
                    if line.startswith("fleet_load: joined"):
                        return p, float(line.split("(")[1].split()[0])
            if p.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{name}: the fleet did not join: see {log}")
            time.sleep(0.1)

    def stop_all(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        self.procs = []

    def rounds(self, events):
        with open(events) as f:
            closed = [json.loads(l) for l in f if '"round_closed"' in l]
        return closed

    # ---- the measurements

    def idle(self, n, aggs=0):
        self.count += 1
        name = f"idle-{n}-{aggs}-{self.count}"  # unique: its files are its own
        coord, addr, _ = self.coordinator(name, 1, 1, n + 1)  # never enough: no round opens
        groups = self.aggregators(name, addr, aggs) if aggs else []
        servers = [coord] + [g for g, _ in groups]
        time.sleep(1)
        rss0 = {p.pid: rss_kib(p.pid) for p in servers}
        _, joins = self.fleet(name + "-fleet", [a for _, a in groups] or [addr], n)
        time.sleep(2 * self.a.heartbeat_s + 1)  # past the joins' transients, heartbeats flowing
        rss1 = {p.pid: rss_kib(p.pid) for p in servers}
        c0 = {p.pid: cpu_s(p.pid) for p in servers}
        time.sleep(self.a.idle_s)
        busy = {p.pid: (cpu_s(p.pid) - c0[p.pid]) / self.a.idle_s for p in servers}
        self.stop_all()
        where = f"coordinator + {aggs} aggregators" if aggs else "one coordinator"
        line = (f"idle    {where}, {n} clients: {joins:.0f} joins/s; coordinator RSS "
                f"{rss0[coord.pid] / 1024:.1f} -> {rss1[coord.pid] / 1024:.1f} MiB, "
                f"{(rss1[coord.pid] - rss0[coord.pid]) / n:.1f} KiB per client, "
                f"{100 * busy[coord.pid]:.1f}% of a core while idle")
        if aggs:
            per = [(rss1[g.pid] - rss0[g.pid]) / (n / aggs) for g, _ in groups]
            cpu = [100 * busy[g.pid] for g, _ in groups]
            line += (f"; each aggregator {min(per):.1f}-{max(per):.1f} KiB per client it holds, "
                     f"{min(cpu):.1f}-{max(cpu):.1f}% of a core")
        print(line + f" (heartbeats every {self.a.heartbeat_s} s)", flush=True)

    def round_figures(self, n, per_round, aggs=0):
        self.count += 1
        name = f"rounds-{n}-{aggs}-{per_round}-{self.count}"
        coord, addr, events = self.coordinator(name, self.a.rounds, per_round, n)
        groups = self.aggregators(name, addr, aggs) if aggs else []
        self.fleet(name + "-fleet", [a for _, a in groups] or [addr], n)
        c0 = cpu_s(coord.pid)
        c1 = c0
        while coord.poll() is None:  # its CPU until just before it exits
            try:
                c1 = cpu_s(coord.pid)
            except (FileNotFoundError, ProcessLookupError):
                break
            time.sleep(0.05)
        if coord.wait() != 0:
            raise RuntimeError(f"{name}: the coordinator failed: see {self.dir}")
        closed = self.rounds(events)
        self.stop_all()
        accepted = sum(e["accepted"] for e in closed)
        if len(closed) != self.a.rounds or accepted != self.a.rounds * per_round:
            raise RuntimeError(f"{name}: {len(closed)} rounds closed with {accepted} updates, "
                               f"expected {self.a.rounds} of {per_round}: see {self.dir}")
        durations = [e["duration_s"] for e in closed]
        where = f"coordinator + {aggs} aggregators" if aggs else "one coordinator"
        print(f"rounds  {where}, {n} clients, rounds of {per_round}: round "
              f"{statistics.median(durations):.2f} s (median of {len(durations)}, "
              f"{accepted} updates accepted); coordinator CPU "
              f"{1000 * (c1 - c0) / len(closed):.0f} ms per round", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build/release")
    ap.add_argument("--clients", type=int, default=1000)
    ap.add_argument("--floats", type=int, default=10000)
    ap.add_argument("--aggregators", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--heartbeat-s", type=int, default=5)
    ap.add_argument("--idle-s", type=int, default=10)
    ap.add_argument("--flat", default="250,500,1000,2000")
    ap.add_argument("--round-sizes", default="100,1000", help="clients per round, each a run")
    ap.add_argument("--keep", action="store_true", help="keep the work dir")
    ap.add_argument("--only", default="idle,rounds,tier,flat")
    a = ap.parse_args()
    only = set(a.only.split(","))
    sizes = [k for k in map(int, a.round_sizes.split(",")) if k <= a.clients]
    b = Bench(a)
    print(f"capacity: {a.clients} clients, model of {a.floats} floats, {os.cpu_count()} cores, "
          f"work dir {b.dir}", flush=True)
    try:
        if "idle" in only:
            b.idle(a.clients)
        if "rounds" in only:
            for k in sizes:
                b.round_figures(a.clients, k)
        if "tier" in only:
            b.idle(a.clients, a.aggregators)
            for k in sizes:
                b.round_figures(a.clients, k, a.aggregators)
        if "flat" in only:
            for n in [int(x) for x in a.flat.split(",")]:
                b.round_figures(n, min(sizes), a.aggregators)
    finally:
        b.stop_all()
    if not a.keep:
        shutil.rmtree(b.dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
