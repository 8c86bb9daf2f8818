"""The study's number formats and Markdown tables."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np


def md_table(header: Sequence[str], rows: Iterable[Sequence]) -> list[str]:
    """A Markdown table, a line each; ``|`` inside a cell escaped."""
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows),
    ]


def ms(values) -> str:
    """``0.523 ± 0.011``: mean ± sd (ddof 1) of ``values`` to 3 decimals; the value alone for one."""
    v = np.asarray(values, dtype=float)
    if len(v) == 1:
        return f"{v[0]:.3f}"
    return f"{v.mean():.3f} ± {v.std(ddof=1):.3f}"


def fmt(x) -> str:
    """3 significant digits; ``–`` for a missing value."""
    return "–" if x is None or not np.isfinite(x) else f"{x:.3g}"


def duration(seconds: float) -> str:
    """``2 h 48 min``, ``6 min 40 s`` or ``26.5 s``; ``–`` for a missing value."""
    if not np.isfinite(seconds):
        return "–"
    if seconds >= 3600:
        return f"{int(seconds // 3600)} h {int(round(seconds % 3600 / 60)):02d} min"
    if seconds >= 60:
        return f"{int(seconds // 60)} min {int(round(seconds % 60)):02d} s"
    return f"{seconds:.1f} s"


def listing(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1] if items else ""
