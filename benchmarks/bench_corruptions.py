"""Time CIFAR-10-C's corruptions (:mod:`trustcal.shift`) on 10,000 CIFAR-sized images, every severity.

The images are CIFAR-10's test split when the shared folder holds it (``../shared`` beside the
repository, or ``$TRUSTCAL_SHARED``: ``datasets/cifar10-jpeg/cifar10-jpg.tar.gz``, its ``test/``
JPEGs in file-name order), else synthetic ones (:func:`trustcal.data.synthetic.class_images`),
or ``--images synthetic`` asks for those. Each available corruption runs at severities 1–5 on all of
them, a ``numpy.random.Generator`` seeded per severity, through :func:`trustcal.shift.corrupt` in
the project's NCHW layout. Reported per corruption: the wall and CPU seconds of each severity and
their sum; then the total. The corruptions are independent: ``--jobs 2`` runs them in two worker
processes (a corruption at a time each) and reports the wall time of the whole set beside the
summed CPU time.

``--reference make_cifar_c.py --reference-python PY`` also times hendrycks/robustness's
``ImageNet-C/create_c/make_cifar_c.py`` in the interpreter PY (one with scikit-image, OpenCV and
Wand over ImageMagick): its corruption functions, loaded from the file (what NumPy 2 and
scikit-image ≥ 0.19 no longer accept read as its replacement: ``np.float_``, ``np.fromstring``,
``multichannel=True``), applied one image at a time as its main loop applies them, on the first
``--reference-n`` images (1,000 by default) at every severity, in one process; its seconds are
scaled to the number of images timed here.

    python benchmarks/bench_corruptions.py [--n 10000] [--images auto|synthetic] [--jobs 1] [--out CSV]
        [--reference make_cifar_c.py --reference-python PY --reference-n 1000]

Written to ``benchmarks/results/corruptions.csv`` (one row per corruption and severity).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core each, before NumPy loads
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tarfile  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from trustcal.shift import SEVERITIES, available, corrupt, unavailable  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TRUSTCAL_SHARED", REPO.parent / "shared"))
CIFAR_JPEG = SHARED / "datasets" / "cifar10-jpeg" / "cifar10-jpg.tar.gz"


def cifar_test_images(archive: Path, n: int) -> np.ndarray:
    """The first ``n`` test images of the shared CIFAR-10 JPEG archive, file-name order, uint8 NCHW."""
    from PIL import Image

    found = []
    with tarfile.open(archive) as tar:
        for member in tar:
            parts = member.name.split("/")
            if member.isfile() and len(parts) == 3 and parts[0] == "test":
                found.append((member.name, tar.extractfile(member).read()))
    found.sort()
    pixels = [np.asarray(Image.open(io.BytesIO(data)).convert("RGB"), np.uint8) for _, data in found[:n]]
    return np.stack(pixels).transpose(0, 3, 1, 2).copy()


def load_images(kind: str, n: int) -> tuple[np.ndarray, str]:
    if kind == "auto" and CIFAR_JPEG.is_file():
        images = cifar_test_images(CIFAR_JPEG, n)
        if len(images) == n:
            return images, f"CIFAR-10 test split ({CIFAR_JPEG})"
    from trustcal.data.synthetic import class_images

    return class_images(n, (3, 32, 32), seed=0)[0], "synthetic (trustcal.data.synthetic.class_images)"


def time_corruption(name: str, images: np.ndarray) -> list[tuple[int, float, float]]:
    """(severity, wall s, CPU s) of one corruption at each severity."""
    rows = []
    for severity in SEVERITIES:
        rng = np.random.default_rng(1000 + severity)
        wall, cpu = time.perf_counter(), time.process_time()
        corrupt(name, images, severity, rng)
        rows.append((severity, time.perf_counter() - wall, time.process_time() - cpu))
    return rows


_WORKER_IMAGES: np.ndarray | None = None


def _init_worker(path: str) -> None:
    global _WORKER_IMAGES
    _WORKER_IMAGES = np.load(path)


def _time_in_worker(name: str):
    return name, time_corruption(name, _WORKER_IMAGES)


# Run by the reference's interpreter: argv = make_cifar_c.py, images .npy (NCHW), corruption names (JSON).
# Prints {name: [seconds per severity]}.
REFERENCE_TIMER = r"""
import ast, ctypes, json, sys, time, types, warnings
from io import BytesIO
import numpy as np
warnings.simplefilter("ignore")
source, images, names = open(sys.argv[1]).read(), np.load(sys.argv[2]), json.loads(sys.argv[3])
import skimage, skimage.util, skimage.color, skimage.filters, cv2
from PIL import Image
from scipy.ndimage import zoom, map_coordinates
from wand.image import Image as WandImage
from wand.api import library

library.MagickMotionBlurImage.argtypes = (ctypes.c_void_p, ctypes.c_double, ctypes.c_double, ctypes.c_double)

class MotionImage(WandImage):
    def motion_blur(self, radius=0.0, sigma=0.0, angle=0.0):
        library.MagickMotionBlurImage(self.wand, radius, sigma, angle)

numpy = types.SimpleNamespace(**{k: getattr(np, k) for k in dir(np) if not k.startswith("__")})
numpy.float_, numpy.fromstring = np.float64, lambda data, dtype: np.frombuffer(data, dtype)

def gaussian(image, sigma=1, multichannel=None, **kw):
    return skimage.filters.gaussian(image, sigma=sigma, channel_axis=-1 if multichannel else None, **kw)

names_space = dict(np=numpy, sk=skimage, gaussian=gaussian, cv2=cv2, PILImage=Image, BytesIO=BytesIO,
                   scizoom=zoom, map_coordinates=map_coordinates, MotionImage=MotionImage)
for node in ast.parse(source).body:
    if isinstance(node, ast.FunctionDef):
        exec(compile(ast.Module(body=[node], type_ignores=[]), sys.argv[1], "exec"), names_space)
pil = [Image.fromarray(image.transpose(1, 2, 0)) for image in images]
np.random.seed(0)
out = {}
for name in names:
    function, seconds = names_space[name], []
    for severity in range(1, 6):
        start = time.process_time()
        for image in pil:
            np.uint8(function(image, severity))
        seconds.append(time.process_time() - start)
    out[name] = seconds
print(json.dumps(out))
"""


def time_reference(script: Path, python: str, images: np.ndarray, names: list[str]) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "images.npy"
        np.save(path, images)
        done = subprocess.run(
            [python, "-c", REFERENCE_TIMER, str(script), str(path), json.dumps(names)],
            capture_output=True,
            text=True,
            check=False,
        )
    if done.returncode != 0:
        raise SystemExit(f"the reference timer failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="images (default 10,000)")
    parser.add_argument("--images", choices=("auto", "synthetic"), default="auto")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes, a corruption at a time each")
    parser.add_argument("--only", nargs="*", help="these corruptions only")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "corruptions.csv")
    parser.add_argument("--reference", type=Path, help="make_cifar_c.py, to time beside")
    parser.add_argument("--reference-python", default=sys.executable, help="an interpreter that can run it")
    parser.add_argument("--reference-n", type=int, default=1000, help="images the reference is timed on")
    args = parser.parse_args(argv)

    images, source = load_images(args.images, args.n)
    names = args.only or available()
    print(f"{len(images):,} images: {source}; {len(names)} corruptions × severities 1–5, {args.jobs} process(es)")
    for name, reason in unavailable().items():
        print(f"  left out: {name}: {reason}")

    results: dict[str, list[tuple[int, float, float]]] = {}
    wall = time.perf_counter()
    if args.jobs <= 1:
        for name in names:
            results[name] = time_corruption(name, images)
            print(f"  {name:18s} {sum(r[1] for r in results[name]):7.1f} s", flush=True)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "images.npy"
            np.save(path, images)
            with ProcessPoolExecutor(args.jobs, initializer=_init_worker, initargs=(str(path),)) as pool:
                for name, rows in pool.map(_time_in_worker, names):
                    results[name] = rows
                    print(f"  {name:18s} {sum(r[1] for r in rows):7.1f} s", flush=True)
    total_wall = time.perf_counter() - wall

    reference: dict[str, list[float]] = {}
    if args.reference:
        sample = images[: args.reference_n]
        print(f"timing the reference on {len(sample):,} images …", flush=True)
        reference = time_reference(args.reference, args.reference_python, sample, names)
        scale = len(images) / len(sample)
        reference = {name: [s * scale for s in seconds] for name, seconds in reference.items()}

    lines = ["corruption,severity,wall_s,cpu_s,reference_cpu_s"]
    print(f"\n{'corruption':18s} " + " ".join(f"{'s' + str(s):>6s}" for s in SEVERITIES) + "   total  reference")
    for name in names:
        rows = results[name]
        ref = reference.get(name)
        for severity, w, c in rows:
            r = f"{ref[severity - 1]:.2f}" if ref else ""
            lines.append(f"{name},{severity},{w:.3f},{c:.3f},{r}")
        ref_total = f"{sum(ref):9.0f}" if ref else ""
        print(
            f"{name:18s} " + " ".join(f"{w:6.1f}" for _, w, _ in rows) + f" {sum(r[1] for r in rows):7.1f} {ref_total}"
        )
    cpu = sum(c for rows in results.values() for _, _, c in rows)
    ref_all = f", reference {sum(sum(v) for v in reference.values()):.0f} s of CPU" if reference else ""
    print(f"total: {total_wall:.1f} s wall with {args.jobs} process(es), {cpu:.1f} s of CPU{ref_all}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
