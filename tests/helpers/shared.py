"""The shared folder beside the repository (``../shared``, or ``$TRUSTCAL_SHARED``): real datasets, the
author's published predictions, the paper's text. Not part of the repository; tests that need a file
of it skip, naming the path, where it is absent.

Tests ask for the ``shared`` fixture (tests/conftest.py); :func:`shared_path` is the same look-up for
module-level code (a module-scoped fixture, a parametrisation).
"""

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("TRUSTCAL_SHARED", REPO.parent / "shared"))
AUTHOR_PREDICTIONS = "reference/author-predictions"  # MNIST_PRED/, CIFAR_PRED/: bef_<epoch>.csv.gz, aft_…


def shared_path(relative: str) -> Path:
    """``SHARED / relative``, or skip the calling test with the path and how to point at the folder."""
    path = SHARED / relative
    if not path.exists():
        pytest.skip(f"{path} not found (the shared folder ../shared; set TRUSTCAL_SHARED to use another)")
    return path
