#!/usr/bin/python3
"""What serving the dashboard and metrics costs the round engine (issue 17's budget: under 2% of a
round's time for 10 viewers).

Runs the same federated run of real processes (a tributary-coordinator, two tributary-client
processes over mutual TLS on loopback, the cnn on synthetic 28x28 images) alternately
  off     without monitor.listen, and
  viewed  with monitor.listen, N viewers holding the dashboard's event stream (api/events) open,
          each also fetching the page and api/state every 5 s, and a Prometheus-style scrape of
          /metrics every second,
`--repeats` times each, interleaved so that drift on the machine hits both alike. It reports the
median round duration (from the event log's round_closed events) and the coordinator's CPU time
per round (user + system, from wait4), and the difference of each as a share of the round.

  bench/monitor/monitor_overhead.py --build build/release [--rounds 12] [--viewers 10] [--repeats 3]
"""
import argparse
import http.client
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

TOKEN = "bench-token"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Viewers:
    """N dashboard viewers and one scraper against the monitor at 127.0.0.1:port."""

    def __init__(self, port, n):
        self.port, self.n, self.stop = port, n, threading.Event()
        self.events = [0] * n
        self.scrapes = 0
        self.threads = [threading.Thread(target=self.view, args=(i,), daemon=True) for i in range(n)]
        self.threads.append(threading.Thread(target=self.scrape, daemon=True))

    def get(self, path):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        c.request("GET", path, headers={"Authorization": f"Bearer {TOKEN}"})
        body = c.getresponse().read()
        c.close()
        return body

    def view(self, i):
        while not self.stop.is_set():
            try:
                self.get("/")
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                c.request("GET", f"/api/events?access_token={TOKEN}")
                r = c.getresponse()
                next_state = time.time() + 5
                while not self.stop.is_set():
                    line = r.fp.readline()
                    if not line:
                        break
                    if line.startswith(b"data: "):
                        self.events[i] += 1
                    if time.time() > next_state:
                        self.get("/api/state")
                        next_state = time.time() + 5
                c.close()
            except OSError:
                time.sleep(0.2)  # not up yet, or finishing

    def scrape(self):
        while not self.stop.is_set():
            try:
                self.get("/metrics")
                self.scrapes += 1
            except OSError:
                pass
            self.stop.wait(1.0)

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()


def trial(args, viewed):
    d = tempfile.mkdtemp(prefix="trib_monbench_")
    try:
        certs = os.path.join(args.build, "crypto", "tributary-certs")
        pki = os.path.join(d, "pki")
        run = lambda *a: subprocess.run([certs, *a, "--dir", pki], check=True, capture_output=True)
        run("init")
        run("server", "--host", "localhost", "--ip", "127.0.0.1")
        for i in range(2):
            run("client", "--id", f"edge-{i}")
        port, mport = free_port(), free_port()
        events = os.path.join(d, "events.jsonl")
        toml = f"""[run]
model = "cnn"
rounds = {args.rounds}
clients_per_round = 2
min_available = 2
min_completed = 2
[fit]
epochs = 1
[eval]
every = 0
[data]
dataset = "synthetic"
synthetic.height = 28
synthetic.width = 28
[tls]
ca = "{pki}/ca.crt"
cert = "{pki}/server.crt"
key = "{pki}/server.key"
[output]
event_log = "{events}"
checkpoint_dir = "{d}/ckpt"
final_model = "{d}/final.safetensors"
history = "none"
"""
        if viewed:
            toml += f'[monitor]\nlisten = "127.0.0.1:{mport}"\ntoken = "{TOKEN}"\n'
        with open(os.path.join(d, "c.toml"), "w") as f:
            f.write(toml)
        log = open(os.path.join(d, "coordinator.log"), "w")
        coord = subprocess.Popen([os.path.join(args.build, "coordinator", "tributary-coordinator"),
                                  "--config", os.path.join(d, "c.toml"),
                                  "--set", f"net.listen=127.0.0.1:{port}",
                                  "--set", f"output.ready_file={d}/ready"],
                                 stdout=log, stderr=subprocess.STDOUT)
        while not os.path.exists(f"{d}/ready"):  # listening
            if coord.poll() is not None:
                sys.exit(f"the coordinator did not start: {open(log.name).read()}")
            time.sleep(0.05)
        viewers = Viewers(mport, args.viewers) if viewed else None
        if viewers:
            viewers.__enter__()
        clients = [subprocess.Popen([
            os.path.join(args.build, "client", "tributary-client"),
            "--coordinator", f"127.0.0.1:{port}", "--ca", f"{pki}/ca.crt",
            "--cert", f"{pki}/clients/edge-{i}.crt", "--key", f"{pki}/clients/edge-{i}.key",
            "--set", "run.model=cnn", "--num-clients", "2", "--client-index", str(i),
            "--set", "data.dataset=synthetic", "--set", "data.train_examples=3000",
            "--set", "data.synthetic.height=28", "--set", "data.synthetic.width=28",
            "--threads", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for i in range(2)]
        _, status, usage = os.wait4(coord.pid, 0)
        coord.returncode = os.waitstatus_to_exitcode(status)
        for c in clients:
            c.wait(timeout=60)
        if viewers:
            viewers.__exit__()
        if coord.returncode != 0:
            sys.exit(f"the coordinator failed; see {d}/coordinator.log")
        with open(events) as f:
            closed = [json.loads(l) for l in f if '"round_closed"' in l]
        durations = [e["duration_s"] for e in closed]
        seen = (sum(viewers.events) / args.viewers, viewers.scrapes) if viewers else (0, 0)
        return {"round_s": statistics.median(durations), "rounds": len(durations),
                "total_round_s": sum(durations),
                "cpu_s": usage.ru_utime + usage.ru_stime, "events_per_viewer": seen[0],
                "scrapes": seen[1]}
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build/release")
    p.add_argument("--rounds", type=int, default=12)
    p.add_argument("--viewers", type=int, default=10)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    results = {"off": [], "viewed": []}
    for r in range(args.repeats):
        for mode in ("off", "viewed"):
            res = trial(args, mode == "viewed")
            results[mode].append(res)
            print(f"[{r + 1}/{args.repeats}] {mode:6s}: median round {res['round_s']:.3f} s over "
                  f"{res['rounds']} rounds, coordinator CPU {res['cpu_s']:.2f} s"
                  + (f", {res['events_per_viewer']:.0f} events per viewer, {res['scrapes']} scrapes"
                     if mode == "viewed" else ""), flush=True)
    med = lambda mode, k: statistics.median(x[k] for x in results[mode])
    round_off, round_on = med("off", "round_s"), med("viewed", "round_s")
    cpu_off, cpu_on = med("off", "cpu_s"), med("viewed", "cpu_s")
    rounds_time = med("off", "total_round_s")
    print()
    print(f"| | monitor off | {args.viewers} viewers + scrapes | difference |")
    print("|---|---|---|---|")
    print(f"| median round | {round_off:.3f} s | {round_on:.3f} s | {100 * (round_on / round_off - 1):+.2f}% |")
    print(f"| coordinator CPU per run | {cpu_off:.2f} s | {cpu_on:.2f} s | {cpu_on - cpu_off:+.2f} s "
          f"= {100 * (cpu_on - cpu_off) / rounds_time:+.2f}% of the rounds' time |")


if __name__ == "__main__":
    main()
