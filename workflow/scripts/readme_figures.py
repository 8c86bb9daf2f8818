"""Regenerate the README's result figures: a small real-data run of the workflow.

The machines this project is developed on hold only the 10,000 official MNIST
*test* images (``../shared/datasets/mnist-test``), so the run trains the
paper's MLP on the first 8,000 of them (the workflow keeps the last 10 %,
800, for validation) and tests on the last 2,000, for 30 epochs and 3 seeds
(about 10 minutes on 2 cores). The PNGs are copied here with a 128-colour
palette so that each stays under ~200 KB.

    .venv/bin/python workflow/scripts/readme_figures.py [WORKDIR]

(Run by hand, not by the workflow; the figures land in results/readme/.)
"""

import gzip
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import yaml
from PIL import Image

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "results" / "readme"
MNIST_TEST = REPO.parent / "shared" / "datasets" / "mnist-test"
FIGURES = ("trust_grid", "loss_curves", "calibration_metrics", "reliability", "cluster_sweep")
CONFIG = {
    "datasets": ["mnist"], "data_dir": "data", "download": False, "verify_checksums": False,
    "epochs": 30, "seeds": [0, 1, 2], "device": "cpu", "trust": {"sweep_epochs": [1, 5, 10, 20]},
}


def idx(path: Path, header: int) -> np.ndarray:
    return np.frombuffer(gzip.open(path).read()[header:], np.uint8)


def main(workdir: Path) -> None:
    sys.path.insert(0, str(REPO / "workflow"))
    from trustcal.synthetic import write_idx

    x = idx(MNIST_TEST / "t10k-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28)
    y = idx(MNIST_TEST / "t10k-labels-idx1-ubyte.gz", 8)
    raw = workdir / "data" / "MNIST" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for prefix, sl in (("train", slice(0, 8000)), ("t10k", slice(8000, None))):
        write_idx(raw / f"{prefix}-images-idx3-ubyte", x[sl])
        write_idx(raw / f"{prefix}-labels-idx1-ubyte", y[sl])
    (workdir / "small.yaml").write_text(yaml.safe_dump(CONFIG))
    subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"),
                    "--configfile", "small.yaml", "--cores", "2"], cwd=workdir, check=True)
    out = OUT
    for name in FIGURES:
        im = Image.open(workdir / "results" / "figures" / "mnist" / f"{name}.png").convert("RGB")
        im.quantize(colors=128, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
            out / f"mnist_{name}.png", optimize=True)
    shutil.copy(workdir / "results" / "reproduction.md", out / "reproduction_small_run.md")
    print(f"figures written to {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/trustcal-readme-run").resolve())
