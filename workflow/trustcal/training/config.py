"""How one seed is trained (:class:`TrainConfig`: a :class:`trustcal.registry.Recipe` and the rest of a run), made
from a setup (:func:`setup_config`) and completed from the data (:func:`complete_config`), with the fingerprint
that says which checkpoints it may resume from."""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
from typing import Any

import numpy as np
import torch

from trustcal import registry
from trustcal.data import tabular
from trustcal.errors import TrustcalError
from trustcal.training.engine import STACKED
from trustcal.training.networks import build_network, network_class

log = logging.getLogger(__name__)

ENGINE_VERSION = "stacked-1"
PLAIN_ENGINE_VERSION = "plain-1"
# the recipe fields in every fingerprint (the paper's runs vary them: batch_size and learning_rate settings)
FINGERPRINT_RECIPE_FIELDS = ("batch_size", "learning_rate")
# the recipe fields a setup varies beyond the paper's
RECIPE_FIELDS = tuple(f.name for f in dataclasses.fields(registry.Recipe) if f.name not in FINGERPRINT_RECIPE_FIELDS)
# the fields a setup (trustcal.registry.Setup) adds to the paper's configuration; a fingerprint names them only
# where they differ from the paper's, so the paper's checkpoints keep the fingerprint they were written with
SETUP_FIELDS = ("network", "network_kwargs", *RECIPE_FIELDS, "in_shape", "num_classes")
# what every fingerprint holds, in this order (the checkpoint's bytes hold it)
FINGERPRINT_FIELDS = ("dataset", "seed", *FINGERPRINT_RECIPE_FIELDS, "betas", "eps", "init", "seed_group", "data")


@dataclasses.dataclass(frozen=True)
class TrainConfig(registry.Recipe):
    """How one seed is trained; :func:`setup_config` makes one of a :class:`trustcal.registry.Setup`.

    Its recipe fields (keywords only) are those of :class:`trustcal.registry.Recipe`, which it extends with
    the rest of a run. ``dataset`` names the run (the setup: ``results/{dataset}/``); ``network`` "" is the
    registered dataset's default network. ``in_shape`` and ``num_classes`` None are read from the data by
    :func:`complete_config` (:func:`~trustcal.training.loop.train_seeds` does). ``betas`` and ``eps`` are
    Adam's (Keras' defaults).
    """

    dataset: str
    seed: int
    epochs: int
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-7  # Keras' Adam default
    init: str = "glorot"
    device: str = "auto"
    threads: int = 1
    deterministic: bool = True  # on a GPU: deterministic algorithms, no TF32 (configure_device)
    seed_group: tuple[int, ...] = ()  # the seeds trained together with this one, if any
    data: str = ""  # digest of the training and validation arrays (set by train_seeds)
    # what a setup adds besides its recipe (defaults: the paper's)
    network: str = ""
    network_kwargs: tuple[tuple[str, Any], ...] = ()
    in_shape: tuple[int, int, int] | None = None
    num_classes: int | None = None
    in_shape: tuple[int, int, int] | None = None
    num_classes: int | None = None

    def __post_init__(self) -> None:
        if not self.network and self.dataset in registry.DATASETS:
            object.__setattr__(self, "network", registry.DATASETS[self.dataset].network)
        object.__setattr__(self, "network_kwargs", tuple(sorted(dict(self.network_kwargs).items())))
        object.__setattr__(self, "augment", tuple(self.augment))
        if self.in_shape is not None:
            object.__setattr__(self, "in_shape", tuple(int(s) for s in self.in_shape))

    @property
    def stacked(self) -> bool:
        """Trained by the stacked multi-seed engine: the paper's recipe (Adam without weight decay, a constant
        rate, no augmentation or normalisation) and a network whose class has a stacked form."""
        return self.is_paper and not self.network_kwargs and network_class(self.network) in STACKED

    def fingerprint(self) -> dict:
        """What makes checkpoints of two runs interchangeable (not epochs, device, threads, deterministic).

        Seeds trained together agree with a seed trained alone only to float
        tolerance, so the group is part of it: resuming stays bit for bit. So
        is the data: checkpoints trained on other images (synthetic files
        replaced by the real archives, another validation split) are stale.

        The fields of a setup (:data:`SETUP_FIELDS`) follow, each only where it differs from the paper's
        (the paper's recipe; for the paper's datasets, their network, image shape and classes): the
        paper's runs keep the fingerprint of the code before setups, and their checkpoints resume. A
        schedule other than constant depends on the number of epochs (cosine reaches 0 at the last), so
        it adds ``schedule_epochs``: raising ``epochs`` then trains afresh.
        """
        d = {key: getattr(self, key) for key in FINGERPRINT_FIELDS}
        d["betas"] = list(d["betas"])
        d["seed_group"] = list(d["seed_group"])
        d["engine"] = ENGINE_VERSION if self.stacked else PLAIN_ENGINE_VERSION
        paper = registry.DATASETS[self.dataset] if self.dataset in registry.PAPER_DATASETS else None
        recipe = registry.RECIPES["paper"]
        if not (paper is not None and self.network == paper.network):
            d["network"] = self.network
        if self.network_kwargs:
            d["network_kwargs"] = dict(self.network_kwargs)
        for key in RECIPE_FIELDS:
            if getattr(self, key) != getattr(recipe, key):
                value = getattr(self, key)
                d[key] = list(value) if isinstance(value, tuple) else value
        if self.schedule != "constant":
            d["schedule_epochs"] = self.epochs
        if self.in_shape is not None and not (paper is not None and self.in_shape == paper.shape):
            d["in_shape"] = list(self.in_shape)
        if self.num_classes is not None and not (paper is not None and self.num_classes == paper.num_classes):
            d["num_classes"] = self.num_classes
        return d


def setup_config(
    setup: registry.Setup,
    seed: int,
    epochs: int,
    *,
    init: str = "glorot",
    device: str = "auto",
    threads: int = 1,
    deterministic: bool = True,
) -> TrainConfig:
    """The configuration of one seed of ``setup``: its network and network_kwargs, its recipe (batch size and
    learning rate included), the classes of its dataset where the registry knows them (the image shape and
    the rest are read from the data by :func:`complete_config`)."""
    r = setup.recipe
    return TrainConfig(
        dataset=setup.name,
        seed=int(seed),
        epochs=int(epochs),
        init=init,
        device=device,
        threads=threads,
        deterministic=deterministic,
        network=setup.network,
        network_kwargs=setup.network_kwargs,
        num_classes=setup.dataset.num_classes,
        **{f.name: getattr(r, f.name) for f in dataclasses.fields(registry.Recipe)},
    )


def complete_config(cfg: TrainConfig, data: dict[str, np.ndarray]) -> TrainConfig:
    """``cfg`` with its input shape and number of classes from the data where it does not give them (the
    registered dataset's classes first, else the largest label + 1), checked against the data. The input
    shape is (C, H, W) of images, (F,) of a user's table, which an image network or recipe cannot train
    (:func:`trustcal.data.tabular.training_problem`)."""
    x = data["x_train"]
    if x.ndim not in (2, 4):
        raise TrustcalError(
            f"{cfg.dataset}: training data of shape {x.shape}, neither images (N, C, H, W) nor a table (N, F); "
            "rerun rule 'prepare'",
            rerun="prepare",
        )
    where = f"{cfg.dataset}: the prepared x_train of shape {x.shape}"
    if x.ndim == 2 and (
        problem := tabular.training_problem(cfg.network, cfg.augment, cfg.normalise, cfg.dataset, where)
    ):
        raise TrustcalError(problem)
    shape = tuple(int(s) for s in x.shape[1:])
    if cfg.in_shape is not None and cfg.in_shape != shape:
        raise TrustcalError(f"{cfg.dataset}: in_shape {cfg.in_shape} given, but the training images are {shape}")
    labels = [data[k] for k in ("y_train", "y_val", "y_test") if k in data and len(data[k])]
    largest = max((int(y.max()) for y in labels), default=0)
    spec = registry.DATASETS.get(cfg.dataset)
    num_classes = cfg.num_classes or (spec.num_classes if spec is not None else None) or largest + 1
    if largest >= num_classes or min((int(y.min()) for y in labels), default=0) < 0:
        raise TrustcalError(
            f"{cfg.dataset}: labels run from {min(int(y.min()) for y in labels)} to {largest}, but the dataset has "
            f"{num_classes} classes (labels 0 … {num_classes - 1}); fix its classes: or its files, and rerun prepare"
        )
    if not cfg.network:
        raise TrustcalError(
            f"{cfg.dataset}: no network (not a registered dataset); name one, e.g. "
            f"setups: {{{cfg.dataset}: {{network: resnet20}}}}"
        )
    return dataclasses.replace(cfg, in_shape=shape, num_classes=int(num_classes))


def data_digest(data: dict[str, np.ndarray]) -> str:
    """A short digest of what training sees: the training and validation arrays, their shapes and types."""
    h = hashlib.blake2b(digest_size=12)
    for key in ("x_train", "y_train", "x_val", "y_val"):
        a = np.ascontiguousarray(data[key])
        h.update(f"{key}:{a.dtype.str}:{a.shape};".encode())
        if a.size:  # an empty array has no bytes (and memoryview cannot cast its zero-length shape)
            h.update(memoryview(a).cast("B"))
    return h.hexdigest()


def resolve_device(name: str) -> torch.device:
    """``auto``: the GPU the scheduler assigned (CUDA_VISIBLE_DEVICES) or the CPU."""
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        log.warning("device: auto found no CUDA GPU; training on the CPU")
        return torch.device("cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise TrustcalError(
            f"config 'device: {name}' but PyTorch sees no CUDA GPU (torch {torch.__version__}, "
            f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')}); "
            "use 'device: auto' or 'device: cpu', or run on a GPU node."
        )
    return torch.device(name)


def configure_device(device: torch.device, deterministic: bool) -> None:
    """How PyTorch computes on ``device`` for the rest of the process (nothing on the CPU, which is deterministic
    for a given thread count already).

    On a CUDA GPU, ``deterministic`` (the configuration's key, on by default): deterministic algorithms
    (``torch.use_deterministic_algorithms``, cuDNN's deterministic convolutions, not its benchmarked choice)
    and full float32 arithmetic (TF32 off for matrix products and convolutions), so a resumed run equals an
    uninterrupted one to the bit on the same GPU and the numbers are float32's, as on the CPU. An operation
    that has no deterministic implementation on CUDA warns (PyTorch's ``warn_only``) rather than stopping the
    run. Off: cuDNN benchmarks its algorithms per shape and picks the fastest, and TF32 (a 10-bit mantissa in
    the products, Ampere and later) is allowed: faster, and the last bits of every number, so a resumed
    run's, differ from an uninterrupted run's. cuBLAS needs ``CUBLAS_WORKSPACE_CONFIG`` before its first call
    to be deterministic; it is set here unless the environment sets it.
    """
    if device.type != "cuda":
        return
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(deterministic, warn_only=True)
    torch.backends.cudnn.deterministic = deterministic
    torch.backends.cudnn.benchmark = not deterministic
    torch.backends.cuda.matmul.allow_tf32 = not deterministic
    torch.backends.cudnn.allow_tf32 = not deterministic


def template(cfg: TrainConfig) -> torch.nn.Module:
    """``cfg``'s network (its init applied), for its complete configuration (:func:`complete_config`)."""
    return build_network(cfg.network, cfg.network_kwargs, cfg.in_shape, cfg.num_classes, cfg.init)


def logits_config(setup: str | registry.Setup | TrainConfig, data: dict[str, np.ndarray]) -> TrainConfig:
    """The (complete) configuration whose network reads a checkpoint of ``setup``: a :class:`TrainConfig`, a
    :class:`trustcal.registry.Setup`, or a registered dataset's name (its network, the paper's recipe)."""
    if isinstance(setup, str):
        setup = registry.resolve_setup(setup)
    cfg = setup if isinstance(setup, TrainConfig) else setup_config(setup, seed=0, epochs=0)
    return complete_config(cfg, data)
