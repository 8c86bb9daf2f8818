"""The warnings of the workflow's jobs, as records and as a digest a user reads.

A job that can warn (``calibrate``, ``scores``, ``external``) runs its stage inside
:func:`recorded_warnings`: each warning it logs (a line ``… [code] sentence``) is also kept as a record,
and the records go, one JSON object a line, to a sidecar file next to the job's log
(``results/logs/calibrate/{run}/seed{seed}/{calibrator}.warnings.jsonl``,
``results/logs/scores/{run}/seed{seed}.warnings.jsonl``); a job without warnings leaves none. A record::

    {"code": "calibrator_worse_on_test", "rule": "scores", "run": "mnist", "seed": 0,
     "calibrator": "isotonic", "epochs": [1, 2], "numbers": {...}, "message": "calibrator 'isotonic' ..."}

:func:`digest_lines` reads every record under a logs folder and groups them by code, run and calibrator:
one line each, with the epochs and the numbers (shown at the end of every workflow run and in the
verdict's section "Warnings").
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pandas as pd

from trustcal.calibration.table import WORSE_ON_TEST, worse_on_test
from trustcal.files import atomic_path

SUFFIX = ".warnings.jsonl"
CODE_RE = re.compile(r"\[([a-z][a-z0-9_]*)\]\s*")
CALIBRATOR_RE = re.compile(r"calibrator '([^']+)'")
EPOCH_RE = re.compile(r"epoch(\d+)\.npz\b")
CALIBRATION_NUMBERS = ("temperature", "iterations", "fit_split", "fit_nll_before", "fit_nll_after", "val_nll_after")


def warnings_path(log_path: str | Path) -> Path:
    """The sidecar of a job's log: ``x.log`` → ``x.warnings.jsonl``."""
    log_path = Path(log_path)
    return log_path.with_name(log_path.name.removesuffix(".log") + SUFFIX)


def _number(x):
    """A JSON number (NaN as null) from a NumPy or Python scalar; anything else as it is."""
    if hasattr(x, "item"):
        x = x.item()
    return None if isinstance(x, float) and math.isnan(x) else x


class _Collector(logging.Handler):
    """Each warning logged during a job, as a record (code and message; the script adds the numbers)."""

    def __init__(self, base: dict):
        super().__init__(level=logging.WARNING)
        self.base, self.records = base, []

    def emit(self, record):
        if record.name == "py.warnings":  # a library's own warnings: not the job's
            return
        try:
            text = record.getMessage().strip().splitlines()[0]
        except Exception:
            return
        found = CODE_RE.search(text)
        message = text[found.end() :] if found else text
        epoch = EPOCH_RE.search(text[: found.start()] if found else "")
        calibrator = self.base.get("calibrator") or (m.group(1) if (m := CALIBRATOR_RE.search(message)) else None)
        self.records.append(
            {
                **self.base,
                "code": found.group(1) if found else "warning",
                "calibrator": calibrator,
                "epochs": [int(epoch.group(1))] if epoch else [],
                "numbers": {},
                "message": message,
            }
        )


@contextmanager
def recorded_warnings(log_path: str | Path, rule: str, wildcards: Mapping) -> Iterator[list[dict]]:
    """Keep the warnings logged inside the block as records (the list yielded: add numbers to them), and
    write them to :func:`warnings_path` of ``log_path`` on leaving, even on an error; no warnings, no file
    (a sidecar of an earlier run of the job is removed on entering). ``wildcards``: the job's (``dataset``:
    the run, ``seed``, ``calibrator``; ``name``: an external prediction set)."""
    path = warnings_path(log_path)
    path.unlink(missing_ok=True)
    seed = wildcards.get("seed")
    base = {
        "rule": rule,
        "run": wildcards.get("dataset", wildcards.get("name")),
        "seed": int(seed) if seed is not None else None,
        "calibrator": wildcards.get("calibrator"),
    }
    collector = _Collector(base)
    root = logging.getLogger()
    root.addHandler(collector)
    try:
        yield collector.records
    finally:
        root.removeHandler(collector)
        if collector.records:
            with atomic_path(path) as tmp:
                tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in collector.records))


def add_calibration_numbers(records: list[dict], table: pd.DataFrame) -> None:
    """The numbers of a calibrate job's warnings: its row of calibration.csv for the warning's epoch, and how
    many epochs it fitted (``fitted``)."""
    rows = table.set_index("epoch")
    for r in records:
        r["numbers"]["fitted"] = len(table)
        for epoch in r["epochs"]:
            if epoch in rows.index:
                r["numbers"].update({k: _number(rows.at[epoch, k]) for k in CALIBRATION_NUMBERS if k in rows})


def add_worse_on_test_numbers(records: list[dict], scores: pd.DataFrame, *, samples: int, classes: int) -> None:
    """The numbers of each ``calibrator_worse_on_test`` warning of a scores job, by the rule of
    :func:`~trustcal.calibration.table.worse_on_test` on ``scores`` (scores.csv): the epochs it made worse
    (``epochs``), those where the NLL rose and the accuracy fell, and each epoch's raw and calibrated NLL
    and accuracy on the test split."""
    test = scores[scores["split"] == "test"]
    for r in records:
        name = r["calibrator"]
        if r["code"] != WORSE_ON_TEST or name is None:
            continue
        nll, acc, per_epoch = [], [], {}
        for epoch, rows in test.groupby("epoch"):
            found = worse_on_test(rows, [name], samples=samples, classes=classes).get(name)
            pair = rows.set_index("calibrator")
            if "none" in pair.index and name in pair.index:
                per_epoch[str(int(epoch))] = {
                    k: [_number(pair.at["none", k]), _number(pair.at[name, k])] for k in ("nll", "accuracy")
                }
            if found and found["nll"]:
                nll.append(int(epoch))
            if found and found["accuracy"]:
                acc.append(int(epoch))
        r["epochs"] = sorted(set(nll) | set(acc))
        r["numbers"] = {"fitted": len(per_epoch), "nll_epochs": nll, "accuracy_epochs": acc, "per_epoch": per_epoch}


def read_records(logs_dir: str | Path, runs: Mapping[str, Iterable[int]] | None = None) -> list[dict]:
    """Every record under ``logs_dir`` (``results/logs``), in file order; a line that is not a record is
    skipped. ``runs`` (run → its seeds): only the records of those runs and seeds (a record without a seed:
    of those runs), so that a run no longer in the configuration is left out."""
    keep = None if runs is None else {run: {int(s) for s in seeds} for run, seeds in runs.items()}
    records = []
    for path in sorted(Path(logs_dir).rglob(f"*{SUFFIX}")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if not isinstance(r, dict) or not isinstance(r.get("code"), str):
                continue
            if keep is not None and (
                r.get("run") not in keep or (r.get("seed") is not None and r["seed"] not in keep[r["run"]])
            ):
                continue
            records.append(r)
    return records


def _ranges(xs: Iterable[int]) -> str:
    """``1–3, 5``: sorted integers with their runs joined."""
    xs, out = sorted(set(xs)), []
    for x in xs:
        if out and x == out[-1][1] + 1:
            out[-1][1] = x
        else:
            out.append([x, x])
    return ", ".join(str(a) if a == b else f"{a}–{b}" for a, b in out)


def _where(group: list[dict]) -> str:
    """``mnist seed 0``, ``mnist seeds 0–2``, or the run alone (records without a seed)."""
    run = group[0].get("run") or group[0].get("rule", "?")
    seeds = sorted({r["seed"] for r in group if r.get("seed") is not None})
    if not seeds:
        return str(run)
    return f"{run} seed {seeds[0]}" if len(seeds) == 1 else f"{run} seeds {_ranges(seeds)}"


def _fitted(group: list[dict]) -> int:
    """Epochs fitted over the group's seeds (each seed's job counts once)."""
    return sum({(r.get("rule"), r.get("seed")): r["numbers"].get("fitted", 0) for r in group}.values())


def _worse_lines(name: str, group: list[dict]) -> list[str]:
    lines = []
    seeds = len({r.get("seed") for r in group}) > 1
    for key, verb, label in (("nll", "raised", "NLL"), ("accuracy", "lowered", "accuracy")):
        hits = [
            (r.get("seed"), e, r["numbers"]["per_epoch"].get(str(e), {}).get(key))
            for r in group
            for e in r["numbers"].get(f"{key}_epochs", [])
        ]
        hits = [(s, e, v) for s, e, v in hits if v and None not in v]
        if not hits:
            continue
        sign = 1 if key == "nll" else -1
        seed, epoch, (before, after) = max(hits, key=lambda h: sign * (h[2][1] - h[2][0]))
        worst = f"seed {seed}, epoch {epoch}" if seeds else f"epoch {epoch}"
        lines.append(
            f"{name} {verb} the test {label} in {len(hits)} of {_fitted(group)} epochs of {_where(group)}: "
            f"{before:.3f} → {after:.3f} (worst, {worst})"
        )
    return lines or [f"{name} made the test predictions worse in {_where(group)}: {group[0]['message']}"]


def _span(values: list) -> str:
    values = [v for v in values if isinstance(v, int | float)]
    if not values:
        return ""
    lo, hi = min(values), max(values)
    return f"{lo:.4g}" if lo == hi else f"{lo:.4g}–{hi:.4g}"


def _fit_line(code: str, name: str, group: list[dict]) -> str:
    """One line for a calibrate job's warnings of one code: in how many epochs, which, and the numbers."""
    epochs = sorted({e for r in group for e in r.get("epochs", [])})
    n = len([e for r in group for e in r.get("epochs", [])]) or len(group)
    where = f"in {n} of {_fitted(group) or '?'} epochs ({_ranges(epochs)}) of {_where(group)}"
    nums = [r.get("numbers", {}) for r in group]
    if code == "temperature_at_bound":
        return f"{name}: T at a bound of calibration.t_min/t_max {where}: T = {_span([x.get('temperature') for x in nums])}"
    if code == "calibrator_at_bound":
        return f"{name}: a parameter at a bound of calibration.t_min/t_max {where}"
    if code == "calibrator_not_converged":
        return (
            f"{name} did not converge {where} (stopped after {_span([x.get('iterations') for x in nums])} iterations)"
        )
    before = _span([x.get("fit_nll_before") for x in nums])
    return f"{name} fell back to the identity map {where}: the fitted map raised the fit split's NLL (raw {before})"


FIT_CODES = ("temperature_at_bound", "calibrator_at_bound", "calibrator_not_converged", "calibrator_identity_fallback")


def digest(records: Iterable[dict]) -> list[str]:
    """One line per code, run and calibrator of ``records`` (:func:`read_records`), in the order first met:
    how many epochs, which, of which seeds, with the numbers; a warning of another kind, its first message
    (and how many more)."""
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        r.setdefault("numbers", {})
        groups.setdefault((r["code"], r.get("run"), r.get("calibrator")), []).append(r)
    lines = []
    for (code, _, name), group in groups.items():
        if code == WORSE_ON_TEST and name:
            lines += _worse_lines(name, group)
        elif code in FIT_CODES and name:
            lines.append(_fit_line(code, name, group))
        else:
            more = f" (and {len(group) - 1} more)" if len(group) > 1 else ""
            lines.append(f"[{code}] {_where(group)}: {group[0].get('message', '')}{more}")
    return lines


def digest_lines(logs_dir: str | Path, runs: Mapping[str, Iterable[int]] | None = None) -> list[str]:
    """:func:`digest` of the records under ``logs_dir`` (``results/logs``); none for a folder without any."""
    return digest(read_records(logs_dir, runs)) if Path(logs_dir).is_dir() else []


def digest_text(lines: list[str], logs_dir: str | Path = "results/logs") -> str:
    """The console's block: a heading and the lines; empty without lines."""
    if not lines:
        return ""
    head = f"Warnings of this workflow's jobs ({len(lines)}; the records: {Path(logs_dir)}/**/*{SUFFIX}):"
    return "\n".join([head, *(f"  - {line}" for line in lines)])
