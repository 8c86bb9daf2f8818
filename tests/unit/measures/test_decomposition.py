"""Calibration and refinement terms of the NLL and the Brier score (docs/method.md §13.2;
trustcal.measures.decomposition, the nll_/brier_calibration and _refinement columns of scores.csv).

Oracles: probmetrics (``MetricsWithCalibration`` with its ``ts-mix`` temperature scaling, the folds
given) on real scikit-learn predictions (tests/helpers/corpus.py); two known answers: predictions calibrated by
construction have a calibration term of 0 up to the cross-fitting noise derived below, and a
temperature-distorted copy of any predictions has the same refinement as the original.
"""

import math
import sys
import types

import numpy as np
import pytest

from trustcal.calibration.temperature import fit_temperature
from trustcal.evaluation import (
    MetricParams,
    PredictionSet,
    refinement_losses,
    refinement_replicates,
    score_tables,
)
from trustcal.measures import decomposition as D
from trustcal.measures.bootstrap import BootstrapParams, resample_counts

EPS = float(np.finfo(float).eps)


def softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def sample_labels(probs, rng):
    """One label per row drawn from the row's distribution (so ``probs`` is calibrated by construction)."""
    return (rng.random(len(probs))[:, None] > np.cumsum(probs, axis=1)).sum(axis=1).clip(0, probs.shape[1] - 1)


def calibrated(n, k, rng, scale=1.5):
    probs = softmax(rng.normal(size=(n, k)) * scale)
    return probs, sample_labels(probs, rng)


def split(probs, labels, folds: int = 5, seed: int = 0) -> dict[str, float]:
    """The calibration/refinement terms of probability predictions as scores.csv computes them: the production
    path, :func:`trustcal.evaluation.refinement_losses` (NaN when there are fewer samples than folds)."""
    losses = refinement_losses(
        PredictionSet(0, "none", "test", probs, labels), MetricParams(refinement_folds=folds), seed
    )
    return D.terms_from_losses(losses) if losses else dict.fromkeys(D.TERMS, math.nan)


@pytest.fixture(scope="module")
def probmetrics():
    """probmetrics 1.3.0 imports numba at the top of its SAGA solvers (probmetrics.saga), though it declares
    numba only in its ``extra`` extra; temperature scaling never calls them. Without numba, a stand-in whose
    ``njit`` returns the function lets the package import."""
    pytest.importorskip("probmetrics")
    try:
        import numba  # noqa: F401
    except ImportError:
        stub = types.ModuleType("numba")
        stub.njit = lambda *args, **kwargs: args[0] if args and callable(args[0]) else (lambda f: f)
        sys.modules["numba"] = stub
    from probmetrics import calibrators, metrics, splitters

    return types.SimpleNamespace(metrics=metrics, calibrators=calibrators, splitters=splitters)


def test_folds_are_stratified_and_reproducible():
    labels = np.repeat([0, 1, 2], [23, 7, 50])
    fold = D.stratified_folds(labels, 5, seed=3)
    assert np.array_equal(fold, D.stratified_folds(labels, 5, seed=3))
    assert not np.array_equal(fold, D.stratified_folds(labels, 5, seed=4))
    for c in range(3):
        sizes = np.bincount(fold[labels == c], minlength=5)
        assert sizes.max() - sizes.min() <= 1
    with pytest.raises(ValueError, match="folds must be ≥ 2"):
        D.stratified_folds(labels, 1, 0)


def test_against_probmetrics_on_real_scikit_learn_predictions(corpus_members, probmetrics):
    """probmetrics' cross-fitted ts-mix decomposition with our folds (a splitter returning them) gives our four
    numbers. Both fit T on log p and mix the held-out recalibrated predictions with the uniform at 1/(n_fit + 1).
    probmetrics bisects u = log(1/T) over [−16, 16] in 30 halvings (its default), so its u is within
    32·2⁻³¹ of the optimum (ours is within 10⁻¹⁰ of a zero gradient); a loss moves with u by at most
    β·(range of the log-probabilities of a row) per unit of u for the NLL and twice that for the Brier score
    (|∂q_k/∂u| ≤ β·q_k·range), which sets the tolerance. The probabilities are first floored at 10⁻¹²
    (both read log p; below float64 eps ours floors and theirs does not). Members where a fold's fit stops at
    our bound T = 0.01 are left out (their bound is T = e⁻¹⁶)."""
    import torch

    pm = probmetrics

    class Given(pm.splitters.Splitter):
        def __init__(self, fold):
            self.fold = fold

        def get_splits(self, y_true, random_state=None):
            return [(np.flatnonzero(self.fold != f), np.flatnonzero(self.fold == f)) for f in range(5)]

        def get_name(self):
            return "given"

    compared = 0
    for member in corpus_members:
        p = np.maximum(member.p_test, 1e-12)
        p /= p.sum(axis=1, keepdims=True)
        y = member.y_test
        if len(y) < 5:
            continue
        ours = split(p, y, folds=5, seed=11)
        fold = D.stratified_folds(y, 5, 11)
        decomposed = pm.metrics.MetricsWithCalibration(
            pm.metrics.CombinedMetrics([pm.metrics.LogLoss(), pm.metrics.BrierLoss()]),
            pm.calibrators.get_calibrator("temp-scaling", calibrate_with_mixture=True),
            val_splitter=Given(fold),
        )
        theirs = {
            key.split("_")[0] + "_" + key.split("_")[1]: float(value)
            for key, value in decomposed.compute_all(
                pm.metrics.CategoricalDirac(torch.as_tensor(y), n_classes=p.shape[1]),
                pm.metrics.CategoricalProbs(torch.as_tensor(p)),
            ).items()
        }
        log_p = np.log(p)
        fits = [fit_temperature(log_p[fold != f], y[fold != f]) for f in range(5)]
        if any(fit.at_bound for fit in fits):
            # a fold's NLL still falls at T = 0.01 (a split the map separates): our T stops at that bound,
            # probmetrics' at e^-16; the documented difference (docs/method.md §13.2), not compared
            continue
        beta = max(1 / fit.temperature for fit in fits)
        spread = float(np.max(log_p.max(axis=1) - log_p.min(axis=1)))
        tol = 2 * (32 * 2.0**-31) * beta * spread * 1.01 + 64 * len(y) * EPS
        assert ours["nll_refinement"] == pytest.approx(theirs["refinement_logloss"], abs=tol), member.name
        assert ours["nll_calibration"] == pytest.approx(theirs["calib-err_logloss"], abs=tol), member.name
        assert ours["brier_refinement"] == pytest.approx(theirs["refinement_brier"], abs=2 * tol), member.name
        assert ours["brier_calibration"] == pytest.approx(theirs["calib-err_brier"], abs=2 * tol), member.name
        compared += 1
    assert compared >= 15


def test_calibrated_predictions_have_no_calibration_term_beyond_the_cross_fitting_noise():
    """Labels drawn from p: T = 1 is the population optimum. On a held-out fold of n_h samples, with T fitted
    on n_f others, the calibration term is ℓ̄_h(1) − ℓ̄_h(β̂) ≈ g_h·g_f/h − g_f²/(2h) (a second-order
    expansion in β̂ − 1 ≈ −g_f/h, g the mean gradient of the NLL in β = 1/T at 1, h its curvature).
    Calibrated, E[g] = 0 and Var(per-sample gradient) = h (the information identity), so the term has mean
    −1/(2 n_f) and a standard deviation of at most 1/√(n_h·n_f) + 1/(√2·n_f) per fold, hence for their
    average; the uniform mixture adds λ(1 − 1/(K p_y)) ≈ 0 in expectation (E[1/(K p_y)] = 1) with a spread
    far below that. A miscalibrated copy (T = 0.6) has a term hundreds of times larger."""
    rng = np.random.default_rng(2025)
    n, k, folds = 20_000, 5, 5
    probs, labels = calibrated(n, k, rng)
    n_f, n_h = n * (folds - 1) / folds, n / folds
    sd = 1 / math.sqrt(n_h * n_f) + 1 / (math.sqrt(2) * n_f)
    out = split(probs, labels, folds, seed=0)
    assert abs(out["nll_calibration"] + 1 / (2 * n_f)) <= 4 * sd
    # the Brier score under the NLL's T: its gradient in β also has mean 0 at the calibrated T = 1, so its
    # term is O(1/n) as well; plug-in bound: |g_h^B|·|β̂ − 1| with |β̂ − 1| ≤ 4/√(h n_f)
    onehot = np.eye(k)[labels]
    z = np.log(probs)
    ez = (probs * z).sum(axis=1, keepdims=True)
    h = float(np.mean((probs * (z - ez) ** 2).sum(axis=1)))
    grad_brier = (2 * (probs - onehot) * probs * (z - ez)).sum(axis=1)  # ∂/∂β of Σ_k (q_k − y_k)² at β = 1
    bound = 4 * float(np.std(grad_brier)) / math.sqrt(n_h) * 4 / math.sqrt(h * n_f) + 8 / (h * n_f)
    assert abs(out["brier_calibration"]) <= bound
    sharp = softmax(np.log(probs) / 0.6)
    assert split(sharp, labels, folds, 0)["nll_calibration"] > 200 * sd


def test_the_calibration_term_averages_to_its_expected_value_over_repeated_draws():
    """The expansion above, checked as a whole: over 30 independent calibrated data sets of N = 4000 the mean
    calibration term is −1/(2 n_f) within four standard errors of the mean (sd per set as above)."""
    rng = np.random.default_rng(7)
    n, k, folds, reps = 4000, 4, 5, 30
    terms = []
    for _ in range(reps):
        probs, labels = calibrated(n, k, rng)
        terms.append(split(probs, labels, folds, 0)["nll_calibration"])
    n_f, n_h = n * (folds - 1) / folds, n / folds
    sd = 1 / math.sqrt(n_h * n_f) + 1 / (math.sqrt(2) * n_f)
    assert abs(np.mean(terms) + 1 / (2 * n_f)) <= 4 * sd / math.sqrt(reps)


@pytest.mark.parametrize("temperature", [0.4, 2.5])
def test_a_temperature_distorted_copy_keeps_the_refinement(temperature):
    """softmax(log p / T₀) has the same temperature-scaled family as p: the fit on the copy finds β' = β·T₀ and
    the same recalibrated predictions (the same folds: labels and seed), so its refinement is the original's.
    Our fits stop with |∂NLL/∂β| ≤ 10⁻¹⁰ (or a bracket of relative width 10⁻¹⁰), so each β is within
    10⁻¹⁰/h of its optimum (h the NLL's curvature in β, ≥ its value on the copy over the bracket) and a loss
    within that times β·range of log p; only the calibration term changes."""
    rng = np.random.default_rng(3)
    probs = softmax(rng.normal(size=(3000, 6)) * 2)
    labels = rng.integers(0, 6, 3000)  # not calibrated: a refinement above the entropy floor
    labels[:1500] = probs[:1500].argmax(axis=1)
    copy = softmax(np.log(probs) / temperature)
    original = split(probs, labels, 5, seed=1)
    distorted = split(copy, labels, 5, seed=1)
    z = np.log(copy)
    spread = float(np.max(z.max(axis=1) - z.min(axis=1)))
    fit = fit_temperature(z, labels)
    p = softmax(z / fit.temperature)
    ez = (p * z).sum(axis=1, keepdims=True)
    h = float(np.mean((p * (z - ez) ** 2).sum(axis=1)))
    tol = 4 * (1e-10 / h + 1e-10 / fit.temperature) * spread / fit.temperature + 64 * len(labels) * EPS
    for loss in ("nll", "brier"):
        assert distorted[f"{loss}_refinement"] == pytest.approx(original[f"{loss}_refinement"], abs=2 * tol), loss
    assert abs(distorted["nll_calibration"] - original["nll_calibration"]) > 0.05  # the distortion is not small


def test_scores_csv_columns_add_up_and_their_resamples_are_the_drawn_rows():
    rng = np.random.default_rng(5)
    test, val = calibrated(600, 4, rng), calibrated(300, 4, rng)
    preds = [PredictionSet(1, "none", "test", softmax(np.log(test[0]) / 0.7), test[1])]
    preds.append(PredictionSet(1, "none", "val", val[0], val[1]))
    boot = BootstrapParams(resamples=30, seed=4)
    scores = score_tables(preds, MetricParams(), boot)["scores"].set_index("split")
    row = scores.loc["test"]
    for loss in ("nll", "brier"):
        assert row[f"{loss}_calibration"] + row[f"{loss}_refinement"] == pytest.approx(row[loss], abs=16 * EPS)
        for term in ("calibration", "refinement"):
            name = f"{loss}_{term}"
            assert row[f"{name}_lo"] <= row[f"{name}_hi"]
    assert scores.loc["val", list(D.TERMS)].isna().all()  # the side-table splits only (here: test)
    # a resample's terms: the drawn rows' mean losses, the recalibration maps held fixed (folds: the bootstrap seed)
    losses = refinement_losses(preds[0], MetricParams(), boot.seed)
    counts = resample_counts(600, boot)
    replicates = refinement_replicates(losses, counts)
    for b in range(3):
        rows = np.repeat(np.arange(600), counts[b].astype(int))
        want = D.terms_from_losses({name: values[rows] for name, values in losses.items()})
        for name in D.TERMS:  # float32 products of counts with losses ≤ 40: 4·N·eps32·40 / N relative scale
            assert replicates[name][b] == pytest.approx(want[name], abs=4 * 40 * float(np.finfo(np.float32).eps))


def _temperature_root(log_p, labels):
    """β = 1/T where the mean NLL of softmax(β·log p) is flat, by scipy's ``brentq`` on its derivative
    g(β) = mean(E_q[z] − z_y) (z = log p, q = softmax(βz)) to 10⁻¹⁴, with the curvature h = mean Var_q[z] there:
    no code of trustcal.calibration."""
    from scipy import optimize, special

    zy = log_p[np.arange(len(labels)), labels]

    def moments(beta):
        q = np.exp(special.log_softmax(beta * log_p, axis=1))
        ez = (q * log_p).sum(axis=1)
        return float(np.mean(ez - zy)), float(np.mean((q * log_p**2).sum(axis=1) - ez**2))

    beta = optimize.brentq(lambda b: moments(b)[0], 1e-2, 1e2, xtol=1e-14, rtol=8 * EPS)
    return beta, moments(beta)[1]


def test_scores_csv_split_is_the_cross_fitted_temperature_scaling_written_out():
    """scores.csv's four terms against the definition of docs/method.md §13.2 computed apart from the production
    path: the folds :func:`~trustcal.measures.decomposition.stratified_folds` deals with the bootstrap seed, five
    of them (the default ``refinement_folds``), β = 1/T of each fold found by :func:`_temperature_root` (another
    root finder than the production's Newton iteration, warm-started across folds), the held-out predictions
    softmax(β·log p) mixed with the uniform at 1/(n_fit + 1), and the mean losses over all samples.

    Tolerance: the production stops with |g| ≤ 10⁻¹⁰ or a bracket of relative width 10⁻¹⁰, so its β is within
    10⁻¹⁰·max(1/h, β, 1) of the root, ours within 10⁻¹⁴ + 8·eps·β; a held-out loss moves with β by at most the
    range of log p of its row (NLL: |E_q[z] − z_y|) or twice that (Brier: Σ_k 2|q_k − y_k|·|∂q_k/∂β|, with
    |∂q_k/∂β| ≤ q_k·range); the rest is float64 rounding of sums of N terms (64·N·eps). Fitting on 2 folds, or
    a T 5 % off (a change of about 0.05·β·spread in the held-out losses), is far outside it."""
    rng = np.random.default_rng(5)
    probs, labels = calibrated(600, 4, rng)
    probs = softmax(np.log(probs) / 0.5)  # over-confident: a calibration term well above 0
    boot = BootstrapParams(resamples=5, seed=4)
    row = score_tables([PredictionSet(1, "none", "test", probs, labels)], MetricParams(), boot)["scores"].iloc[0]
    assert probs.min() > 1e-10  # log p is exact (no floor) on both sides
    log_p = np.log(probs)
    n, k = probs.shape
    fold = D.stratified_folds(labels, 5, boot.seed)
    refined = np.empty_like(probs)
    slack = 0.0
    for f in range(5):
        fit = fold != f
        beta, h = _temperature_root(log_p[fit], labels[fit])
        held = ~fit
        mix = 1.0 / (int(fit.sum()) + 1)
        refined[held] = (1 - mix) * softmax(beta * log_p[held]) + mix / k
        slack = max(slack, 1e-10 * max(1 / h, beta, 1.0) + 1e-14 + 8 * EPS * beta)
    onehot = np.eye(k)[labels]
    want = {
        "nll_refinement": -np.mean(np.log(refined[np.arange(n), labels])),
        "brier_refinement": np.mean(((refined - onehot) ** 2).sum(axis=1)),
    }
    want["nll_calibration"] = -np.mean(log_p[np.arange(n), labels]) - want["nll_refinement"]
    want["brier_calibration"] = np.mean(((probs - onehot) ** 2).sum(axis=1)) - want["brier_refinement"]
    spread = float(np.max(log_p.max(axis=1) - log_p.min(axis=1)))
    for name, value in want.items():
        tol = (2 if name.startswith("brier") else 1) * spread * slack + 64 * n * EPS
        assert row[name] == pytest.approx(value, abs=tol), name
    assert row["nll_calibration"] > 0.05  # over-confident: the split is not trivially 0


def test_too_few_samples_give_nan():
    out = split(np.full((3, 2), 0.5), np.array([0, 1, 0]), folds=5)
    assert all(math.isnan(v) for v in out.values())


def test_against_probmetrics_on_confidently_wrong_logits(probmetrics):
    """Late-epoch logits (3 % of the predictions confidently wrong, their true class 40 to 80 nats below the
    top, beyond float64 eps's −36): the production path (``refinement_losses`` on the predictions of the
    logits) and probmetrics' ts-mix decomposition on the same logits and folds agree as on calibrated
    predictions (the tolerance of the test above: probmetrics' bisection of u = log(1/T) to 32·2⁻³¹, a loss
    moving by β·(range of log p) per unit of u). Both take the NLL from the log-softmax (probmetrics clips it
    at −87.3, which no prediction here reaches); a floor at eps would have moved ours by ~0.4 nats."""
    import torch
    from helpers.synthetic import overconfident_logits

    pm = probmetrics
    z, y = overconfident_logits(4000, 10, seed=3, depth=80.0)
    p = PredictionSet.of_logits(100, "none", "test", z, y)
    ours = D.terms_from_losses(refinement_losses(p, MetricParams(), seed=11))
    fold = D.stratified_folds(y, 5, 11)

    class Given(pm.splitters.Splitter):
        def get_splits(self, y_true, random_state=None):
            return [(np.flatnonzero(fold != f), np.flatnonzero(fold == f)) for f in range(5)]

        def get_name(self):
            return "given"

    decomposed = pm.metrics.MetricsWithCalibration(
        pm.metrics.CombinedMetrics([pm.metrics.LogLoss()]),
        pm.calibrators.get_calibrator("temp-scaling", calibrate_with_mixture=True),
        val_splitter=Given(),
    )
    theirs = decomposed.compute_all(
        pm.metrics.CategoricalDirac(torch.as_tensor(y), n_classes=10),
        pm.metrics.CategoricalLogits(torch.as_tensor(z)),
    )
    theirs = {key.rsplit("_", 2)[0]: float(value) for key, value in theirs.items()}  # less "_MixtureCalibrator_given"
    log_p = p.log_probs
    fits = [fit_temperature(log_p[fold != f], y[fold != f]) for f in range(5)]
    beta = max(1 / fit.temperature for fit in fits)
    spread = float(np.max(log_p.max(axis=1) - log_p.min(axis=1)))
    tol = 2 * (32 * 2.0**-31) * beta * spread * 1.01 + 64 * len(y) * EPS
    exact = -float(np.mean(log_p[np.arange(len(y)), y]))
    assert ours["nll_calibration"] + ours["nll_refinement"] == pytest.approx(exact, abs=1e-12)
    assert ours["nll_refinement"] == pytest.approx(theirs["refinement_logloss"], abs=tol)
    assert ours["nll_calibration"] == pytest.approx(theirs["calib-err_logloss"], abs=tol)
