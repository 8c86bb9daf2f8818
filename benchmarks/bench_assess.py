"""Time ``trustcal assess`` on one prediction file, with and without its figures, in one run.

The command is run as a user runs it (a fresh ``python -m trustcal`` process each time, start-up and
imports included) on 10,000 × 10 synthetic predictions (an overconfident model, probabilities in a
``.npy`` file with the labels beside), without and with validation predictions (``--validation``: the
temperature is fitted and every table and figure shows before and after). Per input, the variants are
run in turn, ``--repeats`` rounds, so that a load on the machine falls on all of them alike:

- ``figures``: the defaults (PNG figures, 200 bootstrap resamples);
- ``figures+pdf``: ``--figure-formats png,pdf``;
- ``no-figures``: ``--no-figures``;
- ``tables-only``: ``--no-figures --bootstrap 0``.

Reported per input and variant: the median and the fastest wall time, the median CPU time (this
process's children: user + system, the figure workers included), and the ratio of each median wall time
to that of ``no-figures`` in the same run.

``--series FILES`` (``--series-files``; 1000 without a number) times a long epoch series instead: a
directory of FILES prediction files ``epochNNNN.npy`` of n × k probabilities (one test set, its labels in
one ``.npy`` beside the directory; epoch e's model is :func:`predictions`' with its own noise and
sharpened by a factor growing with e, so that the epochs differ), assessed as a user does (a fresh
process, ``trustcal assess DIR --labels labels.npy``, the default bootstrap of 200 resamples) with the
default figures and with ``--no-figures``. Reported per variant: the wall and CPU time, the time per file,
the phases that reported their duration on stderr (reading, assessing, figures: off a terminal a phase of
5 s or more says how long it took), the load average, and the wall time against the target (60 s
for 1,000 files on two cores); written to ``benchmarks/results/assess_series.csv``.

``--rows N`` times one large file instead: a CSV of N rows of k probabilities printed with four decimals
and the label (72 bytes a row at k = 10, so 72 MB for a million rows; :func:`predictions`' model),
assessed as a user does (a fresh process, ``trustcal assess FILE --out DIR``, the default bootstrap of 200
resamples) with its default figures and with ``--no-figures``. Reported per variant: the wall and CPU
time, the peak resident memory (``ru_maxrss`` of the command as ``wait4`` reports it: the largest of its
processes, the forked figure workers included; what ``/usr/bin/time -v`` reports), the peak of the
proportional set size of all its processes together (``Pss`` of ``/proc/PID/smaps_rollup``, sampled every
0.2 s: shared pages counted once), the longest time stderr stayed silent once the first progress line was
due (5 s), and the phases it reported; written to ``benchmarks/results/assess_rows.csv``.

    python benchmarks/bench_assess.py [--n 10000] [--k 10] [--repeats 3] [--out CSV]
    python benchmarks/bench_assess.py --series 1000 [--repeats 1] [--out CSV]
    python benchmarks/bench_assess.py --rows 1000000 [--repeats 1] [--out CSV]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

VARIANTS = {
    "figures": [],
    "figures+pdf": ["--figure-formats", "png,pdf"],
    "no-figures": ["--no-figures"],
    "tables-only": ["--no-figures", "--bootstrap", "0"],
}


def predictions(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Probabilities, labels and logits of an overconfident model that is right about 60 % of the time."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    logits = rng.normal(0, 1.5, (n, k))
    logits[np.arange(n), labels] += 2.5
    logits *= 1.8
    z = logits - logits.max(axis=1, keepdims=True)
    probs = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    return probs, labels, logits


SERIES_VARIANTS = {"figures": [], "no-figures": ["--no-figures"]}
SERIES_TARGET_S = 60.0  # the target: 1,000 files of 10,000 x 10, default bootstrap, two cores
SERIES_TARGET_FILES = 1000


def write_series(directory: Path, files: int, n: int, k: int) -> Path:
    """``files`` epochs of one test set as ``directory/epochNNNN.npy`` (probabilities), and the labels
    file beside the directory (returned). Epoch e's logits are :func:`predictions`' own for seed e,
    scaled by 0.6 + 0.8 e / files: the model grows sharper (more overconfident) over the series."""
    directory.mkdir(parents=True)
    _, labels, _ = predictions(n, k, seed=0)
    for epoch in range(1, files + 1):
        rng = np.random.default_rng(epoch)
        logits = rng.normal(0, 1.5, (n, k))
        logits[np.arange(n), labels] += 2.5
        logits *= 1.8 * (0.6 + 0.8 * epoch / files)
        z = np.exp(logits - logits.max(axis=1, keepdims=True))
        np.save(directory / f"epoch{epoch:04d}.npy", z / z.sum(axis=1, keepdims=True))
    labels_file = directory.parent / "labels.npy"
    np.save(labels_file, labels)
    return labels_file


PHASE_LINE = re.compile(r"^(\w+): (\d+) \w+ in (?:(\d+) h (\d+) min|(\d+) min (\d+) s|([\d.]+) s)$")


def phase_seconds(stderr: str) -> dict[str, float]:
    """The phases that said how long they took (``reading: 1000 files in 12.3 s``, the plain lines of
    ``trustcal assess`` off a terminal), in seconds."""
    phases = {}
    for line in stderr.splitlines():
        m = PHASE_LINE.match(line.strip())
        if m:
            h, hm, mm, ms, s = m.group(3, 4, 5, 6, 7)
            seconds = float(s) if s else 60 * float(mm) + float(ms) if mm else 3600 * float(h) + 60 * float(hm)
            phases[m.group(1)] = seconds
    return phases


def run(args: list[str], out: Path, quiet: bool = True) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the process and its children, its stderr) of one ``trustcal assess``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "trustcal", "assess", *args, "--out", str(out), *(["--quiet"] if quiet else [])],
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"trustcal assess {' '.join(args)} failed:\n{proc.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stderr


def bench_series(files: int, n: int, k: int, repeats: int, out: Path, variants=tuple(SERIES_VARIANTS)) -> None:
    """Time ``trustcal assess`` on a series of ``files`` files (module docstring), write ``out``."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        t0 = time.perf_counter()
        labels = write_series(tmp / "series", files, n, k)
        print(f"wrote {files} files of {n} x {k} in {time.perf_counter() - t0:.1f} s", flush=True)
        given = [str(tmp / "series"), "--labels", str(labels)]
        for rep in range(repeats):
            for variant in variants:
                extra = SERIES_VARIANTS[variant]
                load = os.getloadavg()[0]
                wall, cpu, stderr = run(given + extra, tmp / f"out-{rep}-{variant}", quiet=False)
                phases = phase_seconds(stderr)
                rows.append(
                    dict(
                        files=files,
                        n=n,
                        k=k,
                        variant=variant,
                        repeat=rep,
                        wall_s=wall,
                        cpu_s=cpu,
                        per_file_ms=1000 * wall / files,
                        reading_s=phases.get("reading"),
                        assessing_s=phases.get("assessing"),
                        figures_s=phases.get("figures"),
                        load_before=load,
                        load_after=os.getloadavg()[0],
                    )
                )
                print(f"  {variant}: {wall:.1f} s wall, {cpu:.1f} s CPU, phases {phases}", flush=True)
    table = pd.DataFrame(rows)
    out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(out, index=False)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"trustcal assess on a series of {files} files of {n} x {k}, default bootstrap, {cores} cores")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    target = SERIES_TARGET_S * files / SERIES_TARGET_FILES
    for variant, wall in table.groupby("variant", sort=False)["wall_s"].median().items():
        print(
            f"{variant}: {wall:.1f} s against the target of {target:.0f} s"
            + (f" (60 s for {SERIES_TARGET_FILES} files, scaled)" if files != SERIES_TARGET_FILES else "")
            + f": {'within' if wall <= target else 'over'} ({wall / target:.2f}x)"
        )
    print(f"written: {out}")


ROWS_VARIANTS = {"figures": [], "no-figures": ["--no-figures"]}
FIRST_LINE_DUE_S = 5.0  # off a terminal, trustcal assess says nothing for this long; then a line every 10 s


def write_rows(path: Path, n: int, k: int) -> Path:
    """``n`` rows of :func:`predictions`' probabilities, four decimals each, and the label, as a CSV
    (``p0 … p{k−1}, label``), written a block of rows at a time."""
    probs, labels, _ = predictions(n, k, seed=0)
    with open(path, "w") as f:
        f.write(",".join(f"p{c}" for c in range(k)) + ",label\n")
        for start in range(0, n, 100_000):
            block = np.column_stack([probs[start : start + 100_000], labels[start : start + 100_000]])
            np.savetxt(f, block, fmt=["%.4f"] * k + ["%d"], delimiter=",")
    return path


def _tree(pid: int) -> list[int]:
    """``pid`` and every process below it (from /proc/PID/task/*/children)."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                todo += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                pass
    return found


def _pss_kb(pid: int) -> int:
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0
    m = re.search(r"^Pss:\s+(\d+) kB", text, re.M)
    return int(m.group(1)) if m else 0


def run_measured(args: list[str], out: Path) -> dict:
    """One ``trustcal assess`` in a fresh process, measured: wall and CPU seconds, peak RSS of its largest
    process (wait4's ``ru_maxrss``), peak PSS of all its processes (sampled), the longest silence of its
    stderr after the first progress line was due, and its stderr."""
    lines: list[tuple[float, str]] = []
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "trustcal", "assess", *args, "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )

    def read() -> None:
        for line in proc.stderr:
            lines.append((time.perf_counter() - t0, line.rstrip("\n")))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    peak_pss = 0
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        peak_pss = max(peak_pss, sum(_pss_kb(p) for p in _tree(proc.pid)))
        time.sleep(0.2)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    reader.join()
    stderr = "\n".join(line for _, line in lines)
    if proc.returncode != 0:
        raise SystemExit(f"trustcal assess {' '.join(args)} failed:\n{stderr}")
    said = [FIRST_LINE_DUE_S] + [t for t, _ in lines if t >= FIRST_LINE_DUE_S] + [wall]
    return dict(
        wall_s=wall,
        cpu_s=usage.ru_utime + usage.ru_stime,
        peak_rss_mb=usage.ru_maxrss / 1024,  # kB on Linux
        peak_pss_mb=peak_pss / 1024,
        longest_silence_s=max(b - a for a, b in zip(said, said[1:])),
        stderr=stderr,
    )


def bench_rows(n: int, k: int, repeats: int, out: Path, variants=tuple(ROWS_VARIANTS)) -> None:
    """Time and measure ``trustcal assess`` on one CSV of ``n`` × ``k`` (module docstring), write ``out``."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        t0 = time.perf_counter()
        path = write_rows(tmp / f"preds_{n}.csv", n, k)
        size = path.stat().st_size
        print(f"wrote {n} x {k} ({size / 1e6:.0f} MB) in {time.perf_counter() - t0:.1f} s", flush=True)
        for rep in range(repeats):
            for variant in variants:
                load = os.getloadavg()[0]
                got = run_measured([str(path), *ROWS_VARIANTS[variant]], tmp / f"out-{rep}-{variant}")
                phases = phase_seconds(got.pop("stderr"))
                rows.append(
                    dict(
                        rows=n,
                        k=k,
                        csv_mb=size / 1e6,
                        variant=variant,
                        repeat=rep,
                        **got,
                        reading_s=phases.get("reading"),
                        assessing_s=phases.get("assessing"),
                        figures_s=phases.get("figures"),
                        load_before=load,
                        load_after=os.getloadavg()[0],
                    )
                )
                print(
                    f"  {variant}: {got['wall_s']:.1f} s wall, {got['cpu_s']:.1f} s CPU, peak RSS "
                    f"{got['peak_rss_mb']:.0f} MB, peak PSS {got['peak_pss_mb']:.0f} MB, longest silence "
                    f"{got['longest_silence_s']:.1f} s, phases {phases}",
                    flush=True,
                )
    table = pd.DataFrame(rows)
    out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(out, index=False)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"trustcal assess on one CSV of {n} x {k}, default bootstrap, {cores} cores")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    print(f"written: {out}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10_000, help="test samples (default 10000)")
    parser.add_argument("--k", type=int, default=10, help="classes (default 10)")
    parser.add_argument("--repeats", type=int, help="rounds over the variants (default 3; a series: 1)")
    parser.add_argument(
        "--series",
        "--series-files",
        dest="series",
        type=int,
        nargs="?",
        const=SERIES_TARGET_FILES,
        metavar="FILES",
        help=f"time a series of FILES prediction files instead (default {SERIES_TARGET_FILES}; one round "
        "unless --repeats is given)",
    )
    parser.add_argument(
        "--series-variants",
        type=lambda text: text.split(","),
        default=list(SERIES_VARIANTS),
        metavar="LIST",
        help=f"with --series: the variants to run, comma-separated (default {','.join(SERIES_VARIANTS)})",
    )
    parser.add_argument(
        "--rows",
        type=int,
        metavar="N",
        help="time one CSV of N rows (of --k probabilities, four decimals, and the label) instead: wall time, "
        "peak memory and the longest silence of the progress (one round unless --repeats is given)",
    )
    parser.add_argument(
        "--rows-variants",
        type=lambda text: text.split(","),
        default=list(ROWS_VARIANTS),
        metavar="LIST",
        help=f"with --rows: the variants to run, comma-separated (default {','.join(ROWS_VARIANTS)})",
    )
    parser.add_argument(
        "--out", type=Path, help="CSV (default benchmarks/results/assess.csv, assess_series.csv, assess_rows.csv)"
    )
    args = parser.parse_args(argv)
    if args.rows is not None:
        unknown = set(args.rows_variants) - set(ROWS_VARIANTS)
        if unknown:
            parser.error(
                f"unknown --rows-variants {', '.join(sorted(unknown))}; choose from {', '.join(ROWS_VARIANTS)}"
            )
        out = args.out or Path("benchmarks/results/assess_rows.csv")
        bench_rows(args.rows, args.k, args.repeats or 1, out, args.rows_variants)
        return
    if args.series is not None:
        out = args.out or Path("benchmarks/results/assess_series.csv")
        unknown = set(args.series_variants) - set(SERIES_VARIANTS)
        if unknown:
            parser.error(
                f"unknown --series-variants {', '.join(sorted(unknown))}; choose from {', '.join(SERIES_VARIANTS)}"
            )
        bench_series(args.series, args.n, args.k, args.repeats or 1, out, args.series_variants)
        return
    args.out = args.out or Path("benchmarks/results/assess.csv")
    args.repeats = args.repeats or 3

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        probs, labels, _ = predictions(args.n, args.k, seed=0)
        np.save(tmp / "probs.npy", probs)
        np.savetxt(tmp / "labels.txt", labels, fmt="%d")
        val_probs, val_labels, _ = predictions(args.n // 2, args.k, seed=1)
        np.savez(tmp / "val.npz", probs=val_probs, labels=val_labels)
        inputs = {
            "one file": [str(tmp / "probs.npy"), "--labels", str(tmp / "labels.txt")],
            "one file + validation": [
                str(tmp / "probs.npy"),
                "--labels",
                str(tmp / "labels.txt"),
                "--validation",
                str(tmp / "val.npz"),
            ],
        }
        run(inputs["one file"] + VARIANTS["tables-only"], tmp / "warm-up")  # the file system's caches
        for rep in range(args.repeats):
            for source, given in inputs.items():
                for variant, extra in VARIANTS.items():
                    wall, cpu, _ = run(given + extra, tmp / f"out-{rep}-{variant}")
                    rows.append(dict(input=source, variant=variant, repeat=rep, wall_s=wall, cpu_s=cpu))
    timings = pd.DataFrame(rows)
    summary = (
        timings.groupby(["input", "variant"], sort=False)
        .agg(median_wall_s=("wall_s", "median"), fastest_wall_s=("wall_s", "min"), median_cpu_s=("cpu_s", "median"))
        .reset_index()
    )
    base = summary[summary["variant"] == "no-figures"].set_index("input")["median_wall_s"]
    summary["wall_vs_no_figures"] = summary["median_wall_s"] / summary["input"].map(base)
    summary.insert(2, "n", args.n)
    summary.insert(3, "k", args.k)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    summary.to_csv(args.out, index=False)

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"trustcal assess on {args.n} x {args.k} predictions, {args.repeats} rounds, {cores} cores")
    print(summary.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
