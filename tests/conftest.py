import os
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests explore fresh random examples on a developer's machine; in CI
# (CI=1, set by .ci/run) they replay a fixed sequence, so a landing never
# depends on the draw. A failure anywhere prints the example to reproduce it.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TRUSTCAL_SHARED", REPO.parent / "shared"))
MNIST_TEST_FILES = SHARED / "datasets" / "mnist-test"
AUTHOR_PREDICTIONS = SHARED / "reference" / "author-predictions"


@pytest.fixture
def tiny_data(tmp_path):
    """A data_dir with small MNIST and CIFAR-10 files in torchvision's on-disk formats."""
    from trustcal.data.synthetic import write_cifar10, write_mnist

    data_dir = tmp_path / "data"
    write_mnist(data_dir, n_train=200, n_test=60)
    write_cifar10(data_dir, n_train=200, n_test=60)
    return data_dir
