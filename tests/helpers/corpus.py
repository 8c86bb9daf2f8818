"""The conformance corpus (issue 19): predictions of real scikit-learn classifiers that nobody here tuned.

Five classifiers (logistic regression, Gaussian naive Bayes, random forest, MLP, SVC with Platt
probabilities) are trained, in seconds, on four of scikit-learn's bundled real datasets (digits: 10
classes of 8×8 images; wine: 3 classes; iris: 3 classes; breast cancer: 2 classes), each split
50 / 25 / 25 % into train, validation and test (stratified, fixed seed): 20 :class:`Member` sets.
Every member keeps its test and validation probabilities (``predict_proba``) and, where the model has
them, its logits or scores (a K-column array whose softmax is a user's "logits": logistic regression's
``decision_function``, naive Bayes' joint log-likelihoods, the MLP's output layer, SVC's
``decision_function``), and for binary problems the one-column forms users export (P(y = 1), a 1-D score).

:data:`FORMATS` writes a member's predictions as users have them (CSV with named columns, ``.npy``,
``.npz``, Parquet, class names as labels and headers, binary single columns …); each writer returns a
:class:`Written`: the ``trustcal assess`` arguments that read it and the N×K probabilities trustcal
must find there. A format that does not apply to a member (a 1-D score of a random forest) returns None.

Nothing here is committed data: :func:`build` makes the corpus (``tests/conftest.py``'s session fixture
``corpus``), and the files are written under the test's own tmp directory.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

SEED = 0
DATASETS = ("digits", "wine", "iris", "breast_cancer")
CLASSIFIERS = ("logistic", "naive_bayes", "forest", "mlp", "svc")


def softmax(z: np.ndarray) -> np.ndarray:
    """Row-wise softmax, written here (not trustcal's) so the references stay independent."""
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


@dataclass
class Member:
    """One classifier × dataset: validation and test predictions with their integer labels 0 … K−1."""

    dataset: str
    classifier: str
    class_names: tuple[str, ...]  # the dataset's target_names, in class-index order
    y_val: np.ndarray
    y_test: np.ndarray
    p_val: np.ndarray  # predict_proba, N×K
    p_test: np.ndarray
    s_val: np.ndarray | None  # logits / scores, N×K (None: the model has none)
    s_test: np.ndarray | None

    @property
    def name(self) -> str:
        return f"{self.dataset}-{self.classifier}"

    @property
    def k(self) -> int:
        return self.p_test.shape[1]

    @property
    def binary(self) -> bool:
        return self.k == 2


def _model(classifier: str):
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import GaussianNB
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    return {
        "logistic": lambda: make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)),
        "naive_bayes": GaussianNB,
        "forest": lambda: RandomForestClassifier(n_estimators=25, random_state=SEED),
        "mlp": lambda: make_pipeline(
            StandardScaler(), MLPClassifier(hidden_layer_sizes=(32,), max_iter=300, random_state=SEED)
        ),
        "svc": lambda: make_pipeline(StandardScaler(), SVC(probability=True, random_state=SEED)),
    }[classifier]()


def _mlp_logits(pipe, x: np.ndarray) -> np.ndarray:
    """The MLP's output layer before its softmax (K columns; one logistic unit s for K = 2, as [0, s])."""
    scaler, mlp = pipe[0], pipe[-1]
    h = scaler.transform(x)
    for i, (w, b) in enumerate(zip(mlp.coefs_, mlp.intercepts_, strict=True)):
        h = h @ w + b
        if i < len(mlp.coefs_) - 1:
            h = np.maximum(h, 0)  # relu, MLPClassifier's default
    return np.column_stack([np.zeros(len(h)), h[:, 0]]) if h.shape[1] == 1 else h


def _scores(classifier: str, model, x: np.ndarray) -> np.ndarray | None:
    """N×K logits/scores whose softmax a user would call the model's probabilities (None: none)."""
    if classifier == "forest":
        return None
    if classifier == "mlp":
        return _mlp_logits(model, x)
    if classifier == "naive_bayes":
        return model.predict_joint_log_proba(x)
    s = model.decision_function(x)
    return np.column_stack([np.zeros(len(s)), s]) if s.ndim == 1 else s  # binary: softmax([0, s]) = σ(s)


def _load(dataset: str):
    from sklearn import datasets

    data = getattr(datasets, f"load_{dataset}")()
    return data.data, data.target, tuple(str(n) for n in data.target_names)


def train(dataset: str, classifier: str) -> Member:
    """Fit ``classifier`` on the train split of ``dataset``; its validation and test predictions."""
    from sklearn.model_selection import train_test_split

    x, y, names = _load(dataset)
    x_train, x_rest, y_train, y_rest = train_test_split(x, y, test_size=0.5, random_state=SEED, stratify=y)
    x_val, x_test, y_val, y_test = train_test_split(x_rest, y_rest, test_size=0.5, random_state=SEED, stratify=y_rest)
    model = _model(classifier)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the MLP's ConvergenceWarning at max_iter: a user's model as it is
        model.fit(x_train, y_train)
    return Member(
        dataset,
        classifier,
        names,
        y_val.astype(np.int64),
        y_test.astype(np.int64),
        model.predict_proba(x_val),
        model.predict_proba(x_test),
        _scores(classifier, model, x_val),
        _scores(classifier, model, x_test),
    )


def build() -> list[Member]:
    """Every classifier on every dataset: 20 members (a few seconds on one core)."""
    return [train(d, c) for d in DATASETS for c in CLASSIFIERS]


# --------------------------------------------------------------------------- formats


@dataclass
class Written:
    """A member written in one format: ``args`` make ``trustcal assess`` read it (sources and flags);
    ``probs`` and ``labels`` are the test predictions it must read, ``val_probs`` and ``val_labels`` the
    validation ones (None: none given); ``logits`` and ``val_logits`` the logits of a format that holds
    logits (N×K; a binary score s as [0, s]), whose NLL is exact (None: probabilities)."""

    format: str
    args: list[str]
    probs: np.ndarray
    labels: np.ndarray
    val_probs: np.ndarray | None
    val_labels: np.ndarray | None
    logits: np.ndarray | None = None
    val_logits: np.ndarray | None = None


FLOAT = "%.17g"  # round-trips every float64 exactly


def vote_fractions(n: int, k: int, trees: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A random forest's probabilities, simulated: the fraction of ``trees`` votes per class, so most entries
    are exactly 0 and a few true classes get 0 too. A tree votes for the label with probability 0.8 (0.4 for a
    third of the samples, the hard ones), else for a uniformly drawn class. Returns (N×K probabilities, labels)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    right = np.where(rng.random(n) < 0.3, 0.4, 0.8)
    votes = np.where(rng.random((n, trees)) < right[:, None], y[:, None], rng.integers(0, k, (n, trees)))
    p = np.zeros((n, k))
    np.add.at(p, (np.repeat(np.arange(n), trees), votes.ravel()), 1.0 / trees)
    return p, y


def _frame(values: np.ndarray, columns, labels) -> pd.DataFrame:
    return pd.DataFrame(values, columns=list(columns)).assign(label=labels)


def csv_probs(m: Member, d: Path) -> Written:
    """CSV, one column ``p_k`` per class and ``label``; the validation predictions in a second CSV."""
    cols = [f"p_{c}" for c in range(m.k)]
    _frame(m.p_test, cols, m.y_test).to_csv(d / "test.csv", index=False, float_format=FLOAT)
    _frame(m.p_val, cols, m.y_val).to_csv(d / "val.csv", index=False, float_format=FLOAT)
    return Written(
        "csv_probs", [str(d / "test.csv"), "--validation", str(d / "val.csv")], m.p_test, m.y_test, m.p_val, m.y_val
    )


def csv_logits(m: Member, d: Path) -> Written | None:
    """CSV of the logits/scores (``--kind logits``), columns ``z_k``."""
    if m.s_test is None:
        return None
    cols = [f"z_{c}" for c in range(m.k)]
    _frame(m.s_test, cols, m.y_test).to_csv(d / "test.csv", index=False, float_format=FLOAT)
    _frame(m.s_val, cols, m.y_val).to_csv(d / "val.csv", index=False, float_format=FLOAT)
    args = [str(d / "test.csv"), "--validation", str(d / "val.csv"), "--kind", "logits"]
    return Written("csv_logits", args, softmax(m.s_test), m.y_test, softmax(m.s_val), m.y_val, m.s_test, m.s_val)


def csv_reordered(m: Member, d: Path) -> Written:
    """CSV whose probability columns are named by class index in a shuffled order (``3,1,2,0,…``, a pandas
    export after reordering): the names, not the positions, say which class each column is."""
    order = np.random.default_rng(SEED).permutation(m.k)
    df = pd.DataFrame(m.p_test[:, order], columns=[str(c) for c in order]).assign(label=m.y_test)
    df.to_csv(d / "test.csv", index=False, float_format=FLOAT)
    return Written("csv_reordered", [str(d / "test.csv")], m.p_test, m.y_test, None, None)


def csv_class_names(m: Member, d: Path) -> Written:
    """CSV with the class names as labels and as the column headers (``setosa, versicolor, virginica``);
    the classes are then in the header's order, here the dataset's."""
    names = np.array(m.class_names)
    _frame(m.p_test, m.class_names, names[m.y_test]).to_csv(d / "test.csv", index=False, float_format=FLOAT)
    _frame(m.p_val, m.class_names, names[m.y_val]).to_csv(d / "val.csv", index=False, float_format=FLOAT)
    return Written(
        "csv_class_names",
        [str(d / "test.csv"), "--validation", str(d / "val.csv")],
        m.p_test,
        m.y_test,
        m.p_val,
        m.y_val,
    )


def npy_probs(m: Member, d: Path) -> Written:
    """``.npy`` of the N×K probabilities, the labels in a second ``.npy`` (``--labels``)."""
    np.save(d / "test.npy", m.p_test)
    np.save(d / "labels.npy", m.y_test)
    return Written(
        "npy_probs", [str(d / "test.npy"), "--labels", str(d / "labels.npy")], m.p_test, m.y_test, None, None
    )


def npz_probs(m: Member, d: Path) -> Written:
    """``.npz`` with ``probs``, ``labels``, ``val_probs``, ``val_labels``."""
    np.savez(d / "test.npz", probs=m.p_test, labels=m.y_test, val_probs=m.p_val, val_labels=m.y_val)
    return Written("npz_probs", [str(d / "test.npz")], m.p_test, m.y_test, m.p_val, m.y_val)


def npz_logits(m: Member, d: Path) -> Written | None:
    """``.npz`` with ``logits``, ``labels``, ``val_logits``, ``val_labels``."""
    if m.s_test is None:
        return None
    np.savez(d / "test.npz", logits=m.s_test, labels=m.y_test, val_logits=m.s_val, val_labels=m.y_val)
    return Written(
        "npz_logits", [str(d / "test.npz")], softmax(m.s_test), m.y_test, softmax(m.s_val), m.y_val, m.s_test, m.s_val
    )


def _arrow(m: Member, d: Path, fmt: str) -> Written | None:
    try:
        import pyarrow  # noqa: F401  (the test extra has it, through trustcal[parquet])
    except ImportError:
        return None
    cols = [f"p_{c}" for c in range(m.k)]
    df = _frame(m.p_test, cols, m.y_test)
    path = d / f"test.{fmt}"
    df.to_parquet(path) if fmt == "parquet" else df.to_feather(path)
    return Written(fmt, [str(path)], m.p_test, m.y_test, None, None)


def parquet_probs(m: Member, d: Path) -> Written | None:
    """Parquet (pandas through pyarrow), the CSV's columns."""
    return _arrow(m, d, "parquet")


def feather_probs(m: Member, d: Path) -> Written | None:
    """Feather (pandas through pyarrow), the CSV's columns."""
    return _arrow(m, d, "feather")


def _two(p1: np.ndarray) -> np.ndarray:
    return np.column_stack([1.0 - p1, p1])


def binary_p1_csv(m: Member, d: Path) -> Written | None:
    """A binary classifier's one column P(y = 1) (``predict_proba(x)[:, 1]``) beside its 0/1 labels."""
    if not m.binary:
        return None
    pd.DataFrame({"p": m.p_test[:, 1], "label": m.y_test}).to_csv(d / "test.csv", index=False, float_format=FLOAT)
    pd.DataFrame({"p": m.p_val[:, 1], "label": m.y_val}).to_csv(d / "val.csv", index=False, float_format=FLOAT)
    return Written(
        "binary_p1_csv",
        [str(d / "test.csv"), "--validation", str(d / "val.csv")],
        _two(m.p_test[:, 1]),
        m.y_test,
        _two(m.p_val[:, 1]),
        m.y_val,
    )


def binary_p1_npy(m: Member, d: Path) -> Written | None:
    """A 1-D ``.npy`` of P(y = 1), the labels in a second ``.npy``."""
    if not m.binary:
        return None
    np.save(d / "test.npy", m.p_test[:, 1])
    np.save(d / "labels.npy", m.y_test)
    return Written(
        "binary_p1_npy",
        [str(d / "test.npy"), "--labels", str(d / "labels.npy")],
        _two(m.p_test[:, 1]),
        m.y_test,
        None,
        None,
    )


def binary_score_npz(m: Member, d: Path) -> Written | None:
    """A binary classifier's 1-D ``decision_function`` (logit of P(y = 1)) in an ``.npz`` (``logits``)."""
    if not m.binary or m.s_test is None:
        return None
    s_test, s_val = m.s_test[:, 1] - m.s_test[:, 0], m.s_val[:, 1] - m.s_val[:, 0]
    np.savez(d / "test.npz", logits=s_test, labels=m.y_test, val_logits=s_val, val_labels=m.y_val)
    z_test, z_val = (np.column_stack([np.zeros(len(s)), s]) for s in (s_test, s_val))
    return Written(
        "binary_score_npz", [str(d / "test.npz")], softmax(z_test), m.y_test, softmax(z_val), m.y_val, z_test, z_val
    )


# name → writer; the conformance test assesses every member in every format that applies to it.
FORMATS: dict[str, Callable[[Member, Path], Written | None]] = {
    "csv_probs": csv_probs,
    "csv_logits": csv_logits,
    "csv_reordered": csv_reordered,
    "csv_class_names": csv_class_names,
    "npy_probs": npy_probs,
    "npz_probs": npz_probs,
    "npz_logits": npz_logits,
    "parquet": parquet_probs,
    "feather": feather_probs,
    "binary_p1_csv": binary_p1_csv,
    "binary_p1_npy": binary_p1_npy,
    "binary_score_npz": binary_score_npz,
}


def write(m: Member, fmt: str, folder: Path) -> Written | None:
    """``m`` written in format ``fmt`` into ``folder`` (created), or None if the format does not apply."""
    folder.mkdir(parents=True, exist_ok=True)
    return FORMATS[fmt](m, folder)
