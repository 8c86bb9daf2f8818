"""A calibrator of the user's own, named by its import path ``package.module:Class`` (docs/method.md §2.15).

The protocol, the same as scikit-learn's and probmetrics' calibrators:

- ``Class(**options)`` builds it (``calibration.options`` of its import path, or none);
- ``fit(x, labels)`` fits it on the fit split: x the N×K logits, or the N×K probabilities where the class
  says ``inputs = "probabilities"``; labels N integers 0..K−1; what it returns is ignored;
- ``predict_proba(x)`` gives the N×K calibrated probabilities of any such x: rows of numbers in [0, 1]
  summing to 1 (within :data:`SUM_TOLERANCE`; they are renormalised).

Its state is the fit split itself, kept with its import path and options (arrays, never a pickle): it is
fitted again from them wherever its predictions are needed, so a fit that draws random numbers should seed
them. It is judged against every other calibrator as they are; the NLL safeguard of §2.12 does not apply
(its family is unknown).
"""

from __future__ import annotations

import functools
import inspect
import json
import os

import numpy as np

from trustcal.calibration.base import Calibrator, check_logits
from trustcal.calibration.temperature import softmax
from trustcal.errors import TrustcalError
from trustcal.imports import import_class, is_import_path, one_line

INPUTS = ("logits", "probabilities")
SUM_TOLERANCE = 1e-3  # a row of predict_proba may miss 1 by this much (float32 sums of many classes)
PROTOCOL = "fit(x, labels) and predict_proba(x) (docs/method.md §2.15)"


class UserCalibratorError(TrustcalError):
    """A user's calibrator that cannot be imported, built, fitted or read."""


def _has_protocol(cls) -> bool:
    return all(callable(getattr(cls, name, None)) for name in ("fit", "predict_proba"))


def user_class_problem(path: str, options: dict | None = None) -> str | None:
    """Why ``path`` does not lead to a calibrator this module can use with ``options`` (None when it does):
    the import, the protocol's two methods, ``inputs`` and whether the constructor takes the options. Imports
    the module, as the fit does."""
    what = f"calibrator {path!r}"
    try:
        cls = import_class(path, what, UserCalibratorError, "calibrator", _has_protocol)
    except UserCalibratorError as exc:
        return str(exc)
    if not inspect.isclass(cls):
        return f"{what}: {path.partition(':')[2]} is a {type(cls).__name__}, not a class. Fix: name a class with {PROTOCOL}"
    missing = [name for name in ("fit", "predict_proba") if not callable(getattr(cls, name, None))]
    if missing:
        return f"{what}: {cls.__name__} has no {' and no '.join(missing)}. Fix: give the class {PROTOCOL}"
    inputs = getattr(cls, "inputs", "logits")
    if inputs not in INPUTS:
        return f"{what}: {cls.__name__}.inputs is {inputs!r}. Fix: set it to 'logits' or 'probabilities'"
    try:
        inspect.signature(cls).bind(**(options or {}))
    except TypeError as exc:
        return (
            f"{what}: {cls.__name__}({', '.join(f'{k}={v!r}' for k, v in (options or {}).items())}) does not match "
            f"its constructor ({exc}). Fix: correct calibration.options of {path!r}"
        )
    except ValueError:  # a signature Python cannot read (a C extension): the fit will say
        pass
    return None


def source_digest(path: str) -> str:
    """The sha256 of the file of ``path``'s module ('' where it has none), so that the workflow refits a user's
    calibrator whose code changed. Finds the module without running it (its parent packages are imported)."""
    import hashlib
    import importlib.util

    try:
        spec = importlib.util.find_spec(path.partition(":")[0])
    except (ImportError, ValueError):
        return ""
    origin = getattr(spec, "origin", None)
    if not origin or not os.path.isfile(origin):
        return ""
    with open(origin, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


@functools.cache
def user_calibrator_class(path: str) -> type[UserCalibrator]:
    """The :class:`UserCalibrator` subclass whose ``method`` is ``path``."""
    if not is_import_path(path):
        raise ValueError(f"not an import path package.module:Class: {path!r}")
    return type(f"UserCalibrator[{path}]", (UserCalibrator,), {"method": path})


class UserCalibrator(Calibrator):
    """A user's calibrator behind trustcal's interface (the module docstring)."""

    name = "a calibrator of your own"
    options = ()  # any keyword of the class's constructor: checked against it (user_class_problem)

    def __init__(self, n_classes, options, fit_logits, fit_labels, **flags):
        super().__init__(n_classes, **flags)
        self.user_options = dict(options)
        self.fit_logits = np.ascontiguousarray(fit_logits, dtype=np.float64)
        self.fit_labels = np.asarray(fit_labels, dtype=np.int64)
        self._model, self._inputs = self._fitted()

    def _fail(self, doing: str, exc: BaseException, fix: str):
        raise UserCalibratorError(f"calibrator {self.method!r}: {doing} failed ({one_line(exc)}). Fix: {fix}") from None

    def _fitted(self):
        problem = user_class_problem(self.method, self.user_options)
        if problem:
            raise UserCalibratorError(problem)
        cls = import_class(self.method, self.method, UserCalibratorError, "calibrator", _has_protocol)
        inputs = getattr(cls, "inputs", "logits")
        try:
            model = cls(**self.user_options)
        except Exception as exc:
            self._fail(f"{cls.__name__}(**options)", exc, "correct its calibration.options or its constructor")
        x = self.fit_logits if inputs == "logits" else softmax(self.fit_logits)
        try:
            model.fit(x, self.fit_labels.copy())
        except Exception as exc:
            self._fail(f"fit on the {len(x)} × {x.shape[1]} fit split", exc, "correct its fit(x, labels)")
        return model, inputs

    @classmethod
    def _fit(cls, z, y, t_min, t_max, options):
        cal = cls(z.shape[1], options, z, y)
        cal.predict_proba(z)  # the protocol's output checked on the fit split, at the first fit
        return cal

    def predict_proba(self, logits):
        z = check_logits(logits, self.n_classes)
        x = z if self._inputs == "logits" else softmax(z)
        try:
            p = np.asarray(self._model.predict_proba(x), dtype=np.float64)
        except Exception as exc:
            self._fail(f"predict_proba on {len(x)} × {x.shape[1]}", exc, "correct its predict_proba(x)")
        fix = "return an N × K array of probabilities, each row summing to 1 (e.g. p / p.sum(axis=1, keepdims=True))"
        problem = None
        if p.shape != z.shape:
            problem = f"returned shape {p.shape} for {z.shape[0]} × {z.shape[1]} inputs"
        elif not np.isfinite(p).all():
            problem = f"returned {int((~np.isfinite(p)).sum())} values that are NaN or infinite"
        elif p.min() < -SUM_TOLERANCE or p.max() > 1 + SUM_TOLERANCE:
            problem = f"returned values from {p.min():.6g} to {p.max():.6g}, outside [0, 1]"
        elif np.abs(p.sum(axis=1) - 1).max() > SUM_TOLERANCE:
            worst = int(np.abs(p.sum(axis=1) - 1).argmax())
            problem = f"returned rows that do not sum to 1 (row {worst} sums to {p[worst].sum():.6g})"
        if problem:
            raise UserCalibratorError(f"calibrator {self.method!r}: predict_proba {problem}. Fix: {fix}")
        p = np.clip(p, 0.0, 1.0)
        return p / p.sum(axis=1, keepdims=True)

    @property
    def n_parameters(self):
        return int(getattr(self._model, "n_parameters", 0))

    def _arrays(self):
        return {
            "import_path": np.array(self.method),
            "options": np.array(json.dumps(self.user_options, sort_keys=True)),
            "fit_logits": self.fit_logits,
            "fit_labels": self.fit_labels,
        }

    @classmethod
    def _from_arrays(cls, n_classes, arrays, **flags):
        return cls(n_classes, json.loads(str(arrays["options"])), arrays["fit_logits"], arrays["fit_labels"], **flags)
