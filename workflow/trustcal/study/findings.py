"""The **In short** sentences of the study: each fact (our value, its verdict, the paper's value, the epochs
a measure starts at) read from the verdict's rows and the claims it judges, and each direction word (rises or
falls, above or below, close or not) decided by the numbers, mostly by where the claim's interval lies."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from trustcal.registry import CIFAR10, DATASETS, MNIST, network_title
from trustcal.reporting.verdict import CLAIMS, NOT_REPRODUCED, REPRODUCED, perfect_classifier_opinion
from trustcal.study.markdown import fmt, listing
from trustcal.study.report import Calibrators, DatasetSection, Report

CLAIM = {c.id: c for c in CLAIMS}


def num(x) -> float:
    """A table's number as a float, NaN where it is missing."""
    return math.nan if x is None or (isinstance(x, float) and not math.isfinite(x)) else float(x)


def ours(row: Mapping) -> str:
    """``0.668 ± 0.000174 (reproduced)``: our mean ± sd over seeds and the verdict."""
    sd = f" ± {fmt(num(row['measured_sd']))}" if np.isfinite(num(row["measured_sd"])) else ""
    return f"{fmt(num(row['measured_mean']))}{sd} ({row['verdict']})"


def sign(row: Mapping) -> int:
    """+1 when the claim's interval lies wholly above 0, −1 wholly below, 0 when it holds 0 (the mean's
    sign when the row has no interval)."""
    lo, hi = num(row.get("interval_lo")), num(row.get("interval_hi"))
    if not (np.isfinite(lo) and np.isfinite(hi)):
        lo = hi = num(row["measured_mean"])
    return 1 if lo > 0 else -1 if hi < 0 else 0


def rises(row: Mapping, up: str = "rises", down: str = "falls", flat: str = "neither clearly rises nor falls") -> str:
    """The direction word of a change: ``up`` (interval above 0), ``down`` (below) or ``flat``."""
    return {1: up, -1: down, 0: flat}[sign(row)]


def _known(by_id: Mapping[str, Mapping], *ids: str) -> bool:
    return all(i in by_id and np.isfinite(num(by_id[i]["measured_mean"])) for i in ids)


def _section(row: Mapping) -> str:
    """``§7.3`` of ``§7.3 (Fig. 3a)``."""
    return str(row["section"]).split(" (")[0]


def trust_levels(by_id, clusters: int, ds: str = MNIST.name) -> str | None:
    """The after-calibration trust and disbelief levels of ``ds`` against the paper's and against what
    Algorithm 1 gives an accurate, confident classifier (2M/(2M + K), docs/method.md §3.8)."""
    t, d = f"{ds}_trust_after", f"{ds}_disbelief_after"
    if not _known(by_id, t, d):
        return None
    verdicts = {by_id[t]["verdict"], by_id[d]["verdict"]}
    agree = (
        "as the paper says"
        if verdicts == {REPRODUCED}
        else "not what the paper says"
        if verdicts == {NOT_REPRODUCED}
        else "the paper says"
    )
    k = len(DATASETS[ds].classes)
    b, dis = perfect_classifier_opinion(clusters, k)
    mk = f"M = K = {k}" if clusters == k else f"M = {clusters}, K = {k}"
    near = abs(num(by_id[t]["measured_mean"]) - b) <= 0.01 and abs(num(by_id[d]["measured_mean"]) - dis) <= 0.01
    levels = (
        "these levels are what Algorithm 1 gives any accurate, confident classifier"
        if near
        else "Algorithm 1 gives an accurate, confident classifier other levels"
    )
    return (
        f"{DATASETS[ds].title} after calibration: per-label trust {ours(by_id[t])} and disbelief {ours(by_id[d])}, "
        f"{agree} ({by_id[t]['paper']} / {by_id[d]['paper']}); {levels} with {mk} "
        f"(2M/(2M + K) = {b:.3f}, docs/method.md §3.8)."
    )


def trust_before(by_id, ds: str = MNIST.name) -> str | None:
    """Whether trust before calibration falls over training, and whether the losses stay close: the two
    statements the paper makes in different sections about the same run."""
    falls, gap, const = f"{ds}_trust_falls_before", f"{ds}_little_overfitting", f"{ds}_trust_before_constant"
    if not _known(by_id, falls, gap):
        return None
    g = by_id[gap]
    bound, lo, hi = num(g["paper_value"]), num(g["interval_lo"]), num(g["interval_hi"])
    close = "close" if hi <= bound else "not close" if lo > bound else "not clearly close"
    text = (
        f"{DATASETS[ds].title} before calibration: trust {rises(by_id[falls])} over training (last epochs minus "
        f"epoch 1: {ours(by_id[falls])}; the paper: it {by_id[falls]['paper']}), and the losses are {close} "
        f"(final validation − training gap {ours(g)} nats)"
    )
    if const in by_id:  # the paper's two sections, whatever our numbers
        text += f": {_section(by_id[falls])} and {_section(by_id[const])} cannot both hold"
    return text + "."


def late_plateau(
    by_id, authors: Mapping[str, Sequence[Mapping]], ds: str = CIFAR10.name, label: str = ""
) -> str | None:
    """The paper's late before-calibration levels of ``ds`` against ours and, where they match, the author's
    published predictions."""
    t, d = f"{ds}_trust_before_late", f"{ds}_disbelief_before_late"
    if not _known(by_id, t, d):
        return None
    first = CLAIM[t].min_epochs if t in CLAIM and CLAIM[t].min_epochs else None
    since = f", from epoch {first} on" if first else ""
    text = (
        f"{label or DATASETS[ds].title} before calibration{since}: trust {ours(by_id[t])} "
        f"(paper {num(by_id[t]['paper_value']):g}) and disbelief {ours(by_id[d])} "
        f"(paper {num(by_id[d]['paper_value']):g})."
    )
    if by_id[t]["verdict"] == by_id[d]["verdict"] == NOT_REPRODUCED:
        net = network_title(DATASETS[ds].network)
        text += f" The paper's before-calibration {DATASETS[ds].title} numbers are not those of a real run of its {net}"
        theirs = {r["claim_id"]: r for r in authors.get(ds, ())}
        matched = [
            c
            for c in (t, d)
            if c in theirs and theirs[c]["verdict"] == REPRODUCED and "softmax twice" in str(theirs[c]["reason"] or "")
        ]
        if len(matched) == 2:
            text += "; they match the author's published files whose probabilities went through softmax twice"
        elif matched:
            (c,) = matched
            other = d if c == t else t
            what = {t: "trust", d: "disbelief"}
            text += (
                f"; its {what[c]} matches the author's published files whose probabilities went through softmax "
                f"twice ({fmt(num(theirs[c]['measured_mean']))} there), its {what[other]} does not"
                + (f" ({fmt(num(theirs[other]['measured_mean']))})" if other in theirs else "")
            )
        text += "."
    return text


def ece_lowered(datasets: Sequence[DatasetSection]) -> bool:
    """Temperature scaling lowers the mean test ECE at the first, best and last epoch of every dataset."""
    return all(np.mean(r.ece_after) < np.mean(r.ece_before) for s in datasets for r in s.metrics)


def trust_above(by_id, datasets: Sequence[DatasetSection]) -> str | None:
    """Whether trust after calibration is above trust before at every epoch (the smallest after − before
    difference's sign), per paper dataset, and whether temperature scaling lowers the ECE."""
    rows = [
        (s, by_id[f"{s.name}_trust_after_above_before"])
        for s in datasets
        if f"{s.name}_trust_after_above_before" in by_id
    ]
    rows = [(s, r) for s, r in rows if np.isfinite(num(r["measured_mean"]))]
    if not rows:
        return None
    signs = {sign(r) for _, r in rows}
    values = ", ".join(f"{s.labelled} {ours(r)}" for s, r in rows)
    if signs == {-1}:
        head = "After calibration trust is not above the before-calibration trust at every epoch, as the paper says it is: the smallest after − before difference is negative"
    elif signs == {1}:
        head = "After calibration trust is above the before-calibration trust at every epoch, as the paper says: the smallest after − before difference is positive"
    else:
        head = "After calibration trust is not clearly above the before-calibration trust at every epoch, as the paper says it is: the smallest after − before difference"
    ece = (
        "while temperature scaling does lower the ECE"
        if ece_lowered(datasets)
        else "and temperature scaling does not lower the ECE at every epoch shown"
    )
    return f"{head} ({values}), {ece}."


def paper_findings(report: Report) -> list[str]:
    """The headline sentences about the paper's claims (each left out when its claims are missing)."""
    by_id = {r["claim_id"]: r for r in report.verdict}
    cifar = next((s.labelled for s in report.datasets if s.name == CIFAR10.name), "")
    out = [
        trust_levels(by_id, report.provenance.clusters),
        trust_before(by_id),
        late_plateau(by_id, report.authors, label=cifar),
        trust_above(by_id, [s for s in report.datasets if s.name in DATASETS and DATASETS[s.name].paper]),
    ]
    return [s for s in out if s]


def calibrator_findings(c: Calibrators) -> list[str]:
    """Does every calibrator raise the per-label trust above the raw model's at every epoch (the paper's claim
    for temperature scaling), and at how many epochs is its test ECE below or above the raw model's (the
    paired 95 % interval of the difference wholly below or above 0)."""
    gaps = {k: np.asarray(v, dtype=float) for k, v in c.gaps.items()}
    above = [k for k, g in gaps.items() if (g > 0).all()]
    below = [k for k, g in gaps.items() if (g < 0).all()]
    order = sorted(gaps, key=lambda k: gaps[k].mean())
    out = [
        "per-label trust above the raw model's at every epoch in every seed (what the paper says of "
        "temperature scaling): "
        + (", ".join(f"`{k}`" for k in above) if above else "no calibrator")
        + f"; below it at some epoch in every seed: {', '.join(f'`{k}`' for k in below) or 'no calibrator'} "
        "(lowest difference over epochs, mean over seeds: "
        + ", ".join(f"`{k}` {gaps[k].mean():+.3f}" for k in order)
        + ")."
    ]
    if c.separated:
        out.append(
            f"Test ECE minus the raw model's, paired 95 % interval of the difference ({seeds_text(c.paired_seeds)}; "
            "docs/method.md §12): "
            + "; ".join(f"`{k}` below at {b} of {n} epochs, above at {a}" for k, (b, a, n) in c.separated.items())
            + "."
        )
    return out


def seeds_text(seeds: int) -> str:
    """What the paired intervals are taken over."""
    if seeds == 1:
        return "one seed: the percentile interval of the paired test-set resamples alone"
    return f"over the paired test-set resamples and {seeds} seeds"


def general_counts(rows: Sequence[Mapping]) -> dict[str, int]:
    """verdict → the number of general claims with it."""
    out: dict[str, int] = {}
    for r in rows:
        out[r["verdict"]] = out.get(r["verdict"], 0) + 1
    return out


def _lower_first(sentence: str) -> str:
    """``sentence`` inside another: its first letter in lower case, unless its first word is an acronym (MNIST)."""
    first = sentence.split(" ", 1)[0]
    return sentence if first.isupper() else sentence[:1].lower() + sentence[1:]


def beyond_answer(title: str, setup: str, epochs: int, seeds: Sequence[int], rows: Sequence[Mapping]) -> str:
    """The README's answer to "do the paper's findings hold on ``title``?" from the general claims judged there."""
    n = general_counts(rows)
    held, failed = n.get(REPRODUCED, 0), [r for r in rows if r["verdict"] == NOT_REPRODUCED]
    judged = held + len(failed) + n.get("inconclusive", 0)
    answer = (
        "No claim could be judged" if judged == 0 else "Yes" if held == judged else "No" if held == 0 else "In part"
    )
    unsure = n.get("inconclusive", 0)
    seed_text = f"{len(seeds)} seed{'s' if len(seeds) != 1 else ''} ({', '.join(map(str, seeds))})"
    text = (
        f"Do the paper's findings hold on {title}? {answer}: on {setup}, {epochs} epochs, {seed_text}, of the "
        f"{len(rows)} general claims (the paper's statements about training and calibration in general) "
        f"{held} held, {len(failed)} did not and {unsure} {'was' if unsure == 1 else 'were'} inconclusive"
    )
    if n.get("not comparable"):
        text += f" ({n['not comparable']} could not be judged)"
    text += "."

    def named(verdict: str) -> str:
        return listing([f"`{r['claim_id']}` ({_lower_first(r['claim'])})" for r in rows if r["verdict"] == verdict])

    if held and held < judged:
        text += f" Held: {named(REPRODUCED)}."
    if failed:
        text += f" Not held: {named(NOT_REPRODUCED)}."
    return text
