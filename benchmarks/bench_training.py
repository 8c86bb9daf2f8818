"""Training-speed benchmark: the naive DataLoader loop, the engine with one seed, five seeds together; and,
with ``--networks``, the seconds per epoch of every registered network.

Usage (from the repository root, after `make test` or `make reproduce` made .venv):

    .venv/bin/python benchmarks/bench_training.py               # both models, all variants
    .venv/bin/python benchmarks/bench_training.py --models mnist --steps 300
    .venv/bin/python benchmarks/bench_training.py --networks    # every registered network (~5 minutes)
    python3 benchmarks/bench_training.py --device cuda           # on a GPU: whole epochs (gpu_training.py)

``--networks`` times, each in its own process on 2 threads and on 1 (``--network-threads``), the training
loop the workflow
runs for every network of trustcal.registry.NETWORKS on CIFAR-shaped (3×32×32) and MNIST-shaped
(1×28×28) synthetic data: the paper's two networks with the paper's recipe (Adam, batch 32) in the stacked
engine, and the paper's CNN (and MLP) in the plain loop as well, as the baseline of the same run; LeNet-5,
ResNet-20 and WRN-16-4 with the ``sgd`` recipe (batch 128, Nesterov SGD, cosine schedule, crops, flips,
normalisation) in the plain loop (trustcal.training.plain.train_plain_epoch: the same code as a run), LeNet-5
and ResNet-20 with the paper's recipe (batch 32) too. A number of steps is timed after a few warm-up ones
(MLP 100, paper CNN 30, LeNet-5 20, ResNet-20 6, WRN-16-4 2, or ``--steps``; fewer once ``--budget``
seconds (4) have passed: the ``steps`` column says how many), the
epoch's reordering of the data timed once, and the validation forward pass (evaluation mode, batches of 256)
timed on 256 images; each is extrapolated to an
epoch of 45,000 training and 5,000 validation images (the unit of registry.NetworkSpec.minutes_per_epoch),
in wall time and in the process's CPU time (all its threads: on a machine shared with other jobs the wall
time measures the share the scheduler gives, the CPU time the work; on an idle node with these threads an
epoch's wall time is at most its CPU time). One thread shares nothing with another of its process: on a
busy machine its time is the least disturbed, and on an idle node it bounds the time of two (the runtime
requests of registry.NETWORKS rest on it). A run past ``--timeout`` seconds (60) is stopped and reported as
timed out. Results: a table, and benchmarks/results/training_networks.csv.

Every variant runs in its own process (so peak memory is its own) on the same
synthetic data with the paper's shapes (MNIST 54,000 × 1×28×28; CIFAR-10
45,000 × 3×32×32; batch 32). The machine's sgemm rate is measured in the same
run with the same thread count. Results: printed, and written to
benchmarks/results/training.csv (columns variant, model, seeds, threads,
ms_per_step, s_per_epoch, gflops, frac_of_sgemm, peak_mem_mb, …).

Variants
  dataloader  torchvision dataset (MNIST / CIFAR10 classes reading files in their
              own formats) + ToTensor + DataLoader(batch_size=32, shuffle=True),
              nn.Module, autograd, torch.optim.Adam — the typical user loop
  plain       the same model and optimiser on in-memory tensors (index slices of
              a per-epoch permutation), no DataLoader
  engine      trustcal's training engine (trustcal.training.loop.train_epoch), one seed
  engine5     the engine with five seeds trained together
  engine-<measure>, engine5-<measure>
              the engine with one of its speed measures undone (not run by default;
              name them with --variants to measure what the measure gives):
                malloc       glibc's default malloc settings, i.e. without
                             trustcal.training.engine.keep_freed_memory_in_process
                torch-adam   torch.optim.Adam(fused=True) over the flat parameter tensor
                             instead of its kernel called directly (fused_adam_step)
                autograd     (MLP) the same products and hand-written gradients, wrapped
                             in torch.autograd.Functions run by loss.backward()
                nchw         (CNN) the NCHW memory format instead of channels-last
                relu-first   (CNN) ReLU before max-pooling, in the network's own order
                eager        (GPU) the step's kernels one by one, not replayed from a CUDA graph
"""

from __future__ import annotations

import argparse
import atexit
import json
import math
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "workflow"))

SIZES = {"mnist": (54000, (1, 28, 28)), "cifar10": (45000, (3, 32, 32))}
BATCH = 32


def forward_flops(model: str) -> int:
    """Multiply-adds × 2 of one sample's forward pass."""
    if model == "mnist":
        return 2 * (784 * 128 + 128 * 10)
    conv = lambda cin, cout, hw: 2 * cin * 9 * cout * hw * hw  # noqa: E731
    return conv(3, 32, 30) + conv(32, 64, 13) + conv(64, 64, 4) + 2 * (1024 * 64 + 64 * 10)


def train_flops_per_step(model: str, seeds: int) -> float:
    return 3.0 * forward_flops(model) * BATCH * seeds  # backward ≈ 2 × forward


def sgemm_gflops(threads: int, n: int = 2048, repeats: int = 10) -> float:
    import torch

    torch.set_num_threads(threads)
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    best = math.inf
    for _ in range(repeats):
        t = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best / 1e9


def synthetic_arrays(model: str, n: int):
    import numpy as np

    rng = np.random.default_rng(0)
    shape = SIZES[model][1]
    return rng.integers(0, 256, (n, *shape), dtype=np.uint8), rng.integers(0, 10, n).astype(np.int64)


def start_spinners(n: int) -> None:
    """``n`` processes that spin on the CPU until this one exits (``--busy``): a machine shared with other work."""
    spin = "import os\nparent = os.getppid()\nwhile os.getppid() == parent: pass"  # ends with its parent, killed or not
    for _ in range(n):
        atexit.register(subprocess.Popen([sys.executable, "-c", spin]).kill)


def time_steps(step, steps: int, warmup: int) -> float:
    for _ in range(warmup):
        step()
    t = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - t) / steps


def undo(trainer, measure: str) -> None:
    """Undo one of the engine's speed measures in ``trainer`` (see the module docstring)."""
    import torch

    from trustcal.training import engine

    model, optimizer = trainer.model, trainer.optimizer
    if measure == "torch-adam":
        optimizer._public = torch.optim.Adam(
            [optimizer.param],
            lr=optimizer.lr,
            betas=optimizer.betas,
            eps=optimizer.eps,
            fused=True,
            capturable=optimizer.param.is_cuda,  # on a GPU, inside the step's CUDA graph
        )
        optimizer._public.state[optimizer.param] = dict(
            step=optimizer.steps, exp_avg=optimizer.exp_avg, exp_avg_sq=optimizer.exp_avg_sq
        )
    elif measure == "autograd" and isinstance(model, engine.StackedMLP):
        model.loss_and_gradients = lambda x, y: autograd_mlp_step(model, x, y)
    elif measure == "nchw" and isinstance(model, engine.StackedCNN):
        model.MEMORY_FORMAT = torch.contiguous_format
    elif measure == "relu-first" and isinstance(model, engine.StackedCNN):
        layers = model.layers  # StackedCNN put each ReLU after the max-pooling that followed it: back again
        for i in range(len(layers) - 1):
            if isinstance(layers[i], torch.nn.MaxPool2d) and isinstance(layers[i + 1], torch.nn.ReLU):
                layers[i], layers[i + 1] = layers[i + 1], layers[i]
    elif measure == "eager":  # on a GPU: each step's kernels launched one by one, not replayed from a CUDA graph
        trainer.graphs = False
    elif measure != "malloc":
        raise SystemExit(f"--variants: engine-{measure} does not apply to {type(model).__name__}")


def autograd_mlp_step(model, x, y):
    """StackedMLP.loss_and_gradients with its products and gradients run by ``loss.sum().backward()``."""
    import torch

    class Products(torch.autograd.Function):
        @staticmethod
        def forward(ctx, flat, x):
            ctx.x, ctx.h = x, model.hidden(x)
            return model.output(ctx.h)

        @staticmethod
        def backward(ctx, grad_logits):
            model.backward(ctx.x, ctx.h, grad_logits)  # into model.grad, handed to autograd as flat's gradient
            model.params.flat.grad = None
            return model.grad, None

    class CrossEntropy(torch.autograd.Function):
        @staticmethod
        def forward(ctx, logits, y):
            ctx.log_probs, ctx.y = torch.log_softmax(logits, dim=2), y
            return -ctx.log_probs.gather(2, y.unsqueeze(2)).squeeze(2).mean(1)

        @staticmethod
        def backward(ctx, grad_loss):
            g = ctx.log_probs.exp()
            g.scatter_add_(2, ctx.y.unsqueeze(2), torch.full_like(g[:, :, :1], -1.0)).div_(g.shape[1])
            return g.mul_(grad_loss[:, None, None]), None

    logits = Products.apply(model.params.flat, x.flatten(2))
    loss = CrossEntropy.apply(logits, y)
    loss.sum().backward()
    return loss.detach(), logits.detach()


def run_variant(variant: str, model: str, steps: int, threads: int) -> dict:
    import torch
    import torch.nn.functional as F

    from trustcal.training.engine import flush_denormals_in_this_process, keep_freed_memory_in_process
    from trustcal.training.models import build_model

    if variant.startswith("engine"):  # as the training rule does, before any parallel op
        flush_denormals_in_this_process()
        if not variant.endswith("-malloc"):
            keep_freed_memory_in_process()
    torch.set_num_threads(threads)
    n = SIZES[model][0]
    seeds = 5 if variant.startswith("engine5") else 1
    torch.manual_seed(0)

    if variant == "dataloader":
        import torchvision.datasets as tvd
        from torch.utils.data import DataLoader
        from torchvision.transforms import ToTensor

        from trustcal.data.synthetic import write_cifar10, write_mnist

        root = tempfile.mkdtemp(prefix="bench-")
        atexit.register(shutil.rmtree, root, ignore_errors=True)
        if model == "mnist":
            write_mnist(root, n_train=n, n_test=10)
            ds = tvd.MNIST(root, train=True, transform=ToTensor())
        else:
            write_cifar10(root, n_train=n, n_test=10)

            class Unchecked(tvd.CIFAR10):  # synthetic batches have no official md5
                def _check_integrity(self):
                    return True

                def _load_meta(self):
                    self.classes = list(range(10))

            ds = Unchecked(root, train=True, transform=ToTensor())
        net = build_model(model)
        opt = torch.optim.Adam(net.parameters(), lr=1e-3, eps=1e-7)
        batches = iter(DataLoader(ds, batch_size=BATCH, shuffle=True))

        def step():
            x, y = next(batches)
            loss = F.cross_entropy(net(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()

    elif variant == "plain":
        x_np, y_np = synthetic_arrays(model, n)
        x, y = torch.from_numpy(x_np), torch.from_numpy(y_np)
        net = build_model(model)
        opt = torch.optim.Adam(net.parameters(), lr=1e-3, eps=1e-7)
        perm = torch.randperm(n)
        state = {"i": 0}

        def step():
            i = state["i"]
            idx = perm[i : i + BATCH]
            state["i"] = (i + BATCH) % (n - BATCH)
            loss = F.cross_entropy(net(x[idx].float().div_(255)), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()

    else:
        from trustcal.training.engine import StackedTrainer, flushed_denormals
        from trustcal.training.loop import epoch_order, train_epoch

        x_np, y_np = synthetic_arrays(model, n)
        x, y = torch.from_numpy(x_np), torch.from_numpy(y_np)
        states = []
        for s in range(seeds):
            torch.manual_seed(s)
            states.append(build_model(model).state_dict())
        trainer = StackedTrainer(model, states, torch.device("cpu"), 1e-3, (0.9, 0.999), 1e-7)
        if "-" in variant:
            undo(trainer, variant.split("-", 1)[1])
        shuffles = [torch.Generator().manual_seed(s) for s in range(seeds)]
        with flushed_denormals():
            train_epoch(trainer, x, y, shuffles, BATCH, max_steps=10)  # warm-up
            t = time.perf_counter()
            epoch_order(x, y, shuffles)
            t_order = time.perf_counter() - t  # once per epoch
            t = time.perf_counter()
            train_epoch(trainer, x, y, shuffles, BATCH, max_steps=steps)
            t_steps = time.perf_counter() - t - t_order
        # the epoch's reordering of the data, amortised over all its steps
        per_step = (t_steps / steps) + t_order / math.ceil(n / BATCH)
        step = None
    if step is not None:
        per_step = time_steps(step, steps, warmup=10)
    steps_per_epoch = math.ceil(n / BATCH)
    flops = train_flops_per_step(model, seeds)
    return dict(
        variant=variant,
        model=model,
        seeds=seeds,
        threads=threads,
        ms_per_step=per_step * 1e3,
        s_per_epoch=per_step * steps_per_epoch,
        s_per_epoch_per_seed=per_step * steps_per_epoch / seeds,
        gflops=flops / per_step / 1e9,
        peak_mem_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    )


# --networks: (network, image shape, recipe, engine, timed steps)
EPOCH_TRAIN, EPOCH_VAL = 45_000, 5_000  # an epoch of registry.NetworkSpec.minutes_per_epoch
SHAPES = {"cifar": (3, 32, 32), "mnist": (1, 28, 28)}
NETWORK_RUNS = [
    ("paper_mlp", "mnist", "paper", "stacked", 100),
    ("paper_mlp", "mnist", "paper", "plain", 100),
    ("paper_mlp", "cifar", "paper", "stacked", 100),
    ("paper_cnn", "cifar", "paper", "stacked", 30),
    ("paper_cnn", "cifar", "paper", "plain", 30),
    ("paper_cnn", "mnist", "paper", "stacked", 30),
    ("lenet5", "cifar", "sgd", "plain", 20),
    ("lenet5", "mnist", "sgd", "plain", 20),
    ("lenet5", "mnist", "paper", "plain", 20),
    ("resnet20", "cifar", "sgd", "plain", 6),
    ("resnet20", "mnist", "sgd", "plain", 6),
    ("resnet20", "cifar", "paper", "plain", 6),
    ("wrn16_4", "cifar", "sgd", "plain", 2),
    ("wrn16_4", "mnist", "sgd", "plain", 2),
]


def run_network(
    network: str, shape_name: str, recipe_name: str, engine: str, steps: int, threads: int, budget: float
) -> dict:
    """Seconds per epoch of ``network`` on synthetic images of ``shape_name``'s shape in ``engine`` (one process).

    The timed steps are those of trustcal.training.loop.train_epoch (stacked) or train_plain_epoch (plain),
    one after the other on the epoch's order: the batch converted to float (and augmented), the trainer's
    step; ``steps`` of them, or fewer once ``budget`` seconds have passed (at least one).
    """
    import numpy as np
    import torch

    from trustcal import registry
    from trustcal.training.config import complete_config, setup_config
    from trustcal.training.engine import (
        StackedTrainer,
        flush_denormals_in_this_process,
        flushed_denormals,
        keep_freed_memory_in_process,
    )
    from trustcal.training.loop import epoch_order
    from trustcal.training.plain import (
        AUGMENT_STREAM,
        augment_batch,
        draw_augmentation,
        plain_model,
        plain_trainer,
        stream_seed,
    )

    flush_denormals_in_this_process()  # as the training script does, before any parallel op
    keep_freed_memory_in_process()
    torch.set_num_threads(threads)
    shape = SHAPES[shape_name]
    n = 4096  # images in memory: a timed step reads a batch, the epoch's reordering is scaled to 45,000
    rng = np.random.default_rng(0)
    data = dict(
        x_train=rng.integers(0, 256, (n, *shape), dtype=np.uint8),
        y_train=rng.integers(0, 10, n).astype(np.int64),
        x_val=rng.integers(0, 256, (256, *shape), dtype=np.uint8),
        y_val=rng.integers(0, 10, 256).astype(np.int64),
    )
    dataset = "cifar10" if shape_name == "cifar" else "mnist"
    setup = registry.Setup("bench", registry.DATASETS[dataset], network, (), registry.RECIPES[recipe_name])
    cfg = complete_config(setup_config(setup, 0, 1, device="cpu", threads=threads), data)
    if engine == "stacked" and not cfg.stacked:
        raise SystemExit(f"{network} with the {recipe_name} recipe has no stacked form")
    bs = cfg.batch_size
    x, y = torch.from_numpy(data["x_train"]), torch.from_numpy(data["y_train"])
    x_val = torch.from_numpy(data["x_val"])
    torch.manual_seed(0)
    model = plain_model(cfg, data["x_train"])
    shuffle, augment_rng = (
        torch.Generator().manual_seed(0),
        torch.Generator().manual_seed(stream_seed(0, AUGMENT_STREAM)),
    )

    def timed(f):  # (wall, CPU) seconds of f()
        wall, cpu = time.perf_counter(), time.process_time()
        out = f()
        return time.perf_counter() - wall, time.process_time() - cpu, out

    if engine == "stacked":
        trainer = StackedTrainer(
            model, [model.state_dict()], torch.device("cpu"), cfg.learning_rate, cfg.betas, cfg.eps
        )
        t_order, c_order, (xs, ys) = timed(lambda: epoch_order(x, y, [shuffle]))

        def step(i):
            yb = ys[:, i : i + bs]
            loss, logits = trainer.step(xs[:, i : i + bs].float().div_(255), yb)
            return loss.sum() + (logits.argmax(2) == yb).sum()  # the epoch's running sums
    else:  # the schedule spans an epoch of 45,000 images
        trainer = plain_trainer(cfg, model, torch.device("cpu"), EPOCH_TRAIN)

        def order():  # what train_plain_epoch does once an epoch: the order, the augmentation's draws
            perm = torch.randperm(n, generator=shuffle)
            return x[perm], y[perm], draw_augmentation(n, shape[1:], cfg.augment, augment_rng)

        t_order, c_order, (xs, ys, draws) = timed(order)

        def step(i):
            xb, yb = xs[i : i + bs].float().div_(255), ys[i : i + bs]
            if draws:
                xb = augment_batch(xb, {k: v[i : i + bs] for k, v in draws.items()})
            loss, logits = trainer.step(xb, yb)
            return loss + (logits.argmax(1) == yb).sum()

    warmup = 1 if network == "wrn16_4" or threads > 1 else 2
    with flushed_denormals():
        for k in range(warmup):
            step(k * bs)
        done = t_run = c_run = 0.0
        while done < steps and (done == 0 or t_run < budget):
            at = ((warmup + int(done)) * bs) % (n - bs)
            w, c, _ = timed(lambda at=at: step(at))
            done, t_run, c_run = done + 1, t_run + w, c_run + c
        trainer.logits(x_val[:32])
        t_val, c_val, _ = timed(lambda: trainer.logits(x_val))
    scale, val_scale = EPOCH_TRAIN / n, EPOCH_VAL / len(x_val)  # the reordering scales with the epoch's images
    steps_per_epoch = math.ceil(EPOCH_TRAIN / bs)
    train_s = t_run / done * steps_per_epoch + t_order * scale
    cpu_s = c_run / done * steps_per_epoch + c_order * scale + c_val * val_scale
    return dict(
        network=network,
        data=shape_name,
        recipe=recipe_name,
        engine=engine,
        batch=bs,
        steps=int(done),
        threads=threads,
        ms_per_step=t_run / done * 1e3,
        train_s=train_s,
        val_s=t_val * val_scale,
        s_per_epoch=train_s + t_val * val_scale,
        cpu_s_per_epoch=cpu_s,
        peak_mem_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    )


def networks_main(args) -> None:
    """``--networks``: every run of NETWORK_RUNS in its own process; a table and training_networks.csv."""
    import pandas as pd

    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, threads {args.network_threads}; "
        f"an epoch = {EPOCH_TRAIN:,} training + {EPOCH_VAL:,} validation images",
        flush=True,
    )
    rows = []
    runs = [(r, t) for t in args.network_threads for r in NETWORK_RUNS if not args.only or r[0] in args.only]
    for (network, shape, recipe, engine, steps), threads in runs:
        spec = f"{network}:{shape}:{recipe}:{engine}:{args.steps or steps}"
        cmd = [
            sys.executable,
            __file__,
            "--child-network",
            spec,
            "--threads",
            str(threads),
            "--budget",
            str(args.budget),
        ]
        t = time.perf_counter()
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=args.timeout).stdout
        except subprocess.TimeoutExpired:
            print(f"{threads} thr {network:10s} {shape:6s} {recipe:6s} {engine:8s} timed out after {args.timeout} s")
            rows.append(
                dict(network=network, data=shape, recipe=recipe, engine=engine, threads=threads, timed_out=True)
            )
            continue
        row = json.loads(out.strip().splitlines()[-1])
        row["wall_s"] = time.perf_counter() - t
        rows.append(row)
        print(
            f"{threads} thr {network:10s} {shape:6s} {recipe:6s} {engine:8s} batch {row['batch']:4d}  "
            f"{row['steps']:4d} steps "
            f"{row['ms_per_step']:8.1f} ms/step  {row['s_per_epoch']:8.1f} s/epoch ({row['train_s']:.1f} + "
            f"{row['val_s']:.1f} val)  CPU {row['cpu_s_per_epoch']:8.1f} s/epoch  peak {row['peak_mem_mb']:5.0f} MB",
            flush=True,
        )
    df = pd.DataFrame(rows)
    if "s_per_epoch" not in df:
        df["s_per_epoch"] = math.nan
    t = df.set_index(["threads", "network", "data", "engine"])["s_per_epoch"].dropna()
    for threads in args.network_threads:
        for net in ("paper_cnn", "paper_mlp"):
            data = "cifar" if net == "paper_cnn" else "mnist"
            if (threads, net, data, "stacked") in t.index and (threads, net, data, "plain") in t.index:
                ratio = t[(threads, net, data, "plain")] / t[(threads, net, data, "stacked")]
                print(f"{threads} thread(s), {net}: plain loop / stacked engine, seconds per epoch = {ratio:.2f}")
    print("minutes per epoch of 45,000 images, the slowest run of each network (wall, fewest threads measured):")
    basis = df[(df["threads"] == min(args.network_threads)) & df["s_per_epoch"].notna()]
    for net, g in basis.groupby("network", sort=False):
        print(f"  {net:10s} {g['s_per_epoch'].max() / 60:6.2f}")
    out = Path(args.out).with_name("training_networks.csv")
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out, index=False)
    print(f"written {out}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["mnist", "cifar10"], choices=list(SIZES))
    ap.add_argument("--variants", nargs="+", default=["dataloader", "plain", "engine", "engine5"])
    ap.add_argument("--steps", type=int, default=0, help="timed steps per variant (default: 400 MLP, 60 CNN)")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--out", default=str(HERE / "results" / "training.csv"))
    ap.add_argument("--networks", action="store_true", help="seconds per epoch of every registered network")
    ap.add_argument("--only", nargs="+", default=(), help="with --networks: these networks only")
    ap.add_argument("--network-threads", nargs="+", type=int, default=[2, 1], help="with --networks: thread counts")
    ap.add_argument("--budget", type=float, default=4.0, help="with --networks: seconds of timed steps at most")
    ap.add_argument("--timeout", type=float, default=60.0, help="with --networks: seconds a run may take at most")
    ap.add_argument(
        "--device",
        default="cpu",
        help="cuda (or cuda:N): whole epochs on a GPU against its matmul rate (gpu_training.py)",
    )
    ap.add_argument(
        "--busy", type=int, default=0, help="run beside N processes spinning on the CPU (a busy machine); 0: quiet"
    )
    ap.add_argument(
        "--plan",
        action="store_true",
        help="threads and OpenMP waiting as the workflow's jobs choose them (trustcal.training.cpu), after --busy starts",
    )
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--child-network", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.child:  # one variant in this process; print its JSON
        variant, model = args.child.split(":")
        print(json.dumps(run_variant(variant, model, args.steps, args.threads)))
        return
    if args.child_network:  # one network run in this process; print its JSON
        network, shape, recipe, engine, steps = args.child_network.split(":")
        print(json.dumps(run_network(network, shape, recipe, engine, int(steps), args.threads, args.budget)))
        return
    if args.networks:
        networks_main(args)
        return
    if args.device.startswith("cuda"):
        from gpu_training import gpu_main

        if args.out == ap.get_default("out"):
            args.out = str(Path(args.out).with_name("training_gpu.csv"))
        gpu_main(args)
        return

    import pandas as pd

    start_spinners(args.busy)  # killed when this process exits
    if args.plan:
        from trustcal.training.cpu import start_cpu_job

        time.sleep(0.5)  # the spinners running
        args.threads = start_cpu_job(args.threads)
    sgemm = sgemm_gflops(args.threads)
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"{args.threads} threads; sgemm {sgemm:.1f} GFLOP/s (2048², best of 10); "
        f"{args.busy} spinning process(es) beside; OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'unset')}"
    )
    rows = []
    for model in args.models:
        steps = args.steps or (400 if model == "mnist" else 60)
        for variant in args.variants:
            cmd = [
                sys.executable,
                __file__,
                "--child",
                f"{variant}:{model}",
                "--steps",
                str(steps),
                "--threads",
                str(args.threads),
            ]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            row = json.loads(out.strip().splitlines()[-1])
            row["frac_of_sgemm"] = row["gflops"] / sgemm
            row["busy"] = args.busy
            row["sgemm_gflops"] = sgemm
            rows.append(row)
            print(
                f"{model:8s} {variant:14s} seeds {row['seeds']}: {row['ms_per_step']:7.2f} ms/step "
                f"{row['s_per_epoch']:7.1f} s/epoch  {row['gflops']:6.1f} GFLOP/s "
                f"({100 * row['frac_of_sgemm']:4.1f} % of sgemm)  peak {row['peak_mem_mb']:6.0f} MB",
                flush=True,
            )
    df = pd.DataFrame(rows)
    for model, g in df.groupby("model", sort=False):
        t = g.set_index("variant")["ms_per_step"]
        if {"dataloader", "engine"} <= set(t.index):
            print(
                f"{model}: engine / dataloader time per step = {t['engine'] / t['dataloader']:.3f} "
                f"({t['dataloader'] / t['engine']:.1f}× faster)"
            )
        if {"engine", "engine5"} <= set(t.index):
            print(f"{model}: 5 seeds together / 1 seed time per step = {t['engine5'] / t['engine']:.2f}")
        for v in ("engine", "engine5"):
            for undone in sorted(u for u in t.index if u.startswith(f"{v}-")):
                print(
                    f"{model}: {v} / {undone} (the measure undone) time per step = "
                    f"{t[v] / t[undone]:.3f} ({t[undone] / t[v]:.2f}× faster with it)"
                )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(args.out, index=False)
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
