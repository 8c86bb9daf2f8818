"""trustcal: subjective-logic trust opinions and calibration metrics for classifiers.

In a notebook or a script::

    import trustcal
    result = trustcal.assess(probs_or_logits, labels)   # numpy arrays: N×K and N
    print(result.summary()); result.scores; result.trust; result.reliability_diagram()

(:func:`trustcal.api.assess`; ``trustcal assess`` does the same on files.)

``pip install trustcal`` is enough for that, for ``trustcal assess`` and the
metrics: ``import trustcal`` imports nothing heavy (the API is loaded on first
use), and nothing of it needs torch or snakemake. The subpackages that need
torch (``training`` but its ``history`` module, ``data``: the ``train`` extra) or
the workflow's packages (``config``: the ``workflow`` extra) import them themselves.

The package, by stage; a module imports only from its own stage or the stages
above it in this list (tests/unit/test_layout.py checks it; docs/layout.md draws it)::

    errors, files, config       the user-facing error, atomic files, the results paths
    codedigest                  the digest of the code a workflow script runs (rule params)
    numerics                    PROB_FLOOR, the probability floor of every fit and NLL
    measures                    metrics, opinions, trust, bootstrap
    calibration                 temperature scaling (calibrators)
    evaluation                  the result tables of prediction sets: trust and scores
    data                        download, staging, splits, synthetic data
    training                    models, engine, the resumable loop, history.csv
    predictions                 reading others' prediction files
    reporting                   figures, the verdict, the shift tables
    settings                    one Settings object: the config's evaluation sections, parsed once
    stages, assessment          the workflow's stages; assessing prediction files
    study, api                  the study report and its answers; the Python API
    cli                         the command line
"""

__version__ = "0.1.0"

__all__ = ["assess", "AssessmentResult", "AssessmentWarning", "TrustcalError", "__version__"]

_LAZY = {"assess": "api", "AssessmentResult": "api", "AssessmentWarning": "api", "TrustcalError": "errors"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
