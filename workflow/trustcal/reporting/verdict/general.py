"""The verdict beyond the paper's two runs: its statements about training and calibration in general, judged on
every run of the workflow (any dataset × network, docs/claims.md "General claims").

A claim of the claims file that is a case of a general statement (trust is higher after temperature scaling
than before at every epoch; disbelief rises before calibration as training goes on; …) names it with
``general:``. The general claim takes the measure and decision of the first claim that names it, with a
text without a dataset, and is judged on each run present — the paper's ``mnist`` and ``cifar10`` as well
as ``fashion_mnist``, ``cifar10_resnet20`` or any other — with the same intervals (paired where the claim
compares the two calibration states) and decision rule as the paper's claims. Levels (“trust ≈ 0.65”) are
never general: they are set by the number of classes K and of clusters M (:func:`level_dependence`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import pandas as pd

from trustcal.reporting.verdict.claimfile import Claim
from trustcal.reporting.verdict.evaluation import GENERAL_SCOPE, evaluate
from trustcal.reporting.verdict.runs import Run, perfect_classifier_opinion


def _unique(xs: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(x for x in xs if x))


@dataclass(frozen=True)
class GeneralClaim:
    """A statement about training and calibration in general, and the paper's claims that are cases of it."""

    id: str
    text: str
    cases: tuple[Claim, ...]  # the claims that name it, in file order; the first defines the measure

    @property
    def claim(self) -> Claim:
        """The claim whose measure and decision the general claim takes."""
        return self.cases[0]

    @property
    def section(self) -> str:
        return "; ".join(_unique(c.section for c in self.cases))

    def on(self, run: str) -> Claim:
        """The general claim bound to the run ``run``: judged there as a claim of the file is on its dataset."""
        return replace(
            self.claim,
            id=self.id,
            dataset=run,
            section=self.section,
            quote=" ".join(_unique(c.quote for c in self.cases)),
            text=self.text,
            versus=None,
            also=tuple(_unique(a for c in self.cases for a in c.also)),
            general="",
            general_text="",
        )


def general_claims(claims: Sequence[Claim]) -> tuple[GeneralClaim, ...]:
    """The general claims the ``claims`` name (``general:``), in the order of their first claim. Their text is
    the first ``general_text`` given (the first claim's own text where none is)."""
    cases: dict[str, list[Claim]] = {}
    for c in claims:
        if c.general:
            cases.setdefault(c.general, []).append(c)
    out = []
    for gid, cs in cases.items():
        text = next((c.general_text for c in cs if c.general_text), cs[0].text)
        out.append(GeneralClaim(gid, text, tuple(cs)))
    return tuple(out)


def run_order(runs: Iterable[str], claims: Sequence[Claim] = ()) -> list[str]:
    """The runs as the table's columns: those the ``claims`` are about first (the paper's ``mnist``, ``cifar10``),
    in the order the claims name them, then the others by name."""
    runs = list(runs)
    named = [ds for ds in _unique(c.dataset for c in claims) if ds in runs]
    return named + sorted(r for r in runs if r not in named)


def evaluate_general(
    runs: Mapping[str, Mapping[int, Run]],
    claims: Sequence[Claim],
    level: float = 0.95,
    flagged: Mapping[str, Iterable] | None = None,
) -> pd.DataFrame:
    """One row per general claim × run (``scope`` ``general``, ``dataset`` the run), general claims in order and
    runs in :func:`run_order` within each: the columns of :func:`trustcal.reporting.verdict.evaluate`."""
    order = run_order(runs, claims)
    bound = [g.on(run) for g in general_claims(claims) for run in order]
    return evaluate(runs, bound, level=level, flagged=flagged, scope=GENERAL_SCOPE)


def run_classes(runs: Mapping[str, Mapping[int, Run]]) -> dict[str, int]:
    """run → its number of classes K, as its trust table has them (the labels but the network's)."""
    out = {}
    for name, seeds in runs.items():
        ks = {r.opinions["belief"].shape[-1] - 1 for r in seeds.values()}
        if ks:
            out[name] = max(ks)
    return out


def run_title(name: str, setups: Mapping | None = None) -> str:
    """How the verdict names the run ``name``: the registry's title (``CIFAR-10 (ResNet-20)``), else the name."""
    from trustcal.registry import dataset_title

    return dataset_title(name, setups)


def run_titles(names: Sequence[str], setups: Mapping | None = None) -> dict[str, str]:
    """run → its title; two runs of one title (one dataset and network, two recipes) are told apart by name."""
    titles = {n: run_title(n, setups) for n in names}
    counts = pd.Series(list(titles.values())).value_counts()
    return {n: f"{t} [{n}]" if counts[t] > 1 and t != n else t for n, t in titles.items()}


def level_dependence(
    classes: Mapping[str, int], clusters, titles: Mapping[str, str] | None = None, midpoint=True
) -> str:
    """The sentence that says how the trust levels of runs of different K depend on K and M: the perfect
    classifier's per-label belief 2M/(2M + K) and disbelief K/(2M + K) (docs/method.md §3.8) for each K of
    ``classes`` (run → K) at the configured M = ``clusters``."""
    titles = titles or {}
    by_k: dict[int, list[str]] = {}
    for run, k in classes.items():
        by_k.setdefault(int(k), []).append(titles.get(run, run))
    m = clusters if isinstance(clusters, int) and not isinstance(clusters, bool) and clusters > 0 else None
    parts = []
    for k in sorted(by_k):
        where = f"K = {k} ({', '.join(by_k[k])})"
        if m is not None and midpoint:
            b, d = perfect_classifier_opinion(m, k)
            where += f": 2M/(2M + K) = {b:.3f}, K/(2M + K) = {d:.3f}"
        parts.append(where)
    runs = "; ".join(parts) if parts else "no run"
    head = (
        "Trust levels depend on the number of classes K and of clusters M: with midpoint representatives a "
        "perfectly accurate and confident classifier gets per-label belief 2M/(2M + K) and disbelief K/(2M + K) "
        "(docs/method.md §3.8)"
    )
    if not midpoint:
        head += ", which the configured representative does not have exactly"
    m_text = f"M = {m}" if m is not None else "M as configured (`clusters`)"
    return (
        f"{head}. Here {m_text}; {runs}. A level, a change of level or a band of ± 0.05 is therefore a different "
        "share of the scale on runs of different K: compare the runs' directions, not their levels."
    )
