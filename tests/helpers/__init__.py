"""Helpers shared by the tests in every folder (on pytest's path: ``pythonpath`` in pyproject.toml).

``helpers.shared``: the ../shared folder (datasets, the author's predictions); ``helpers.workflow``:
the tiny configuration and snakemake in a subprocess; ``helpers.corpus``: the conformance corpus of
scikit-learn classifiers; ``helpers.training``: the training engine's error budget.
"""
