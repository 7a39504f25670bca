#!/usr/bin/python3
"""Split learning against FedAvg between real processes (docs/split.md, docs/results.md).

Runs tributary-coordinator and N tributary-client processes over mutual TLS on loopback, on
Fashion-MNIST, once per mode: FedAvg (every client trains the whole model), SFLV1 and SFLV2 (each
client trains the layers before the model's cut, the coordinator the rest), with the same rounds,
epochs, batch size and learning rate. Prints, per mode: the coordinator's test accuracy after each
round, the bytes per client-epoch (FedAvg: the model down and the update up; split: that for the
device part plus every batch's activations and gradients), the clients' peak RSS (the largest of
them, from /usr/bin/time), the coordinator's peak RSS, the server's compute time and the run's
wall time. The device's share of the FLOPs is the model's (train/model_split.h), not measured here.

Usage: bench/split/split_vs_fedavg.py [--build build/ci] [--model cnn] [--clients 10]
       [--train-examples 6000] [--test-examples 2000] [--rounds 5] [--epochs 1] [--batch 32]
       [--lr 0.05] [--modes fedavg,sflv1,sflv2] [--split-codec dense] [--head 0] [--keep]
--head H > 0 makes the split runs U-shaped (split.head = H: the devices also hold layers H.. and
the labels; sflv1 only).
All processes share this machine's cores: wall times are for this machine, not a deployment.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time


def run(cmd, **kw):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, **kw)


def peak_rss_kib(time_log):
    with open(time_log) as f:
        m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", f.read())
    return int(m.group(1)) if m else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build/ci")
    ap.add_argument("--model", default="cnn")
    ap.add_argument("--clients", type=int, default=10)
    ap.add_argument("--train-examples", type=int, default=6000)
    ap.add_argument("--test-examples", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--modes", default="fedavg,sflv1,sflv2")
    ap.add_argument("--split-codec", default="dense")
    ap.add_argument("--head", type=int, default=0)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    b = os.path.abspath(a.build)
    certs, coord, client = (f"{b}/crypto/tributary-certs", f"{b}/coordinator/tributary-coordinator",
                            f"{b}/client/tributary-client")
    for p in (certs, coord, client):
        if not os.path.exists(p):
            sys.exit(f"missing {p}: build first (cmake --build --preset ci)")
    work = tempfile.mkdtemp(prefix="trib_split_bench_")
    pki = f"{work}/pki"
    run([certs, "init", "--dir", pki])
    run([certs, "server", "--host", "localhost", "--ip", "127.0.0.1", "--dir", pki])
    for i in range(a.clients):
        run([certs, "client", "--id", f"edge-{i}", "--dir", pki])
    results = []
    for mode in a.modes.split(","):
        d = f"{work}/{mode}"
        os.makedirs(d)
        split = "" if mode == "fedavg" else (
            f'[split]\nmode = "{mode}"\ncodec = "{a.split_codec}"\npool = 2\nhead = {a.head}\n')
        with open(f"{d}/coordinator.toml", "w") as f:
            f.write(f"""log_level = "info"
[net]
listen = "127.0.0.1:0"
[tls]
ca = "{pki}/ca.crt"
cert = "{pki}/server.crt"
key = "{pki}/server.key"
[run]
model = "{a.model}"
rounds = {a.rounds}
clients_per_round = {a.clients}
min_available = {a.clients}
min_completed = {a.clients}
round_timeout_s = 3600
{split}[fit]
epochs = {a.epochs}
batch_size = {a.batch}
lr = {a.lr}
[eval]
every = 1
[data]
test_examples = {a.test_examples}
[output]
checkpoint_dir = "{d}/ckpt"
history = "none"
ready_file = "{d}/ready"
""")
        t0 = time.monotonic()
        log = open(f"{d}/coordinator.log", "w")
        cp = subprocess.Popen(["/usr/bin/time", "-v", "-o", f"{d}/coordinator.time", coord,
                               "--config", f"{d}/coordinator.toml"], stdout=log,
                              stderr=subprocess.STDOUT)
        while not os.path.exists(f"{d}/ready"):
            if cp.poll() is not None:
                sys.exit(open(f"{d}/coordinator.log").read())
            time.sleep(0.05)
        addr = open(f"{d}/ready").read().split()[0]
        procs = []
        for i in range(a.clients):
            args = [client, "--coordinator", addr, "--ca", f"{pki}/ca.crt", "--cert",
                    f"{pki}/clients/edge-{i}.crt", "--key", f"{pki}/clients/edge-{i}.key",
                    "--model", a.model, "--num-clients", str(a.clients), "--client-index", str(i),
                    "--train-examples", str(a.train_examples), "--threads", "1",
                    "--log-level", "warn"]
            if mode != "fedavg":
                args += ["--split", "true", "--split-head", str(a.head)]
            procs.append(subprocess.Popen(
                ["/usr/bin/time", "-v", "-o", f"{d}/edge-{i}.time", *args],
                stdout=open(f"{d}/edge-{i}.log", "w"), stderr=subprocess.STDOUT))
        if cp.wait() != 0:
            sys.exit(f"{mode}: the coordinator failed:\n" + open(f"{d}/coordinator.log").read())
        for p in procs:
            p.wait()
        wall = time.monotonic() - t0
        events = [json.loads(l) for l in open(f"{d}/ckpt/events.jsonl")]
        rounds = [e for e in events if e.get("event") == "round_closed"]
        acc = [e["test_accuracy"] for e in rounds if "test_accuracy" in e]
        up = sum(e["bytes_up"] for e in rounds)
        down = sum(e["bytes_down"] for e in rounds)
        text = open(f"{d}/coordinator.log").read()
        split_in = split_out = compute = 0.0
        for m in re.finditer(r"split learning, round \d+: \d+ batches \(\d+ samples\), ([\d.]+) KiB "
                             r"of [a-z ]+ in and ([\d.]+) KiB of [a-z ]+ out .*?, ([\d.]+) s "
                             r"of server compute", text):
            split_in += float(m.group(1)) * 1024
            split_out += float(m.group(2)) * 1024
            compute += float(m.group(3))
        client_epochs = a.clients * a.rounds * a.epochs
        r = {"mode": mode, "accuracy": acc, "bytes_per_client_epoch":
             (up + down + split_in + split_out) / client_epochs,
             "model_bytes_per_client_epoch": (up + down) / client_epochs,
             "cut_bytes_per_client_epoch": (split_in + split_out) / client_epochs,
             "client_peak_rss_mib": max(peak_rss_kib(f"{d}/edge-{i}.time")
                                        for i in range(a.clients)) / 1024,
             "coordinator_peak_rss_mib": peak_rss_kib(f"{d}/coordinator.time") / 1024,
             "server_compute_s": compute, "wall_s": wall}
        results.append(r)
        print(f"{mode:7s} acc/round {' '.join(f'{100 * x:.2f}' for x in acc)}  "
              f"MiB/client-epoch {r['bytes_per_client_epoch'] / 2**20:.2f} "
              f"(model {r['model_bytes_per_client_epoch'] / 2**20:.2f}, cut "
              f"{r['cut_bytes_per_client_epoch'] / 2**20:.2f})  client peak RSS "
              f"{r['client_peak_rss_mib']:.1f} MiB  coordinator {r['coordinator_peak_rss_mib']:.1f}"
              f" MiB  server compute {compute:.1f} s  wall {wall:.1f} s", flush=True)
    print(json.dumps(results))
    if not a.keep:
        shutil.rmtree(work)
    else:
        print(f"kept {work}")


if __name__ == "__main__":
    main()
