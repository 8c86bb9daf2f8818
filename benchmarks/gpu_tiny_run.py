"""A tiny training-and-logits run through the workflow's stage functions, on the GPU and on the CPU (no Snakemake).

The paper's MLP, two seeds trained together for three epochs on 1,600 synthetic MNIST-shaped images
(trustcal.data.synthetic), by ``trustcal.stages.train_stage`` with ``device: cuda`` and with ``device: cpu``, then
``logits_stage`` for every epoch of seed 0. Prints each device's seconds, the epochs' validation accuracies and the
largest difference between the two devices' test logits; exits non-zero if a stage fails or the GPU's run is not
finite. Run by benchmarks/gpu_check.sh; ``--devices cpu`` alone runs anywhere.

Usage: python3 benchmarks/gpu_tiny_run.py [--devices cuda cpu]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow"))

from trustcal.data.synthetic import class_images  # noqa: E402
from trustcal.files import write_npz  # noqa: E402
from trustcal.stages import logits_stage, train_stage  # noqa: E402

EPOCHS, SEEDS = 3, [0, 1]


def run(root: Path, device: str) -> tuple[float, list[float], np.ndarray]:
    """(seconds, seed 0's validation accuracy per epoch, its last epoch's test logits) of one device's run."""
    import pandas as pd

    ckpts = [root / device / f"seed{s}" for s in SEEDS]
    histories = [c / "history.csv" for c in ckpts]
    logits = [root / device / "logits" / f"epoch{e:03d}.npz" for e in range(1, EPOCHS + 1)]
    tic = time.perf_counter()
    train_stage(
        "mnist", SEEDS, dict(epochs=EPOCHS, init="glorot", device=device), root / "splits.npz", ckpts, histories
    )
    logits_stage("mnist", root / "splits.npz", ckpts[0], logits)
    seconds = time.perf_counter() - tic
    accuracy = pd.read_csv(histories[0])["val_accuracy"].tolist()
    with np.load(logits[-1]) as z:
        return seconds, accuracy, z["test_logits"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--devices", nargs="+", default=["cuda", "cpu"])
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        x, y = class_images(2_000, (1, 28, 28), seed=0)
        xt, yt = class_images(500, (1, 28, 28), seed=1)
        write_npz(
            root / "splits.npz",
            x_train=x[:1600],
            y_train=y[:1600],
            x_val=x[1600:],
            y_val=y[1600:],
            x_test=xt,
            y_test=yt,
        )
        results = {}
        for device in args.devices:
            seconds, accuracy, logits = run(root, device)
            results[device] = logits
            print(f"{device}: {seconds:.1f} s; seed 0's validation accuracy by epoch {[round(a, 4) for a in accuracy]}")
            if not np.isfinite(logits).all():
                print(f"{device}: non-finite test logits", file=sys.stderr)
                return 1
        if len(results) == 2:
            a, b = results.values()
            print(
                f"largest |difference| of the test logits between the devices: {np.abs(a - b).max():.3g} (of max |z| {np.abs(b).max():.3g})"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
