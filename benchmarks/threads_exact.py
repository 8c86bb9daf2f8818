"""Do a network's numbers depend on the thread count? Trains the paper's networks from the same weights for a
few steps of the stacked engine with each thread count, each run in its own process, then computes logits,
and prints the SHA-256 of the weights and of the logits (benchmarks/README.md, "Training on a busy CPU").

    .venv/bin/python benchmarks/threads_exact.py [--threads 1 2 3] [--steps 10] [--out FILE.csv]

Runs: the paper's MLP (one seed, MNIST-shaped images), the paper's CNN (one seed, CIFAR- and MNIST-shaped
images) and the CNN with two seeds stacked in one job (``seed_batching``), on 320 synthetic uint8 images.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RUNS = [  # (name, network, image shape, seeds)
    ("MLP, 1 seed", "trustcal.training.models:MNISTMLP", (1, 28, 28), 1),
    ("CNN, 1 seed", "trustcal.training.models:CIFARCNN", (3, 32, 32), 1),
    ("CNN, 1 seed, MNIST-shaped", "trustcal.training.models:CIFARCNN", (1, 28, 28), 1),
    ("CNN, 2 seeds stacked", "trustcal.training.models:CIFARCNN", (3, 32, 32), 2),
]


def child(threads: int, factory: str, shape: tuple[int, ...], seeds: int, steps: int) -> tuple[str, str]:
    """In a fresh process: the threads set before PyTorch's first parallel operation."""
    import importlib

    import torch

    torch.set_num_threads(threads)
    from trustcal.training.engine import StackedTrainer
    from trustcal.training.loop import train_epoch
    from trustcal.training.models import glorot_init_

    module, name = factory.split(":")
    network = getattr(importlib.import_module(module), name)
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (32 * steps, *shape), dtype=torch.uint8, generator=g)
    y = torch.randint(0, 10, (32 * steps,), generator=g)
    states = []
    for s in range(seeds):
        torch.manual_seed(s)
        states.append(glorot_init_(network(in_shape=shape, num_classes=10)).state_dict())
    trainer = StackedTrainer(
        network(in_shape=shape, num_classes=10), states, torch.device("cpu"), 1e-3, (0.9, 0.999), 1e-7
    )
    train_epoch(trainer, x, y, [torch.Generator().manual_seed(s) for s in range(seeds)], 32)
    weights = hashlib.sha256(trainer.params.flat.detach().numpy().tobytes()).hexdigest()
    logits = hashlib.sha256(trainer.logits(x[:100]).numpy().tobytes()).hexdigest()
    return weights, logits


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2, 3])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--out", default=str(HERE / "results" / "threads_exact.csv"))
    ap.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        threads, factory, shape, seeds, steps = args.child
        shape = tuple(int(n) for n in shape.split("x"))
        print(*child(int(threads), factory, shape, int(seeds), int(steps)))
        return 0
    env = dict(os.environ, PYTHONPATH=str(HERE.parent / "workflow"))
    rows = []
    for name, factory, shape, seeds in RUNS:
        for threads in args.threads:
            spec = [str(threads), factory, "x".join(map(str, shape)), str(seeds), str(args.steps)]
            out = subprocess.run(
                [sys.executable, __file__, "--child", *spec], capture_output=True, text=True, env=env, check=True
            ).stdout.split()
            rows.append(dict(run=name, threads=threads, steps=args.steps, weights=out[-2], logits=out[-1]))
            print(f"{name:28s} {threads} thread(s): weights {out[-2][:16]}  logits {out[-1][:16]}", flush=True)
        same = {(r["weights"], r["logits"]) for r in rows if r["run"] == name}
        print(f"{name}: {'the same with every thread count' if len(same) == 1 else 'differs with the thread count'}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
