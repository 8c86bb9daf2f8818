"""One legend vocabulary for the calibrators (issue 42): every figure of the registry, drawn from tables that hold
every calibrator of trustcal.calibration.METHODS, names a calibrator in its legends only by
``calibrators.CALIBRATOR_NAMES`` (and the reliability per calibrator in its panel titles), whatever figure it is.

A legend entry "names a calibrator" when, with every name of the vocabulary taken out of it, a word of a
calibrator is left (an id such as ``none`` or ``irm``, or a word of another spelling: "temperature" alone,
"ODIR", "Dirichlet" without "scaling"); the one entry that says "Temperature" and is no calibrator is the fitted
temperature T of calibration_metrics (``epochs.temperature_label``). The shift figures' legends, which use the
same mapping, are read in test_shift_figures.py.
"""

import re

import numpy as np
import pandas as pd
import pytest

from trustcal.calibration import METHODS
from trustcal.evaluation import MetricParams, PredictionSet, SweepParams, score_tables, trust_tables
from trustcal.measures.bootstrap import BootstrapParams
from trustcal.measures.trust import TrustParams
from trustcal.reporting import figures
from trustcal.reporting.figures.calibrators import CALIBRATOR_COLOURS, CALIBRATOR_MARKERS, CALIBRATOR_NAMES
from trustcal.reporting.figures.epochs import temperature_label

EPOCHS, N, K = 3, 120, 4
VOCABULARY = set(CALIBRATOR_NAMES.values())
# The words of a calibrator outside the vocabulary's names: the ids, and the words of other spellings.
CALIBRATOR_WORDS = re.compile(
    r"\b(none|raw|temperature|vector|matrix|dirichlet|odir|histogram|isotonic|sms|svs|ets|irm|structured|ensemble"
    r"|multiclass|binning|scaling|regression)\b",
    re.IGNORECASE,
)


def predictions(seed: int = 0) -> list[PredictionSet]:
    """Every calibrator of METHODS as a temperature of its own on logits that sharpen with the epoch."""
    rng = np.random.default_rng(seed)
    out = []
    for split, n in (("test", N), ("val", N // 2)):
        labels = rng.permutation(np.arange(n) % K)
        noise = rng.normal(size=(n, K))
        for epoch in range(1, EPOCHS + 1):
            logits = (1.0 + epoch) * (np.eye(K)[labels] + 0.8 * noise)
            for i, calibrator in enumerate(METHODS):
                z = logits / (1.0 + 0.15 * i * epoch)
                p = np.exp(z - z.max(axis=1, keepdims=True))
                out.append(PredictionSet(epoch, calibrator, split, p / p.sum(axis=1, keepdims=True), labels))
    return out


@pytest.fixture(scope="module")
def tables() -> dict[str, pd.DataFrame]:
    """Every table of the registry's figures, of one seed and three epochs, with bootstrap bounds."""
    preds, bootstrap = predictions(), BootstrapParams(resamples=10)
    out = {
        **trust_tables(preds, TrustParams(), SweepParams(clusters=(2, 5), epochs=(1, 3)), bootstrap),
        **score_tables(preds, MetricParams(density_points=11), bootstrap),
        "history": pd.DataFrame(dict(epoch=[1, 2, 3], train_loss=[1.0, 0.7, 0.5], val_loss=[0.9, 0.6, 0.8])),
        "calibration": pd.DataFrame(
            dict(epoch=np.repeat([1, 2, 3], len(METHODS) - 1), calibrator=list(METHODS[1:]) * 3, fit_split="val")
        ).assign(temperature=lambda d: np.where(d["calibrator"] == "temperature", 1.5, np.nan)),
    }
    return {name: df.assign(seed=0) for name, df in out.items()}


def legend_texts(fig) -> list[str]:
    """The text of every entry of every legend of the figure (figure legends and axes legends)."""
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    return [t.get_text() for legend in legends for t in legend.get_texts()]


def stray_calibrator_word(text: str) -> str | None:
    """A word of a calibrator left in ``text`` once every name of the vocabulary is taken out (None: none left)."""
    for name in sorted(VOCABULARY, key=len, reverse=True):
        text = text.replace(name, " ")
    found = CALIBRATOR_WORDS.search(text)
    return found.group(0) if found else None


def test_the_vocabulary_names_every_calibrator_in_one_style():
    """A name, a colour and a marker for every calibrator of METHODS; the names distinct, each the method's name in
    lower-case words (a person's name capitalised), without an abbreviation or a parenthesis."""
    assert set(METHODS) <= set(CALIBRATOR_NAMES) == set(CALIBRATOR_COLOURS) == set(CALIBRATOR_MARKERS)
    assert len(VOCABULARY) == len(CALIBRATOR_NAMES) and len(set(CALIBRATOR_MARKERS.values())) == len(CALIBRATOR_MARKERS)
    for name in VOCABULARY:
        assert re.fullmatch(r"[a-z]+( [a-z]+)*", name.replace("Dirichlet", "dirichlet")), name
    assert CALIBRATOR_NAMES["none"] == "raw model" and CALIBRATOR_NAMES["temperature"] == "temperature scaling"


def test_a_stray_calibrator_word_is_found():
    """The check of the next test, on the names the figures had (issue 42) and on entries that hold a name."""
    for old in (
        "temperature",
        "none (raw model)",
        "Dirichlet (ODIR)",
        "matrix scaling (ODIR)",
        "multiclass isotonic (IRM)",
    ):
        assert stray_calibrator_word(old), old
    for fine in ("raw model", "refinement (after cross-fitted temperature scaling)", "Before calibration", "belief b"):
        assert stray_calibrator_word(fine) is None, fine


@pytest.mark.parametrize("name", figures.FIGURE_NAMES)
def test_every_legend_names_calibrators_by_the_one_vocabulary(tables, name):
    """Every entry of every legend is a name of the vocabulary, or names no calibrator outside it (the fitted
    temperature T of calibration_metrics is a number, not a calibrator)."""
    fig = figures.draw(name, tables, "m", [])
    parameter = temperature_label(tables["calibration"])
    for text in legend_texts(fig):
        assert text in VOCABULARY or text == parameter or stray_calibrator_word(text) is None, (name, text)


@pytest.mark.parametrize("name", ["calibrator_trust", "calibrator_metrics"])
def test_the_figures_comparing_calibrators_name_each_in_their_legend_by_the_vocabulary(tables, name):
    """Each calibrator once, in the order of METHODS, by its name; every other entry names no calibrator."""
    texts = legend_texts(figures.draw(name, tables, "m", []))
    assert [t for t in texts if t in VOCABULARY] == [CALIBRATOR_NAMES[c] for c in METHODS]
    assert texts[: len(METHODS)] == [CALIBRATOR_NAMES[c] for c in METHODS]


def test_the_reliability_per_calibrator_titles_each_panel_by_the_vocabulary(tables):
    fig = figures.draw("calibrator_reliability", tables, "m", [])
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible() and ax.get_title()]
    assert titles == [CALIBRATOR_NAMES[c] for c in METHODS]
