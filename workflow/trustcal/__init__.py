"""trustcal: subjective-logic trust opinions and calibration metrics for classifiers.

In a notebook or a script::

    import trustcal
    result = trustcal.assess(probs_or_logits, labels)   # numpy arrays: N×K and N
    print(result.summary()); result.scores; result.trust; result.reliability_diagram()

(:func:`trustcal.api.assess`; ``trustcal assess`` does the same on files.)

``pip install trustcal`` is enough for that, for ``trustcal assess`` and the
metrics: ``import trustcal`` imports nothing heavy (the API is loaded on first
use), and nothing of it needs torch or snakemake. Modules that need torch
(``models``, ``train``, ``engine``, ``data``: the ``train`` extra) or the
workflow's packages (``config``: the ``workflow`` extra) import them themselves.
"""

__version__ = "0.1.0"

__all__ = ["assess", "AssessmentResult", "AssessmentWarning", "TrustcalError", "__version__"]

_LAZY = {"assess": "api", "AssessmentResult": "api", "AssessmentWarning": "api", "TrustcalError": "io"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
