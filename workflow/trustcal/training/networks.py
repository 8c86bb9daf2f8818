"""Every network a setup can name (trustcal.registry, docs/usage.md "Any dataset, any network"), built by
:func:`build_network`: the registered ones, ``torchvision:NAME`` and a user's ``package.module:Class``.

Each registered network is a class built as ``Class(in_shape=(C, H, W), num_classes=K, **kwargs)`` that
returns logits (N, K) of images scaled to [0, 1]:

- the paper's two (:mod:`.models`: ``paper_mlp``, ``paper_cnn``), initialised as the paper's Keras code
  did (``init: glorot``) or by PyTorch's defaults (``init: torch``);
- :class:`LeNet5` (LeCun et al. 1998, with ReLU and max-pooling);
- :class:`ResNet20` (He et al. 2016's CIFAR ResNet, option A shortcuts);
- :class:`WideResNet` (Zagoruyko & Komodakis 2016, WRN-16-4 by default).

The networks other than the paper's keep their own initialisation (``init`` applies to the paper's only).
:class:`Standardise` is the first module of a network trained with ``normalise: true``: the training split's
per-channel mean and standard deviation are buffers of the model, so its checkpoint holds them and the
logits are computed by the same function training validated with.
"""

from __future__ import annotations

import inspect
import math
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from trustcal.errors import TrustcalError
from trustcal.imports import import_class, one_line
from trustcal.registry import NETWORKS, TORCHVISION_PREFIX, did_you_mean, network_problem
from trustcal.training.models import CIFARCNN, INITS, MNISTMLP, glorot_init_


class NetworkError(TrustcalError):
    """A network that cannot be built: an unknown name, an import path that does not lead to an ``nn.Module``
    class, a constructor that refuses the arguments, or a model whose output is not (N, num_classes)."""


# --- the registered networks -------------------------------------------------------------------


class LeNet5(nn.Sequential):
    """LeNet-5 (LeCun et al. 1998) as it is usually trained today: ReLU and max-pooling in place of the
    original's scaled tanh and trainable sub-sampling, a plain linear output in place of its RBF units.

    conv 5×5, 6 → max-pool 2 → conv 5×5, 16 → max-pool 2 → 120 → 84 → K. The original reads 32×32 images;
    smaller ones are zero-padded in the first convolution (``pad`` None: 2 for a side below 32, as MNIST's
    28×28 digits were centred in 32×32 fields) so that 1×28×28 and 3×32×32 both reach the 16×5×5 features
    of the paper (61,706 parameters for 1×28×28 and 10 classes).
    """

    def __init__(self, in_shape: Sequence[int] = (1, 28, 28), num_classes: int = 10, pad: int | None = None):
        channels, height, width = in_shape
        if pad is None:
            pad = 2 if min(height, width) < 32 else 0
        side = lambda s: ((s + 2 * pad - 4) // 2 - 4) // 2  # noqa: E731  (conv 5, pool 2, conv 5, pool 2)
        super().__init__(
            nn.Conv2d(channels, 6, 5, padding=pad),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(16 * max(side(height), 1) * max(side(width), 1), 120),
            nn.ReLU(),
            nn.Linear(120, 84),
            nn.ReLU(),
            nn.Linear(84, num_classes),
        )


class _ShortcutA(nn.Module):
    """He et al. 2016's option A: the identity, sub-sampled by the stride and zero-padded to the new width
    (no parameters)."""

    def __init__(self, stride: int, extra_channels: int):
        super().__init__()
        self.stride, self.extra = stride, extra_channels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x[:, :, :: self.stride, :: self.stride]
        return F.pad(x, (0, 0, 0, 0, self.extra // 2, self.extra - self.extra // 2))


class BasicBlock(nn.Module):
    """conv 3×3 → BN → ReLU → conv 3×3 → BN, plus the shortcut, → ReLU (He et al. 2016, Fig. 2 left)."""

    def __init__(self, in_channels: int, channels: int, stride: int, shortcut: str):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, channels, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        if stride == 1 and in_channels == channels:
            self.shortcut = nn.Identity()
        elif shortcut == "A":
            self.shortcut = _ShortcutA(stride, channels - in_channels)
        else:  # B: a 1×1 projection where the shape changes
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_channels, channels, 1, stride, bias=False), nn.BatchNorm2d(channels)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet20(nn.Module):
    """He et al. 2016's ResNet for CIFAR (§4.2): conv 3×3, 16 → three stages of n basic blocks of 16, 32 and 64
    channels (the second and third start with stride 2) → global average pooling → K; depth 6n + 2
    (20 by default: n = 3; 32, 44, 56, 110 also as in the paper).

    Shortcuts: option A by default, as the paper's CIFAR networks (identity, zero-padded where the width
    doubles: 269,722 parameters for 3×32×32 and 10 classes); ``shortcut="B"`` projects with 1×1
    convolutions there instead. Initialisation: He (Kaiming) normal for the convolutions (fan-in, ReLU gain),
    BatchNorm γ = 1, β = 0, PyTorch's default for the final linear layer.
    """

    def __init__(
        self, in_shape: Sequence[int] = (3, 32, 32), num_classes: int = 10, depth: int = 20, shortcut: str = "A"
    ):
        super().__init__()
        if (depth - 2) % 6 or depth < 8:
            raise ValueError(f"depth {depth}: a CIFAR ResNet has depth 6n + 2 (20, 32, 44, 56, 110)")
        if shortcut not in ("A", "B"):
            raise ValueError(f"shortcut {shortcut!r}: use 'A' (zero-padded identity) or 'B' (1×1 projections)")
        n = (depth - 2) // 6
        self.conv1 = nn.Conv2d(in_shape[0], 16, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        blocks, width = [], 16
        for stage, channels in enumerate((16, 32, 64)):
            for i in range(n):
                blocks.append(BasicBlock(width, channels, 2 if stage and i == 0 else 1, shortcut))
                width = channels
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(64, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="relu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.blocks(F.relu(self.bn1(self.conv1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class WideBlock(nn.Module):
    """A pre-activation wide block: BN → ReLU → conv 3×3 → BN → ReLU → (dropout) → conv 3×3, plus the shortcut
    (a 1×1 convolution of the pre-activated input where the shape changes, the identity elsewhere)."""

    def __init__(self, in_channels: int, channels: int, stride: int, dropout: float):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(in_channels)
        self.conv1 = nn.Conv2d(in_channels, channels, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.dropout = nn.Dropout(dropout) if dropout > 0 else nn.Identity()  # p = 0 draws no random numbers
        self.conv2 = nn.Conv2d(channels, channels, 3, 1, 1, bias=False)
        self.projection = (
            nn.Conv2d(in_channels, channels, 1, stride, bias=False) if stride != 1 or in_channels != channels else None
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        activated = F.relu(self.bn1(x))
        out = self.conv1(activated)
        out = self.conv2(self.dropout(F.relu(self.bn2(out))))
        return out + (x if self.projection is None else self.projection(activated))


class WideResNet(nn.Module):
    """WRN-depth-width (Zagoruyko & Komodakis 2016): conv 3×3, 16 → three groups of n = (depth - 4) / 6
    pre-activation blocks of 16·width, 32·width and 64·width channels (the second and third start with
    stride 2) → BN → ReLU → global average pooling → K. WRN-16-4 by default (2,748,890 parameters for
    3×32×32 and 10 classes), dropout between a block's convolutions 0 (the paper's 0.3 is ``dropout: 0.3``).

    Initialisation as the authors' code: He normal for the convolutions (fan-out, ReLU gain), BatchNorm
    γ = 1, β = 0, the linear layer's bias 0.
    """

    def __init__(
        self,
        in_shape: Sequence[int] = (3, 32, 32),
        num_classes: int = 10,
        depth: int = 16,
        width: int = 4,
        dropout: float = 0.0,
    ):
        super().__init__()
        if (depth - 4) % 6 or depth < 10:
            raise ValueError(f"depth {depth}: a wide ResNet has depth 6n + 4 (10, 16, 22, 28, 40)")
        if width < 1 or not 0 <= dropout < 1:
            raise ValueError(f"width {width}, dropout {dropout}: width ≥ 1 and dropout in [0, 1)")
        n = (depth - 4) // 6
        widths = (16 * width, 32 * width, 64 * width)
        self.conv1 = nn.Conv2d(in_shape[0], 16, 3, 1, 1, bias=False)
        blocks, channels = [], 16
        for group, out in enumerate(widths):
            for i in range(n):
                blocks.append(WideBlock(channels, out, 2 if group and i == 0 else 1, dropout))
                channels = out
        self.blocks = nn.Sequential(*blocks)
        self.bn = nn.BatchNorm2d(channels)
        self.fc = nn.Linear(channels, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        nn.init.zeros_(self.fc.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.bn(self.blocks(self.conv1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


# factory import path → class, for every class trustcal.registry.NETWORKS names: resolved here rather than by
# importlib, so the stage digest (trustcal.codedigest) sees the code training runs
FACTORIES: dict[str, type[nn.Module]] = {
    f"{cls.__module__}:{cls.__qualname__}": cls for cls in (MNISTMLP, CIFARCNN, LeNet5, ResNet20, WideResNet)
}


# --- what a model adds around a network ----------------------------------------------------------


class Standardise(nn.Module):
    """(x - mean) / sd per channel, with the training split's statistics as buffers (``mean``, ``sd``: C × 1 × 1),
    so they are saved in the checkpoint and restored with the rest of the model."""

    def __init__(self, mean: Sequence[float], sd: Sequence[float]):
        super().__init__()
        self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32).view(-1, 1, 1))
        self.register_buffer("sd", torch.tensor(sd, dtype=torch.float32).view(-1, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / self.sd


def channel_statistics(x: np.ndarray, chunk: int = 4096) -> tuple[list[float], list[float]]:
    """Per-channel mean and (population) standard deviation of uint8 images x (N, C, H, W) scaled to [0, 1].

    Summed in exact integers (uint8 values and their squares in int64), chunk by chunk: the same numbers
    whatever the machine, without a float copy of the training set. A constant channel gets sd 1.
    """
    n, c = x.shape[0], x.shape[1]
    s1 = np.zeros(c, dtype=np.int64)
    s2 = np.zeros(c, dtype=np.int64)
    for i in range(0, n, chunk):
        block = x[i : i + chunk].astype(np.int64)
        s1 += block.sum(axis=(0, 2, 3))
        s2 += (block * block).sum(axis=(0, 2, 3))
    count = n * math.prod(x.shape[2:])
    mean = s1 / count
    var = np.maximum(s2 / count - mean * mean, 0.0)
    sd = np.where(var > 0, np.sqrt(var), 255.0)
    return (mean / 255).tolist(), (sd / 255).tolist()


def standardised(network: nn.Module, channels: int, mean=None, sd=None) -> nn.Sequential:
    """``network`` behind :class:`Standardise` (``standardise``, then ``network``: the state_dict's prefixes);
    without statistics, placeholders that a checkpoint's ``load_state_dict`` replaces."""
    mean = [0.0] * channels if mean is None else mean
    sd = [1.0] * channels if sd is None else sd
    return nn.Sequential(OrderedDict(standardise=Standardise(mean, sd), network=network))


class RepeatChannels(nn.Module):
    """A 1-channel image repeated on 3 channels (as torchvision's ``Grayscale(num_output_channels=3)``)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.expand(-1, 3, -1, -1)


# --- building a network by its name ------------------------------------------------------------------


def _import_class(network: str) -> type:
    """The class ``package.module:Class`` names, or a :class:`NetworkError` saying what is missing and the fix."""
    cls = import_class(network, f"network {network!r}", NetworkError, "nn.Module", lambda c: issubclass(c, nn.Module))
    if not (inspect.isclass(cls) and issubclass(cls, nn.Module)):
        module_name, _, class_name = network.partition(":")
        kind = "a class" if inspect.isclass(cls) else f"a {type(cls).__name__}"
        raise NetworkError(
            f"network {network!r}: {class_name} in {module_name} is {kind}, not an nn.Module class; name a "
            "subclass of torch.nn.Module built as Class(in_shape=(C, H, W), num_classes=K, **network_kwargs)"
        )
    return cls


def network_class(network: str) -> type | None:
    """The ``nn.Module`` class ``network`` builds (None for ``torchvision:NAME``); a :class:`NetworkError` with
    the fix when the name leads to none."""
    problem = network_problem(network)
    if problem is not None:
        raise NetworkError(problem)
    if network.startswith(TORCHVISION_PREFIX):
        return None
    if network in NETWORKS:
        factory = NETWORKS[network].factory
        return FACTORIES.get(factory) or _import_class(factory)
    return _import_class(network)


def torchvision_problem(network: str) -> str | None:
    """Why ``torchvision:NAME`` names none of the installed torchvision's classification networks (None when
    it names one): NAME, the closest name it has, and the fix."""
    import torchvision

    name = network[len(TORCHVISION_PREFIX) :]
    available = torchvision.models.list_models(module=torchvision.models)
    if name in available:
        return None
    return (
        f"network {network!r}: torchvision {torchvision.__version__} has no classification network {name!r}"
        f"{did_you_mean(name, available)}. Fix: name one of its classification networks: {', '.join(available)}"
    )


def check_network(network: str) -> None:
    """A :class:`NetworkError` in one line with the fix unless ``network`` leads to a network training can build:
    a registered name, a classification network of the installed torchvision (``torchvision:NAME``), or an
    ``nn.Module`` class found by importing ``package.module`` as training does. Builds nothing: the network's
    keyword arguments and its output are checked when it is built (:func:`build_network`)."""
    if network.startswith(TORCHVISION_PREFIX):
        problem = network_problem(network) or torchvision_problem(network)
        if problem:
            raise NetworkError(problem)
    elif network not in NETWORKS:
        network_class(network)


def _torchvision(network: str, kwargs: Mapping[str, Any], in_shape: tuple, num_classes: int) -> nn.Module:
    """torchvision's classification network NAME, randomly initialised (``weights=None``: nothing is downloaded).

    torchvision's networks read 3-channel images: a 1-channel one is repeated on 3 channels by a first module
    (:class:`RepeatChannels`, no parameters) rather than the network's first convolution being replaced (its
    attribute differs from one family to the next).
    """
    import torchvision

    name = network[len(TORCHVISION_PREFIX) :]
    channels = in_shape[0]
    if channels not in (1, 3):
        raise NetworkError(
            f"network {network!r}: torchvision's networks read 3-channel images (1-channel ones are repeated), "
            f"not {channels}; use a network of your own (package.module:Class) for {channels}-channel images"
        )
    if problem := torchvision_problem(network):
        raise NetworkError(problem)
    try:
        model = torchvision.models.get_model(name, weights=None, num_classes=num_classes, **dict(kwargs))
    except Exception as exc:
        raise NetworkError(
            f"network {network!r}: torchvision.models.get_model({name!r}, weights=None, num_classes={num_classes}"
            f"{''.join(f', {k}={v!r}' for k, v in kwargs.items())}) failed ({one_line(exc)}); fix network_kwargs:"
        ) from None
    if channels == 1:
        model = nn.Sequential(OrderedDict(repeat_channels=RepeatChannels(), network=model))
    return model


def _check_output(model: nn.Module, network: str, in_shape: tuple, num_classes: int) -> None:
    """A :class:`NetworkError` unless ``model`` maps a batch (2, C, H, W) to logits (2, K).

    Evaluation mode, no gradients, the random generators forked: the model's state and the initialisation of
    the networks built after it (the next seeds) are what they would have been without the check.
    """
    was_training = model.training
    x = torch.zeros(2, *in_shape)
    try:
        with torch.no_grad(), torch.random.fork_rng(devices=[]):
            model.eval()
            out = model(x)
    except Exception as exc:
        raise NetworkError(
            f"network {network!r}: a batch of shape {tuple(x.shape)} (N, C, H, W) fails in its forward pass "
            f"({one_line(exc)}); it must take images of this dataset's shape {tuple(in_shape)} "
            "(fix the network, its network_kwargs:, or the images' size)"
        ) from None
    finally:
        model.train(was_training)
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != (2, num_classes):
        got = f"a tensor of shape {tuple(out.shape)}" if isinstance(out, torch.Tensor) else f"a {type(out).__name__}"
        raise NetworkError(
            f"network {network!r}: a batch of shape {tuple(x.shape)} gives {got}; it must return logits of shape "
            f"(N, num_classes) = (2, {num_classes}) (fix its forward(), or its use of num_classes)"
        )


def build_network(
    network: str,
    kwargs: Mapping[str, Any] | Sequence[tuple[str, Any]] = (),
    in_shape: Sequence[int] = (3, 32, 32),
    num_classes: int = 10,
    init: str = "glorot",
) -> nn.Module:
    """A freshly initialised ``network`` for images ``in_shape`` (C, H, W) and ``num_classes`` classes; call
    under a seeded RNG.

    ``network``: a registered name (its :attr:`trustcal.registry.NetworkSpec.factory`), ``torchvision:NAME``
    or ``package.module:Class``, built as ``Class(in_shape=(C, H, W), num_classes=K, **kwargs)``. ``init``
    (``glorot`` or ``torch``, :data:`trustcal.training.models.INITS`) applies to the paper's networks; the
    others keep their own. The model is checked on a dummy batch: anything that does not build, or whose
    output is not (N, K), is a :class:`NetworkError` in one line naming ``network`` and the fix.
    """
    if init not in INITS:
        raise NetworkError(f"unknown init {init!r}; use one of {', '.join(INITS)}")
    kwargs = dict(kwargs)
    in_shape = tuple(int(s) for s in in_shape)
    if network.startswith(TORCHVISION_PREFIX):
        model = _torchvision(network, kwargs, in_shape, num_classes)
    else:
        cls = network_class(network)
        try:
            model = cls(in_shape=in_shape, num_classes=num_classes, **kwargs)
        except Exception as exc:
            call = ", ".join(
                [f"in_shape={in_shape}", f"num_classes={num_classes}", *(f"{k}={v!r}" for k, v in kwargs.items())]
            )
            raise NetworkError(
                f"network {network!r}: {cls.__name__}({call}) failed ({one_line(exc)}); its constructor must accept "
                "in_shape and num_classes as keywords, and network_kwargs: the rest"
            ) from None
        if not isinstance(model, nn.Module):
            raise NetworkError(
                f"network {network!r}: {cls.__name__}(…) gave a {type(model).__name__}, not an nn.Module"
            )
        spec = NETWORKS.get(network)
        if spec is not None and spec.paper and init == "glorot":
            glorot_init_(model)
    _check_output(model, network, in_shape, num_classes)
    return model
