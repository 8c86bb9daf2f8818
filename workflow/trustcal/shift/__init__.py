"""Dataset shift: CIFAR-10-C's corruptions of test images at severities 1–5 (:mod:`trustcal.shift.corruptions`)
and MNIST-C's, each at its one fixed strength (:mod:`trustcal.shift.mnist_c`), for measuring calibration and
trust as the inputs drift from the training distribution."""

from trustcal.shift.corruptions import CORRUPTIONS, SEVERITIES, Corruption, available, corrupt, unavailable
from trustcal.shift.mnist_c import MNIST_C, available_mnist, corrupt_mnist, unavailable_mnist

__all__ = [
    "CORRUPTIONS",
    "MNIST_C",
    "SEVERITIES",
    "Corruption",
    "available",
    "available_mnist",
    "corrupt",
    "corrupt_mnist",
    "unavailable",
    "unavailable_mnist",
]
