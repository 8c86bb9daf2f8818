"""Conformance on predictions of real scikit-learn classifiers (issue 19; the corpus: tests/helpers/corpus.py).

On every member of the corpus (5 classifiers × 4 bundled datasets, binary and multi-class):

- ``trustcal assess`` reads it in every format that applies (CSV with named, reordered or class-name
  columns, ``.npy``, ``.npz``, Parquet, Feather, a binary classifier's single column P(y = 1) or 1-D
  score) and reports metrics equal to independent references computed here: scikit-learn's
  ``accuracy_score``, ``log_loss`` and ``brier_score_loss``, a few lines of NumPy for the binned ECE,
  netcal's ECE and relplot's smooth ECE. Conventions, binary included: accuracy, ``nll`` (of the true
  class), the ECE family and ``smece`` are top-label (confidence max_k p_k, prediction argmax);
  ``brier`` is the sum over the K classes, Σ_k (p_k − 1[y = k])², which for K = 2 is twice
  scikit-learn's positive-class ``brier_score_loss(y, p_1)``.
- the calibrators fitted on its validation split keep the invariants of docs/method.md §2.12:
  temperature, vector, matrix and Dirichlet scaling never raise the fit split's reported NLL;
  histogram binning's per-bin values and isotonic regression's maps are no worse on their own
  objective than the per-bin means of p and the identity map; a fit that did not converge or fell
  back to the identity is named in a warning that names that calibrator.
- the CLI (``trustcal assess --json``), the Python API (``trustcal.assess``) and the workflow's stages
  (``trustcal.stages.calibrate_stage`` and ``scores_stage``, as its rules call them) give the same
  numbers for the same predictions.

Tolerances: the readers return the written float64 values exactly (CSV with 17 significant digits), so
trustcal and the references differ only by the order of their sums: a mean of n terms of size ≤ s is
exact to n·eps·s. Where trustcal computes the softmax of logits itself, each probability may differ by a
few ulps from the reference's softmax; the factor 64 covers that.
"""

from __future__ import annotations

import io
import json
import warnings
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

corpus = pytest.importorskip("helpers.corpus")  # tests/helpers/corpus.py; needs scikit-learn
pytest.importorskip("sklearn")

EPS = np.finfo(np.float64).eps
METHODS = ("temperature", "vector", "matrix", "dirichlet", "histogram", "isotonic")
IDENTITY_FAMILY = ("temperature", "vector", "matrix", "dirichlet")
NAMES = [f"{d}-{c}" for d in corpus.DATASETS for c in corpus.CLASSIFIERS]


def cli_assess(args: list[str], out: Path) -> tuple[int, str, str]:
    """``trustcal assess ARGS --out OUT --json`` in-process, without figures, bootstrap and with a one-M trust
    sweep (what this test does not check, to keep it fast): (code, stdout, stderr)."""
    from trustcal import cli

    stdout, stderr = io.StringIO(), io.StringIO()
    with redirect_stdout(stdout), redirect_stderr(stderr):
        try:
            code = cli.main([
                "assess", *args, "--out", str(out), "--no-figures", "--bootstrap", "0", "--clusters-sweep", "10", "--json"
            ])  # fmt: skip
        except SystemExit as exc:
            code = exc.code
    return code, stdout.getvalue(), stderr.getvalue()


def binned_ece(probs: np.ndarray, labels: np.ndarray, n_bins: int) -> float:
    """Top-label ECE with bins (i/M, (i+1)/M], 0 in the first (docs/method.md §5.2), written out."""
    conf, hit = probs.max(axis=1), (probs.argmax(axis=1) == labels).astype(float)
    total = 0.0
    for i in range(n_bins):
        lo, hi = i / n_bins, (i + 1) / n_bins
        in_bin = (conf > lo) & (conf <= hi) if i else (conf <= hi)
        total += abs(hit[in_bin].sum() - conf[in_bin].sum())
    return total / len(labels)


def near_an_edge(probs: np.ndarray, n_bins: int, within: float) -> bool:
    conf = probs.max(axis=1)
    return bool(np.min(np.abs(conf[:, None] - np.arange(n_bins + 1)[None, :] / n_bins)) <= within)


def check_metrics(row: pd.Series, probs: np.ndarray, labels: np.ndarray, slack: float, where: str, logits=None) -> None:
    """The scores.csv row's metrics against the references, computed from ``probs`` and ``labels`` (the NLL from
    ``logits`` when the file held logits: exact, docs/method.md §2.12)."""
    from scipy.special import log_softmax
    from sklearn.metrics import accuracy_score, brier_score_loss, log_loss

    n, k = probs.shape
    assert row["accuracy"] == accuracy_score(labels, probs.argmax(axis=1)), where
    assert bool(row["nll_exact"]) == (logits is not None), where
    if logits is None:
        # log_loss clips to [eps, 1 − eps]: ≤ eps per row beyond the floor trustcal shares with it (§2.12)
        nll_ref = log_loss(labels, probs, labels=list(range(k)))
        assert row["nll"] == pytest.approx(nll_ref, rel=0, abs=slack * n * EPS * 37 + EPS), where
    else:
        # scipy's log-softmax: a K-term log-sum-exp of row-centred logits, rounding ≤ (K + 2)·eps·(1 + max |z|) a row
        nll_ref = -float(np.mean(log_softmax(logits, axis=1)[np.arange(n), labels]))
        spread = float(np.abs(logits - logits.max(axis=1, keepdims=True)).max())
        assert row["nll"] == pytest.approx(nll_ref, rel=0, abs=2 * (k + 2) * EPS * (1 + spread)), where
    brier_ref = brier_score_loss(labels, probs, labels=list(range(k)), scale_by_half=False)
    assert row["brier"] == pytest.approx(brier_ref, rel=0, abs=slack * n * EPS * 2), where
    if k == 2:  # the positive-class convention, for the record: trustcal's K-class sum is twice it
        assert row["brier"] == pytest.approx(2 * brier_score_loss(labels, probs[:, 1]), abs=slack * n * EPS * 4), where
    for bins in (10, 15):
        if slack > 1 and near_an_edge(probs, bins, 64 * EPS):
            continue  # a confidence within rounding of an edge may fall in either bin: nothing to compare
        ref = binned_ece(probs, labels, bins)
        assert row[f"ece_{bins}"] == pytest.approx(ref, rel=0, abs=slack * n * EPS * 2), (where, bins)
        if near_an_edge(probs[probs.max(axis=1) < 1], bins, 1e-9):
            continue  # netcal bins [i/M, (i+1)/M), trustcal (i/M, (i+1)/M]: they differ on an edge
        from netcal.metrics import ECE

        theirs = float(ECE(bins=bins).measure(probs, labels))
        if k > 2:
            assert row[f"ece_{bins}"] == pytest.approx(theirs, abs=1e-9), where
        elif bins % 2 == 0 and not near_an_edge(np.column_stack([probs[:, 1], probs[:, 1]]), bins, 1e-9):
            # For K = 2 netcal measures the positive class (p_1 against y), trustcal the top label. With M even,
            # each top-label bin of max(p_0, p_1) joins two mirrored bins of p_1 (at p_1 and 1 − p_1) whose gaps
            # add with signs: |a + b| ≤ |a| + |b|, so the top-label ECE is at most netcal's.
            assert row[f"ece_{bins}"] <= theirs + 1e-9, where
    assert row["ece"] == row["ece_10"], where
    import relplot

    conf, hit = probs.max(axis=1), (probs.argmax(axis=1) == labels).astype(float)
    ref, sigma = relplot.smECE(conf, hit, return_width=True)
    grid = max(2000, round(20 / sigma)) // 2 + 1  # relplot's direct convolution: ≤ 3E products per value
    assert row["smece"] == pytest.approx(ref, rel=3 * grid * EPS * slack, abs=1e-300), where


@pytest.fixture(scope="module")
def members(corpus_members):
    return {m.name: m for m in corpus_members}


def test_the_corpus_covers_the_grid(members):
    """≥ 20 classifier × dataset sets, binary and multi-class, with logits where the model has them."""
    assert sorted(members) == sorted(NAMES) and len(members) >= 20
    assert {m.k for m in members.values()} == {2, 3, 10}
    assert sum(m.s_test is not None for m in members.values()) == 16  # all but the random forests
    for m in members.values():
        # scikit-learn's rows sum to 1 within 4e-10 (naive Bayes exponentiates log-probabilities): far inside
        # trustcal's sum tolerance (1e-3), so they are read as they are, not renormalised
        np.testing.assert_allclose(m.p_test.sum(axis=1), 1.0, rtol=0, atol=1e-9)


@pytest.mark.parametrize("name", NAMES)
def test_every_format_reads_to_the_reference_metrics(name, members, tmp_path):
    """Each format that applies to the member: the raw test (and validation) metrics equal the references;
    with validation predictions, temperature scaling is fitted and its rows are there."""
    m = members[name]
    ran = []
    for fmt in corpus.FORMATS:
        written = corpus.write(m, fmt, tmp_path / fmt)
        if written is None:
            continue
        code, stdout, stderr = cli_assess(written.args, tmp_path / fmt / "out")
        assert code == 0, (fmt, stderr)
        scores = pd.read_csv(tmp_path / fmt / "out" / "scores.csv")
        raw = scores[scores["calibrator"] == "none"].set_index("split")
        from_logits = "logits" in fmt or "score" in fmt
        slack = 64 if from_logits else 1
        check_metrics(raw.loc["test"], written.probs, written.labels, slack, f"{name} {fmt} test", written.logits)
        if written.val_probs is not None:
            where = f"{name} {fmt} val"
            check_metrics(raw.loc["val"], written.val_probs, written.val_labels, slack, where, written.val_logits)
            assert "temperature" in set(scores["calibrator"]), fmt
        doc = json.loads(stdout)
        by_calibrator = {r["calibrator"]: r for r in doc["calibrators"]}
        for metric in ("accuracy", "ece", "net_trust_score"):  # --json writes 15 significant digits
            assert by_calibrator["none"][metric] == pytest.approx(raw.loc["test", metric], rel=1e-14), (fmt, metric)
        ran.append(fmt)
    assert {"csv_probs", "csv_reordered", "csv_class_names", "npy_probs", "npz_probs"} <= set(ran)
    assert ("binary_p1_csv" in ran) == m.binary


def workflow_logits(m) -> tuple[np.ndarray, np.ndarray]:
    """The member's (validation, test) logits: the model's own, or log p floored as trustcal fits probabilities."""
    from trustcal.numerics import floored_log

    if m.s_test is not None:
        return m.s_val, m.s_test
    return floored_log(m.p_val), floored_log(m.p_test)


@pytest.mark.parametrize("name", NAMES)
def test_calibrators_cli_api_and_workflow_agree(name, members, tmp_path):
    """The six calibrators fitted on the validation split by the CLI, the API and the workflow's stages:
    the same calibration rows and scores; the invariants of docs/method.md §2.12 hold on every fit; every
    fit that did not converge, fell back or hit a bound is named in a warning naming its calibrator."""
    import trustcal
    from trustcal import stages
    from trustcal.calibration import fit_calibrator, softmax
    from trustcal.evaluation import MetricParams
    from trustcal.settings import Settings

    m = members[name]
    z_val, z_test = workflow_logits(m)
    path = tmp_path / "epoch000.npz"
    np.savez(path, val_logits=z_val, val_labels=m.y_val, test_logits=z_test, test_labels=m.y_test)

    # the workflow: calibrate rule per method, then the scores rule on the logits and the states
    states, rows = [], []
    for method in METHODS:
        states.append(str(tmp_path / f"{method}.npz"))
        rows.append(stages.calibrate_stage([str(path)], states[-1], tmp_path / f"{method}.csv", method=method))
    wf_calibration = pd.concat(rows, ignore_index=True)
    outputs = {
        t: str(tmp_path / f"wf_{t}.csv")
        for t in ("scores", "trust_spectrum", "reliability", "trust_density", "smooth_reliability")
    }
    stages.scores_stage([str(path)], states, outputs, Settings(metrics=MetricParams(), bootstrap=None))
    wf_scores = pd.read_csv(outputs["scores"])

    code, stdout, stderr = cli_assess([str(path), "--calibrators", ",".join(METHODS)], tmp_path / "cli")
    assert code == 0, stderr
    cli_scores = pd.read_csv(tmp_path / "cli" / "scores.csv")
    cli_calibration = pd.read_csv(tmp_path / "cli" / "calibration.csv")
    doc = json.loads(stdout)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        api = trustcal.assess(
            z_test,
            m.y_test,
            kind="logits",
            validation=(z_val, m.y_val),
            calibrators=list(METHODS),
            bootstrap=None,
            sweep=None,
        )

    key = ["epoch", "calibrator", "split"]
    numeric = [c for c in cli_scores.columns if c not in key and pd.api.types.is_numeric_dtype(cli_scores[c])]
    mine = cli_scores.sort_values(key).reset_index(drop=True)
    for other, who in ((wf_scores, "workflow"), (api.tables["scores"], "api")):
        other = other.sort_values(key).reset_index(drop=True)
        assert mine[key].astype(str).equals(other[key].astype(str)), who
        # the same computation on the same float64 inputs; CSV keeps 17 digits
        pd.testing.assert_frame_equal(mine[numeric], other[numeric], check_exact=False, rtol=1e-13, atol=1e-15)
    calib_cols = ["calibrator", "temperature", "fit_nll_before", "fit_nll_after", "converged", "iterations"]
    calib_cols += ["at_bound", "identity_fallback", "odir_lambda", "odir_mu"]
    pd.testing.assert_frame_equal(
        cli_calibration[calib_cols].reset_index(drop=True), wf_calibration[calib_cols].reset_index(drop=True)
    )

    # invariants, on the CLI's calibration.csv (its NLL is the reported one: floored at PROB_FLOOR)
    rounding = (m.k + 2) * EPS * (1 + np.abs(z_val - z_val.max(axis=1, keepdims=True)).max())
    by_method = cli_calibration.set_index("calibrator")
    for method in IDENTITY_FAMILY:
        before, after = by_method.loc[method, ["fit_nll_before", "fit_nll_after"]]
        assert after <= before + rounding, (name, method, before, after)
    p_val = softmax(z_val)
    hist = fit_calibrator("histogram", z_val, m.y_val)
    iso = fit_calibrator("isotonic", z_val, m.y_val)
    bins = hist.values.shape[1]
    for c in range(m.k):
        target = (m.y_val == c).astype(float)
        idx = np.minimum((p_val[:, c] * bins).astype(np.intp), bins - 1)
        count = np.bincount(idx, minlength=bins)
        mean_p = np.bincount(idx, weights=p_val[:, c], minlength=bins) / np.maximum(count, 1)
        hist_sse, mean_sse = (float(((g[idx] - target) ** 2).sum()) for g in (hist.values[c], mean_p))
        assert hist_sse <= mean_sse + 4 * len(target) * EPS, (name, c)
        iso_sse, identity_sse = (float(((g - target) ** 2).sum()) for g in (iso.class_map(c, p_val[:, c]), p_val[:, c]))
        assert iso_sse <= identity_sse + 8 * len(target) * EPS, (name, c)

    # warnings: one per flagged fit, naming its calibrator; none worded as another's
    messages = {w["code"]: [] for w in doc["warnings"]}
    for w in doc["warnings"]:
        messages[w["code"]].append(w["message"])
    for method, row in by_method.iterrows():
        flagged = []
        if row["identity_fallback"]:
            flagged.append("calibrator_identity_fallback")
        elif not row["converged"]:
            flagged.append("calibrator_not_converged")
        if row["at_bound"]:
            flagged.append("temperature_at_bound" if method == "temperature" else "calibrator_at_bound")
        for code in flagged:
            assert any(f"calibrator '{method}'" in text for text in messages.get(code, [])), (name, method, code)
    for code in ("temperature_at_bound", "calibrator_at_bound", "calibrator_not_converged"):
        for text in messages.get(code, []):
            assert "nan" not in text, text
    for text in messages.get("temperature_at_bound", []):
        assert "calibrator 'temperature'" in text
