"""The paper's two classifiers (docs/method.md §1), returning logits.

The paper's Keras CIFAR-10 model ends in a softmax layer trained with a
non-logit loss; that is the same function as logits + cross-entropy, and the
logits are what temperature scaling needs.
"""

from __future__ import annotations

from torch import nn

INITS = ("glorot", "torch")


class MNISTMLP(nn.Sequential):
    """Flatten → Linear(784, 128) → ReLU → Linear(128, 10)."""

    def __init__(self) -> None:
        super().__init__(nn.Flatten(), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))


class CIFARCNN(nn.Sequential):
    """Keras tutorial CNN: three valid 3×3 convolutions, two max-pools, 64-unit head (122,570 parameters)."""

    def __init__(self) -> None:
        super().__init__(
            nn.Conv2d(3, 32, 3),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(64, 64, 3),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(1024, 64),
            nn.ReLU(),
            nn.Linear(64, 10),
        )


# dataset → network; trustcal.training.engine.STACKED gives each network class its stacked multi-seed form
ARCHITECTURES = {"mnist": MNISTMLP, "cifar10": CIFARCNN}


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
    """A freshly initialised model for ``dataset``; call under a seeded RNG."""
    if dataset not in ARCHITECTURES:
        raise ValueError(f"unknown dataset {dataset!r}; allowed: {sorted(ARCHITECTURES)}")
    if init not in INITS:
        raise ValueError(f"unknown init {init!r}; allowed: {INITS}")
    model = ARCHITECTURES[dataset]()
    return glorot_init_(model) if init == "glorot" else model


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())
