#!/usr/bin/python3
"""tb.simulate with PyTorch trainers, in one process or on MPI ranks.

Every virtual client trains Fashion-MNIST's mlp (784-200-200-10) as a PyTorch nn.Sequential
(examples/pytorch: TorchTrainer, one torch thread), the run's model being the model file
examples/pytorch/mlp_torch.toml (the same tensors), evaluated server-side by the native engine.
Run it plainly for one process, or under an MPI launcher for several: every rank calls
tb.simulate the same way, rank 0 gets the result and prints one JSON line (the model hash, the
wall seconds of the simulate call, the rounds, the final accuracy), the other ranks print nothing.

    PYTHONPATH=build/release/python bench/python/simulate_ranks.py [--rounds 5 ...]
    PYTHONPATH=build/release/python mpirun -np 2 bench/python/simulate_ranks.py [...]

tests/python/mpi_simulate_test.py runs it small; docs/results.md has the side-by-side figures.
"""
import argparse
import json
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "examples", "pytorch"))
import tributary as tb  # noqa: E402
from torch_client import make_model  # noqa: E402
from torch_trainer import TorchTrainer  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--clients", type=int, default=20)
    p.add_argument("--per-round", type=int, default=10)
    p.add_argument("--examples", type=int, default=12000, help="Fashion-MNIST training images")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--report-dir", default="")
    args = p.parse_args()
    torch.set_num_threads(1)
    config = {"run.model": os.path.join(ROOT, "examples", "pytorch", "mlp_torch.toml"),
              "run.rounds": args.rounds, "run.clients_per_round": args.per_round,
              "data.dataset": "fashion-mnist", "data.train_examples": args.examples,
              "data.test_examples": 2000, "data.num_clients": args.clients,
              "data.partition": "dirichlet:0.5", "fit.epochs": args.epochs, "fit.batch_size": 32,
              "fit.lr": 0.05, "fit.momentum": 0.5, "sim.threads": 1, "log_level": "warn"}
    if args.report_dir:
        config["sim.report_dir"] = args.report_dir

    def trainer(x, y):
        return TorchTrainer(make_model(784, [200, 200], 10, seed=0), x, y)

    t0 = time.perf_counter()
    result = tb.simulate(config, trainer=trainer)
    wall = time.perf_counter() - t0
    if result is None:
        return  # another rank: rank 0 reports
    last = result["rounds"][-1]
    print(json.dumps({"model_hash": f"{result['model_hash']:016x}", "wall_seconds": wall,
                      "rounds": len(result["rounds"]),
                      "test_accuracy": last.get("test_accuracy")}), flush=True)


if __name__ == "__main__":
    main()
