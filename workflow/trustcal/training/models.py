"""The paper's two classifiers (docs/method.md §1), returning logits.

The paper's Keras CIFAR-10 model ends in a softmax layer trained with a
non-logit loss; that is the same function as logits + cross-entropy, and the
logits are what temperature scaling needs.

Both take the image shape and the number of classes (``Class(in_shape=(C, H, W),
num_classes=K)``, as every network of :mod:`.networks` does), so the paper's
networks also run on Fashion-MNIST, CIFAR-100, SVHN or a user's images; their
defaults build the paper's modules exactly (the same layers, parameter names,
order and shapes), so the paper's runs and checkpoints are unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from torch import nn

from trustcal import registry

INITS = ("glorot", "torch")


class MNISTMLP(nn.Sequential):
    """Flatten → Linear(C·H·W, 128) → ReLU → Linear(128, K); the paper's: 1×28×28, 10 classes.

    ``in_shape`` is (C, H, W) of images or (F,) of a user's table (trustcal.data.tabular). ``hidden``: the
    widths of the hidden layers, each followed by a ReLU (``network_kwargs: {hidden: [256, 64]}``); one of 128
    by default, the paper's modules exactly.
    """

    def __init__(
        self, in_shape: Sequence[int] = (1, 28, 28), num_classes: int = 10, hidden: int | Sequence[int] = 128
    ) -> None:
        widths = list(hidden) if isinstance(hidden, (list, tuple)) else [hidden]
        if not widths or not all(type(w) is int and w > 0 for w in widths):
            raise ValueError(f"hidden {hidden!r}: a positive width, or a list of them (one per hidden layer)")
        layers: list[nn.Module] = [nn.Flatten()]
        for fan_in, width in zip([math.prod(in_shape), *widths], widths):
            layers += [nn.Linear(fan_in, width), nn.ReLU()]
        super().__init__(*layers, nn.Linear(widths[-1], num_classes))


def _valid_conv_pool_side(side: int) -> int:
    """A side after CIFARCNN's three valid 3×3 convolutions and the two 2×2 max-pools between them."""
    return ((side - 2) // 2 - 2) // 2 - 2


class CIFARCNN(nn.Sequential):
    """Keras tutorial CNN: three valid 3×3 convolutions, two max-pools, 64-unit head (122,570 parameters
    for the paper's 3×32×32 images and 10 classes)."""

    def __init__(self, in_shape: tuple[int, int, int] = (3, 32, 32), num_classes: int = 10) -> None:
        channels, height, width = in_shape
        flat = 64 * _valid_conv_pool_side(height) * _valid_conv_pool_side(width)  # 1024 for 32×32
        super().__init__(
            nn.Conv2d(channels, 32, 3),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(64, 64, 3),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(max(flat, 1), 64),  # too small an image: the network's check names it (networks.build_network)
            nn.ReLU(),
            nn.Linear(64, num_classes),
        )


# dataset → network of the code before setups (trustcal.registry); build_model and the engine's tests use it,
# trustcal.training.engine.STACKED gives each network class its stacked multi-seed form
ARCHITECTURES = {
    name: {MNISTMLP.__name__: MNISTMLP, CIFARCNN.__name__: CIFARCNN}[
        registry.NETWORKS[registry.DATASETS[name].network].factory.rsplit(":", 1)[1]
    ]
    for name in registry.PAPER_DATASETS
}


def glorot_init_(model: nn.Module) -> nn.Module:
    """Keras defaults: Glorot-uniform weights, zero biases.

    For convolutions Keras' fan_in/fan_out include the kernel area, as
    ``nn.init.xavier_uniform_`` computes them.
    """
    for module in model.modules():
        if isinstance(module, (nn.Linear, nn.Conv2d)):
            nn.init.xavier_uniform_(module.weight)
            nn.init.zeros_(module.bias)
    return model


def build_model(dataset: str, init: str = "glorot") -> nn.Module:
    """A freshly initialised model of the paper for ``dataset`` (mnist, cifar10); call under a seeded RNG.

    Any network, shape and number of classes: :func:`trustcal.training.networks.build_network`.
    """
    if dataset not in ARCHITECTURES:
        raise ValueError(f"unknown dataset {dataset!r}; allowed: {sorted(ARCHITECTURES)}")
    if init not in INITS:
        raise ValueError(f"unknown init {init!r}; allowed: {INITS}")
    model = ARCHITECTURES[dataset]()
    return glorot_init_(model) if init == "glorot" else model


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
