"""``bench_training.py --device cuda``: training on a CUDA GPU, against the GPU's float32 matrix-product rate.

Times, on one GPU with the data resident on it as uint8 (CIFAR-shaped 3×32×32 images; MNIST-shaped for the
paper's MLP), a whole epoch of 45,000 training and 5,000 validation images (the unit of
registry.NetworkSpec.minutes_per_epoch) in the code a run executes: trustcal.training.loop.train_epoch for the
paper's networks under the paper's recipe (the stacked engine, one seed and five), train_plain_epoch for every
other network with the ``sgd`` recipe, then the validation logits. Each after a warm-up of 20 steps, in
``deterministic`` mode (the configuration's default: deterministic algorithms, no TF32) and, for the
convolutional networks, with ``deterministic: false`` (cuDNN's benchmarked algorithms, TF32) beside it.
Then the CUDA graph of the stacked engine's step undone (``eager``), and each of the engine's CPU speed measures
undone on the GPU (bench_training.py's ``engine-<measure>``),
300 steps each: kept on CUDA where the engine with it is not slower. The matrix-product rate is an 8192³
float32 product (TF32 off), the best of ten. Peak GPU memory is PyTorch's allocator's.
Results: a table and ``<out>`` (training_gpu.csv beside training.csv by default).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

EPOCH_TRAIN, EPOCH_VAL = 45_000, 5_000
# (network, image shape, recipe, seeds)
GPU_RUNS = [
    ("paper_mlp", (1, 28, 28), "paper", 1),
    ("paper_mlp", (1, 28, 28), "paper", 5),
    ("paper_cnn", (3, 32, 32), "paper", 1),
    ("paper_cnn", (3, 32, 32), "paper", 5),
    ("lenet5", (3, 32, 32), "sgd", 1),
    ("resnet20", (3, 32, 32), "sgd", 1),
    ("wrn16_4", (3, 32, 32), "sgd", 1),
]
MEASURES = [("paper_mlp", 1, "eager"), ("paper_mlp", 5, "eager"), ("paper_cnn", 1, "eager"), ("paper_cnn", 5, "eager")]
MEASURES += [("paper_mlp", 1, "torch-adam"), ("paper_mlp", 1, "autograd"), ("paper_mlp", 5, "torch-adam")]
MEASURES += [("paper_cnn", 5, "torch-adam"), ("paper_cnn", 5, "nchw"), ("paper_cnn", 5, "relu-first")]


def sync():
    import torch

    torch.cuda.synchronize()


def matmul_tflops(device, n=8192, repeats=10) -> float:
    """Float32 (TF32 off) n³ matrix products per second, the best of ``repeats``, in TFLOP/s."""
    import torch

    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    torch.mm(a, b)
    best = math.inf
    for _ in range(repeats):
        sync()
        t = time.perf_counter()
        torch.mm(a, b)
        sync()
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best / 1e12


def trainer_of(network, shape, recipe, seeds, device, deterministic):
    """The run's configuration, trainer and data on ``device`` (synthetic uint8 images, 10 classes)."""
    import numpy as np
    import torch

    from trustcal import registry
    from trustcal.training.config import complete_config, configure_device, setup_config, template
    from trustcal.training.engine import StackedTrainer
    from trustcal.training.plain import plain_model, plain_trainer

    configure_device(device, deterministic)
    rng = np.random.default_rng(0)
    data = dict(
        x_train=rng.integers(0, 256, (EPOCH_TRAIN, *shape), dtype=np.uint8),
        y_train=rng.integers(0, 10, EPOCH_TRAIN).astype(np.int64),
        x_val=rng.integers(0, 256, (EPOCH_VAL, *shape), dtype=np.uint8),
        y_val=rng.integers(0, 10, EPOCH_VAL).astype(np.int64),
    )
    dataset = registry.DATASETS["mnist" if shape[0] == 1 else "cifar10"]
    setup = registry.Setup("bench", dataset, network, (), registry.RECIPES[recipe])
    cfg = complete_config(setup_config(setup, 0, 1, device=str(device)), data)
    if cfg.stacked:
        states = []
        for s in range(seeds):
            torch.manual_seed(s)
            states.append(template(cfg).state_dict())
        trainer = StackedTrainer(template(cfg), states, device, cfg.learning_rate, cfg.betas, cfg.eps)
    else:
        trainer = plain_trainer(cfg, plain_model(cfg, data["x_train"]), device, EPOCH_TRAIN)
    tensors = {k: torch.from_numpy(v).to(device) for k, v in data.items()}
    return cfg, trainer, tensors


def epoch_runner(cfg, trainer, t, seeds):
    """A function running one epoch's steps (or the first ``max_steps``), as the training loop does."""
    import torch

    from trustcal.training.loop import train_epoch
    from trustcal.training.plain import AUGMENT_STREAM, stream_seed, train_plain_epoch

    if cfg.stacked:
        shuffles = [torch.Generator().manual_seed(s) for s in range(seeds)]
        return lambda max_steps=None: train_epoch(
            trainer, t["x_train"], t["y_train"], shuffles, cfg.batch_size, max_steps
        )
    shuffle, augment = torch.Generator().manual_seed(0), torch.Generator().manual_seed(stream_seed(0, AUGMENT_STREAM))
    return lambda max_steps=None: train_plain_epoch(
        trainer, t["x_train"], t["y_train"], shuffle, augment, cfg.batch_size, cfg.augment, max_steps
    )


def time_epoch(network, shape, recipe, seeds, device, deterministic) -> dict:
    import torch

    torch.cuda.reset_peak_memory_stats(device)
    cfg, trainer, t = trainer_of(network, shape, recipe, seeds, device, deterministic)
    run = epoch_runner(cfg, trainer, t, seeds)
    run(20)  # warm-up: kernels loaded, cuDNN's choices made
    trainer.logits(t["x_val"][:256])
    sync()
    tic = time.perf_counter()
    run()
    sync()
    train_s = time.perf_counter() - tic
    tic = time.perf_counter()
    trainer.logits(t["x_val"])
    sync()
    val_s = time.perf_counter() - tic
    steps = math.ceil(EPOCH_TRAIN / cfg.batch_size)
    return dict(
        network=network,
        recipe=recipe,
        engine="stacked" if cfg.stacked else "plain",
        seeds=seeds,
        deterministic=deterministic,
        batch=cfg.batch_size,
        ms_per_step=train_s / steps * 1e3,
        train_s=train_s,
        val_s=val_s,
        s_per_epoch=train_s + val_s,
        s_per_epoch_per_seed=(train_s + val_s) / seeds,
        peak_gpu_mb=torch.cuda.max_memory_allocated(device) / 2**20,
    )


def time_measure(network, seeds, measure, device, steps=300) -> dict:
    """ms per step of the engine, and of the engine with ``measure`` undone (bench_training.undo)."""
    from bench_training import undo

    out = {}
    for variant in ("engine", f"engine-{measure}"):
        shape = (1, 28, 28) if network == "paper_mlp" else (3, 32, 32)
        cfg, trainer, t = trainer_of(network, shape, "paper", seeds, device, True)
        if variant != "engine":
            undo(trainer, measure)
        run = epoch_runner(cfg, trainer, t, seeds)
        run(20)
        sync()
        tic = time.perf_counter()
        run(steps)
        sync()
        out[variant] = (time.perf_counter() - tic) / steps * 1e3
    with_it, without = out["engine"], out[f"engine-{measure}"]
    return dict(network=network, seeds=seeds, measure=measure, ms_with=with_it, ms_without=without)


def gpu_main(args) -> None:
    import pandas as pd
    import torch

    device = torch.device(args.device)
    if device.type != "cuda" or not torch.cuda.is_available():
        raise SystemExit(f"--device {args.device}: PyTorch {torch.__version__} sees no CUDA GPU here")
    torch.backends.cuda.matmul.allow_tf32 = False
    rate = matmul_tflops(device)
    name = torch.cuda.get_device_name(device)
    print(f"GPU: {name}, PyTorch {torch.__version__}, CUDA {torch.version.cuda}; float32 matmul {rate:.1f} TFLOP/s")
    rows = []
    for network, shape, recipe, seeds in GPU_RUNS:
        modes = (True, False) if network != "paper_mlp" else (True,)
        for deterministic in modes:
            row = time_epoch(network, shape, recipe, seeds, device, deterministic)
            row.update(gpu=name, matmul_tflops=rate)
            rows.append(row)
            print(
                f"{network:10s} {recipe:6s} {row['engine']:8s} seeds {seeds}  deterministic {str(deterministic):5s} "
                f"batch {row['batch']:4d}  {row['ms_per_step']:6.2f} ms/step  {row['s_per_epoch']:6.2f} s/epoch "
                f"({row['train_s']:.2f} + {row['val_s']:.2f} val)  peak {row['peak_gpu_mb']:7.0f} MB",
                flush=True,
            )
    measures = []
    for network, seeds, measure in MEASURES:
        m = time_measure(network, seeds, measure, device)
        measures.append(m)
        verdict = "kept" if m["ms_with"] <= m["ms_without"] else "slower on CUDA"
        print(
            f"{network:10s} seeds {seeds}  {measure:11s} with {m['ms_with']:6.3f} ms/step, undone "
            f"{m['ms_without']:6.3f} ({m['ms_without'] / m['ms_with']:.2f}× with it): {verdict}",
            flush=True,
        )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(out, index=False)
    pd.DataFrame(measures).to_csv(out.with_name(out.stem + "_measures.csv"), index=False)
    print(f"written {out} and {out.with_name(out.stem + '_measures.csv')}")
