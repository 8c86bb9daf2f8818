"""Where and how a run was made: its commit, the machine, its configuration files, its wall and training
time, where its data came from."""

from __future__ import annotations

import datetime as dt
import os
import platform
import re
import shlex
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pandas as pd
import yaml

from trustcal.reporting.verdict import PAPER_SETTINGS
from trustcal.study.costs import seed_seconds, training_makespan
from trustcal.study.names import data_notes, title
from trustcal.study.report import DataSource, Provenance


def machine() -> str:
    """``Intel(R) Xeon(R) Processor, 2 cores, Python 3.11.7, PyTorch 2.14.1``: where the report is made."""
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as lines:
            cpu = next(line.split(":", 1)[1].strip() for line in lines if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    try:
        import torch

        torch_version = f", PyTorch {torch.__version__}"
    except ImportError:
        torch_version = ""
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}{torch_version}"


def commit(run_dir: Path) -> str:
    """The short commit of ``run_dir``'s checkout, ``unknown`` outside a git repository."""
    proc = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=run_dir, capture_output=True, text=True)
    return proc.stdout.strip() or "unknown"


def wall_seconds(run_dir: Path) -> float:
    """The time Snakemake ran in ``run_dir``: over its logs that finished a job, first to last timestamp,
    added up (a run continued by a later invocation counts both, not the pause between them; 0 when no
    log finished a job)."""
    seconds = 0.0
    for log in sorted((run_dir / ".snakemake" / "log").glob("*.snakemake.log")):
        text = log.read_text(errors="replace")
        if "Finished job" not in text:
            continue
        stamps = [
            dt.datetime.strptime(" ".join(m.split()), "%a %b %d %H:%M:%S %Y")
            for m in re.findall(r"^\[(\w{3} \w{3} +\d+ [\d:]{8} \d{4})\]", text, flags=re.M)
        ]
        if len(stamps) > 1:
            seconds += (max(stamps) - min(stamps)).total_seconds()
    return seconds


def train_slots(run_dir: Path) -> int:
    """How many train jobs could run side by side in ``run_dir``'s last Snakemake invocation that ran one:
    its ``Provided cores`` ÷ the train jobs' ``threads`` (1 when no log shows a train job; a job's block
    names its threads only when they are not 1)."""
    for log in sorted((run_dir / ".snakemake" / "log").glob("*.snakemake.log"), reverse=True):
        text = log.read_text(errors="replace")
        cores = re.search(r"^Provided cores: (\d+)", text, flags=re.M)
        # a job's block: its indented lines; Snakemake leaves out "threads: 1"
        blocks = re.findall(r"^(?:local)?rule train:\n((?:    .*\n?)*)", text, flags=re.M)
        threads = [int(m.group(1)) if (m := re.search(r"^    threads: (\d+)", b, flags=re.M)) else 1 for b in blocks]
        if cores and threads:
            return max(1, int(cores.group(1)) // max(threads))
    return 1


def config_files(command: str) -> list[str]:
    """The files after ``--configfile`` in ``command``, in order (Snakemake merges them so)."""
    words, files, taking = shlex.split(command), [], False
    for w in words:
        if w in ("--configfile", "--configfiles"):
            taking = True
        elif w.startswith("-"):
            taking = False
        elif taking:
            files.append(w)
    return files


def _merge(base: dict, top: Mapping) -> dict:
    out = dict(base)
    for k, v in top.items():
        out[k] = _merge(out[k], v) if isinstance(v, Mapping) and isinstance(out.get(k), Mapping) else v
    return out


def run_config(run_dir: Path, files) -> dict:
    """The configuration of the files ``files`` (relative to ``run_dir``), merged as Snakemake merges them."""
    config: dict = {}
    for f in files:
        path = run_dir / f
        if path.is_file():
            config = _merge(config, yaml.safe_load(path.read_text(encoding="utf-8")) or {})
    return config


def data_sources(results: Path, datasets, notes: Mapping[str, Mapping] | None = None) -> list[DataSource]:
    """Per dataset: its ``raw_manifest.tsv``'s files counted by how they were verified, and its data note."""
    notes = data_notes() if notes is None else notes
    out = []
    for ds in datasets:
        manifest = results / "data" / ds / "raw_manifest.tsv"
        counts = None
        if manifest.exists():
            m = pd.read_csv(manifest, sep="\t")
            counts = m["verified"].value_counts().to_dict() if "verified" in m else {"(not recorded)": len(m)}
            counts = {str(k): int(v) for k, v in counts.items()}
        out.append(DataSource(title(ds), counts, notes.get(ds, {}).get("text", "")))
    return out


def provenance(
    run_dir: Path, command: str, histories, data: list[DataSource], remark: str = "", config: Mapping | None = None
) -> Provenance:
    """The run in ``run_dir`` started with ``command`` (``histories``: every seed's history.csv)."""
    files = config_files(command)
    config = run_config(run_dir, files) if config is None else config
    return Provenance(
        command=command,
        commit=commit(run_dir),
        configs=files,
        machine=machine(),
        wall_s=wall_seconds(run_dir),
        train_s=training_makespan(seed_seconds(histories), slots := train_slots(run_dir)),
        train_slots=slots,
        clusters=int(config.get("clusters", PAPER_SETTINGS["clusters"])),
        data=data,
        remark=remark,
    )
