import os
import shutil

import pytest
from hypothesis import settings

# Property tests explore fresh random examples on a developer's machine; in CI
# (CI=1, set by .ci/run) they replay a fixed sequence, so a landing never
# depends on the draw. A failure anywhere prints the example to reproduce it.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(scope="session")
def shared():
    """The shared folder's files: ``shared("datasets/mnist")`` is its path, or skips the test naming it.

    The folder (``../shared`` beside the repository, or ``$TRUSTCAL_SHARED``) holds the real datasets,
    the author's predictions and the paper's text; it is not part of the repository (tests/helpers/shared.py).
    """
    from helpers.shared import shared_path

    return shared_path


@pytest.fixture(scope="session")
def author_predictions(shared):
    """The author's published prediction files (``MNIST_PRED/``, ``CIFAR_PRED/``); skips where absent."""
    from helpers.shared import AUTHOR_PREDICTIONS

    return shared(AUTHOR_PREDICTIONS)


@pytest.fixture
def tiny_data(tmp_path):
    """A data_dir with small MNIST and CIFAR-10 files in torchvision's on-disk formats."""
    from trustcal.data.synthetic import write_cifar10, write_mnist

    data_dir = tmp_path / "data"
    write_mnist(data_dir, n_train=200, n_test=60)
    write_cifar10(data_dir, n_train=200, n_test=60)
    return data_dir


@pytest.fixture(scope="session")
def finished(tmp_path_factory):
    """A finished tiny run (tests/tiny.yaml: 3 epochs, both datasets), made once per session.

    Shared read-only by every test that asks for it: a test that changes the run
    (reruns, new config, new files) works on `copy_of` instead.
    """
    from helpers.workflow import make_workdir, snakemake

    workdir = make_workdir(tmp_path_factory.mktemp("run") / "work")
    snakemake(workdir)
    return workdir


@pytest.fixture
def copy_of(finished, tmp_path):
    """A copy of the finished tiny run for this test alone."""
    dst = tmp_path / "work"
    shutil.copytree(finished, dst, symlinks=True)
    return dst


@pytest.fixture(scope="session")
def corpus_members():
    """The conformance corpus (tests/helpers/corpus.py): 20 scikit-learn classifier × dataset members, trained once
    per session (the files of each format are written under each test's own tmp_path)."""
    pytest.importorskip("sklearn")
    from helpers import corpus

    return corpus.build()
