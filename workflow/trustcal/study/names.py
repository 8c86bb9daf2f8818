"""How the study names a run: its dataset's registered title, the label of its data note, its place in order."""

from __future__ import annotations

import functools
from pathlib import Path

import yaml

from trustcal.registry import DATASETS

# The study's configuration: its data_notes say where a dataset's files come from, beside its numbers.
STUDY_CONFIG = Path(__file__).resolve().parents[2] / "study" / "config.yaml"


@functools.cache
def data_notes() -> dict[str, dict[str, str]]:
    """dataset → {label, text}: the ``data_notes`` of workflow/study/config.yaml ({} without that file)."""
    if not STUDY_CONFIG.is_file():
        return {}
    return (yaml.safe_load(STUDY_CONFIG.read_text(encoding="utf-8")) or {}).get("data_notes") or {}


def title(ds: str) -> str:
    """How the report names the run ``ds``: its dataset's registered title (``CIFAR-10``), else the name."""
    return DATASETS[ds].title if ds in DATASETS else ds


def note_label(ds: str) -> str:
    """`` (JPEG-derived images)``: the label of the run's data note, in brackets, or nothing."""
    label = data_notes().get(ds, {}).get("label")
    return f" ({label})" if label else ""


def labelled(ds: str) -> str:
    """The run's title with its data note's label: ``CIFAR-10 (JPEG-derived images)``."""
    return title(ds) + note_label(ds)


def order(ds: str) -> tuple[int, str]:
    """Registered datasets in the registry's order, then the other runs by name."""
    return (list(DATASETS).index(ds), ds) if ds in DATASETS else (len(DATASETS), ds)
