"""Training loop: a setup's network and recipe (the paper's protocol by default) with a resumable checkpoint per
epoch (the step itself: :mod:`.engine`).

Two engines run it. The paper's networks under the paper's recipe (Adam, a constant rate, no augmentation)
train in the stacked multi-seed engine (:class:`~.engine.StackedTrainer`: the seeds of a job as one stacked
model), chosen because their class has a stacked form (:data:`~.engine.STACKED`), at any image shape and
number of classes. Every other network or recipe trains in the plain loop (:class:`~.engine.PlainTrainer`:
``torch.optim``, a schedule stepped per batch, augmentation, ``model.train()`` for the steps and
``model.eval()`` for the validation and test logits), one seed after the other.

The dataset sits in memory as one uint8 tensor; each epoch draws a
permutation from a dedicated generator and batches are index slices of it.
A checkpoint holds the model, the optimiser (and the plain loop's schedule and
augmentation generator), the shuffling generator and the
history so far, so a resumed run continues bit for bit (same machine, same
thread count) where an uninterrupted one would be. Its file is bit for bit too
(saved through a file object, so no temporary name is recorded in it) and
carries its content digest (:func:`trustcal.files.seal_zip`): a checkpoint
that does not verify is never used, and training resumes from the last one
before it that does, rewriting the rest. It holds tensors and plain data only
and is read with ``torch.load(weights_only=True)``, PyTorch's restricted
unpickler: a file whose pickle names anything else (a crafted payload, which
an unkeyed digest does not stop) is refused the same way, never run.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import math
import os
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch.torch_version import TorchVersion
from tqdm import tqdm

from trustcal import registry
from trustcal.errors import TrustcalError
from trustcal.files import DigestMismatch, atomic_path, seal_zip, verify_zip, write_csv
from trustcal.training.engine import (
    STACKED,
    PlainTrainer,
    StackedTrainer,
    augment_batch,
    draw_augmentation,
    flushed_denormals,
    plain_logits,
    stacked_logits,
    stacked_model,
)
from trustcal.training.history import HISTORY_COLUMNS
from trustcal.training.networks import build_network, channel_statistics, network_class, standardised

log = logging.getLogger(__name__)

CHECKPOINT_RE = re.compile(r"epoch(\d{3,})\.pt$")
# Each epoch's wall-clock seconds, beside the checkpoints: inside them, two identical runs would differ.
SECONDS_FILE = "seconds.csv"
ENGINE_VERSION = "stacked-1"
PLAIN_ENGINE_VERSION = "plain-1"
# the fields a setup (trustcal.registry.Setup) adds to the paper's configuration; a fingerprint names them only
# where they differ from the paper's, so the paper's checkpoints keep the fingerprint they were written with
SETUP_FIELDS = (
    "network",
    "network_kwargs",
    "optimizer",
    "momentum",
    "nesterov",
    "weight_decay",
    "schedule",
    "augment",
    "normalise",
    "in_shape",
    "num_classes",
)
# the streams of a seed's random numbers besides its shuffling (seeded with the seed itself) and its
# initialisation (the global generator seeded with the seed): the plain loop's augmentation, and the global
# generator at each epoch's start (dropout and other random modules)
AUGMENT_STREAM, EPOCH_STREAM = 1, 2


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """How one seed is trained; :func:`setup_config` makes one of a :class:`trustcal.registry.Setup`.

    ``dataset`` names the run (the setup: ``results/{dataset}/``); ``network`` "" is the registered
    dataset's default network. ``in_shape`` and ``num_classes`` None are read from the data by
    :func:`complete_config` (:func:`train_seeds` does). The recipe's fields are those of
    :class:`trustcal.registry.Recipe`; ``betas`` and ``eps`` are Adam's (Keras' defaults).
    """

    dataset: str
    seed: int
    epochs: int
    batch_size: int = 32
    learning_rate: float = 1e-3
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-7  # Keras' Adam default
    init: str = "glorot"
    device: str = "auto"
    threads: int = 1
    seed_group: tuple[int, ...] = ()  # the seeds trained together with this one, if any
    data: str = ""  # digest of the training and validation arrays (set by train_seeds)
    # what a setup adds (defaults: the paper's)
    network: str = ""
    network_kwargs: tuple[tuple[str, Any], ...] = ()
    optimizer: str = "adam"
    momentum: float = 0.9
    nesterov: bool = False
    weight_decay: float = 0.0
    schedule: str = "constant"
    augment: tuple[str, ...] = ()
    normalise: bool = False
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
        return (
            self.optimizer == "adam"
            and self.schedule == "constant"
            and not self.augment
            and not self.normalise
            and self.weight_decay == 0
            and not self.network_kwargs
            and network_class(self.network) in STACKED
        )

    def fingerprint(self) -> dict:
        """What makes checkpoints of two runs interchangeable (not epochs, device, threads).

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
        d = dataclasses.asdict(self)
        for key in ("epochs", "device", "threads", *SETUP_FIELDS):
            d.pop(key)
        d["betas"] = list(d["betas"])
        d["seed_group"] = list(d["seed_group"])
        d["engine"] = ENGINE_VERSION if self.stacked else PLAIN_ENGINE_VERSION
        paper = registry.DATASETS[self.dataset] if self.dataset in registry.PAPER_DATASETS else None
        recipe = registry.RECIPES["paper"]
        if not (paper is not None and self.network == paper.network):
            d["network"] = self.network
        if self.network_kwargs:
            d["network_kwargs"] = dict(self.network_kwargs)
        for key in ("optimizer", "momentum", "nesterov", "weight_decay", "schedule", "augment", "normalise"):
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
    setup: registry.Setup, seed: int, epochs: int, *, init: str = "glorot", device: str = "auto", threads: int = 1
) -> TrainConfig:
    """The configuration of one seed of ``setup``: its network and network_kwargs, its recipe (batch size and
    learning rate included), the classes of its dataset where the registry knows them (the image shape and
    the rest are read from the data by :func:`complete_config`)."""
    r = setup.recipe
    return TrainConfig(
        dataset=setup.name,
        seed=int(seed),
        epochs=int(epochs),
        batch_size=r.batch_size,
        learning_rate=r.learning_rate,
        init=init,
        device=device,
        threads=threads,
        network=setup.network,
        network_kwargs=setup.network_kwargs,
        optimizer=r.optimizer,
        momentum=r.momentum,
        nesterov=r.nesterov,
        weight_decay=r.weight_decay,
        schedule=r.schedule,
        augment=tuple(r.augment),
        normalise=r.normalise,
        num_classes=setup.dataset.num_classes,
    )


def complete_config(cfg: TrainConfig, data: dict[str, np.ndarray]) -> TrainConfig:
    """``cfg`` with its image shape and number of classes from the data where it does not give them (the
    registered dataset's classes first, else the largest label + 1), checked against the data."""
    x = data["x_train"]
    if x.ndim != 4:
        raise TrustcalError(
            f"{cfg.dataset}: training images of shape {x.shape}, not (N, C, H, W); rerun the prepare stage "
            "(snakemake --cores 2 --forcerun prepare)"
        )
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


def checkpoint_path(ckpt_dir: str | Path, epoch: int) -> Path:
    return Path(ckpt_dir) / f"epoch{epoch:03d}.pt"


def save_checkpoint(path: str | Path, state: dict) -> None:
    """Write ``state`` to ``path`` atomically, sealed with its content digest.

    ``torch.save`` to a path records the file's name in the archive (a random temporary name
    here); saved through a file object, the archive's name is always ``archive``, so equal
    states give equal bytes.
    """
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            torch.save(state, fh)
        seal_zip(tmp)


# Checkpoints written by earlier versions hold torch.__version__ itself: a TorchVersion, a str subclass whose
# constructor only makes a string. torch.load(weights_only=True) refuses it by default; it is admitted by
# name, so those checkpoints are read (and resumed from) without running anything else.
_EARLIER_CHECKPOINT_GLOBALS = [TorchVersion]


class _Unreadable(Exception):
    """A checkpoint :func:`_read_checkpoint` cannot or will not read; the message follows "checkpoint"."""


def _first_line(exc: BaseException) -> str:
    """The cause in ``exc``'s message: torch.load's advice on loading unsafely left out."""
    text = str(exc)
    cause = re.search(r"WeightsUnpickler error: ([^\n]*)", text)
    line = cause.group(1) if cause else (text.splitlines() or [""])[0]
    return line.split(" Please use `torch.serialization", 1)[0].strip()


def _refusal(path: str | Path) -> str | None:
    """What ``torch.load(weights_only=True)`` would refuse in the checkpoint's pickle, from a scan of its
    opcodes (nothing is imported or called): "refused: it names …" or "unreadable (…)" when the pickle
    cannot be scanned, None when it names only what a checkpoint holds."""
    try:
        with torch.serialization.safe_globals(_EARLIER_CHECKPOINT_GLOBALS):
            unsafe = torch.serialization.get_unsafe_globals_in_checkpoint(str(path))
    except Exception as exc:  # not a torch.save archive, truncated, opcodes a checkpoint never holds
        return f"unreadable ({type(exc).__name__}: {_first_line(exc)})"
    if unsafe:
        return (
            f"refused: it names {', '.join(sorted(unsafe))}, which a checkpoint never holds "
            "(only tensors and plain data are read, never code)"
        )
    return None


def _read_checkpoint(path: str | Path, map_location="cpu") -> dict:
    """``torch.load(weights_only=True)`` of ``path``: tensors and plain data only, never code (and
    :data:`_EARLIER_CHECKPOINT_GLOBALS`). Raises :class:`_Unreadable` saying why it was not read."""
    try:
        with torch.serialization.safe_globals(_EARLIER_CHECKPOINT_GLOBALS):
            return torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # truncated zip, pickle errors, a global it refuses, …
        raise _Unreadable(_refusal(path) or f"unreadable ({type(exc).__name__}: {_first_line(exc)})") from None


def checkpoint_problem(path: str | Path) -> str | None:
    """Why the checkpoint at ``path`` cannot be trusted ("missing", "unreadable or truncated (…)",
    "altered since it was written (…)", "unreadable (…)", "refused: it names …"), or None when its
    bytes match its content digest and its pickle names only what a checkpoint holds (tensors and
    plain data; checked by a scan, nothing run). A checkpoint written before digests
    (:func:`trustcal.files.verify_zip` warns once) cannot be verified: it passes if it is read."""
    try:
        sealed = verify_zip(path)
    except FileNotFoundError:
        return "missing"
    except DigestMismatch as exc:
        return str(exc)
    if sealed:
        return _refusal(path)  # the digest is unkeyed: a substituted file can carry a matching one
    try:
        _read_checkpoint(path)
    except _Unreadable as exc:
        return str(exc)
    return None


RETRAIN = (
    "rerun training (snakemake --cores 2 --forcerun train), which resumes from the last checkpoint "
    "before it that verifies and rewrites this one"
)


def load_checkpoint(path: str | Path, map_location="cpu") -> dict:
    """Load a checkpoint written by :func:`train_seeds` once its content digest verifies, with a
    clear error when it is missing, damaged or names anything but tensors and plain data (never run)."""
    path = Path(path)
    try:
        verify_zip(path)
    except FileNotFoundError:
        raise TrustcalError(f"{path}: checkpoint not found; {RETRAIN}.") from None
    except DigestMismatch as exc:
        raise TrustcalError(f"{path}: checkpoint {exc}; {RETRAIN}.") from None
    try:
        return _read_checkpoint(path, map_location)
    except _Unreadable as exc:  # a file without a digest (truncated zip, pickle errors), or one naming code
        raise TrustcalError(f"{path}: checkpoint {exc}; {RETRAIN}.") from None


def _recorded_seconds(ckpt_dir: Path) -> dict[int, float]:
    """Epoch → wall-clock seconds from :data:`SECONDS_FILE` (empty when it is missing or unreadable: timing only)."""
    try:
        df = pd.read_csv(ckpt_dir / SECONDS_FILE)
        return dict(zip(df["epoch"].astype(int), df["seconds"].astype(float)))
    except (OSError, ValueError, KeyError, pd.errors.ParserError):
        return {}


def _existing_epochs(ckpt_dir: Path) -> list[int]:
    return sorted(int(m.group(1)) for p in ckpt_dir.glob("epoch*.pt") if (m := CHECKPOINT_RE.search(p.name)))


def find_resume_point(ckpt_dir: Path, cfg: TrainConfig) -> dict | None:
    """The state to resume ``cfg`` from, or None to start afresh: the checkpoint of the last epoch
    ``e`` (at most ``cfg.epochs``) such that the checkpoints of epochs 1 … e are all there and verify.

    A missing or damaged checkpoint is not used, and neither is any later one: training resumes
    before it and rewrites it and every later one (equal bytes when they were sound, the run being
    deterministic); nothing is deleted. Checkpoints written under another training configuration
    are stale: they are removed (with a log line) so they can never be mixed with new ones.
    """
    epochs = _existing_epochs(ckpt_dir)
    good = 0
    for epoch in range(1, min(max(epochs, default=0), cfg.epochs) + 1):
        problem = checkpoint_problem(checkpoint_path(ckpt_dir, epoch))
        if problem is not None:
            log.warning(
                "%s: checkpoint %s; %s, rewriting it and every later one",
                checkpoint_path(ckpt_dir, epoch),
                problem,
                f"training resumes from epoch {good}" if good else "training starts afresh",
            )
            break
        good = epoch
    if good > 0:
        state = load_checkpoint(checkpoint_path(ckpt_dir, good))  # checked above
        if state.get("fingerprint") != cfg.fingerprint():
            old, new = state.get("fingerprint") or {}, cfg.fingerprint()
            keys = [*new, *(k for k in old if k not in new)]  # a setup's keys come and go
            changed = ", ".join(f"{k} {old.get(k)!r} → {new.get(k)!r}" for k in keys if old.get(k) != new.get(k))
            log.warning(
                "checkpoints in %s were trained under another configuration (%s): removing them and training afresh",
                ckpt_dir,
                changed,
            )
            for e in epochs:
                checkpoint_path(ckpt_dir, e).unlink(missing_ok=True)
            return None
        return state
    return None


def _resume(cfgs: list[TrainConfig], ckpt_dirs: list[Path]) -> tuple[int, list[dict | None]]:
    """The epoch every seed of the group can resume from, and each seed's state there."""
    found = [find_resume_point(d, c) for c, d in zip(cfgs, ckpt_dirs)]
    if any(st is None for st in found):
        return 0, [None] * len(cfgs)
    start = min(min(st["epoch"] for st in found), cfgs[0].epochs)
    states = [
        st if st["epoch"] == start else load_checkpoint(checkpoint_path(d, start)) for st, d in zip(found, ckpt_dirs)
    ]
    return start, states


def epoch_order(x: torch.Tensor, y: torch.Tensor, shuffles: Sequence[torch.Generator]):
    """Every seed's copy of the data in its own random order for this epoch: (S, N, …)."""
    perms = torch.stack([torch.randperm(len(x), generator=g) for g in shuffles]).to(x.device)
    return x[perms], y[perms]


def train_epoch(
    trainer: StackedTrainer,
    x: torch.Tensor,
    y: torch.Tensor,
    shuffles: Sequence[torch.Generator],
    batch_size: int,
    max_steps: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One epoch (or its first ``max_steps`` steps) for every seed: (mean batch loss, accuracy) per seed.

    Each seed's generator draws its permutation; the uint8 data are put in
    that order once per epoch, so a batch is a slice, not a gather. Nothing
    leaves the device until the epoch ends.
    """
    n, s = len(x), len(shuffles)
    xs, ys = epoch_order(x, y, shuffles)
    loss_sum = torch.zeros(s, device=x.device)
    correct = torch.zeros(s, dtype=torch.long, device=x.device)
    steps = seen = 0
    for i in range(0, n, batch_size):
        if max_steps is not None and steps == max_steps:
            break
        yb = ys[:, i : i + batch_size]
        loss, logits = trainer.step(xs[:, i : i + batch_size].float().div_(255), yb)
        loss_sum += loss
        correct += (logits.argmax(2) == yb).sum(1)
        steps += 1
        seen += yb.shape[1]
    return loss_sum / steps, correct.float() / seen


def _resumed_history(state: dict, ckpt_dir: Path, start: int) -> list[dict]:
    """The history of epochs 1 … ``start`` in a checkpoint, with each epoch's seconds from :data:`SECONDS_FILE`."""
    seconds = _recorded_seconds(ckpt_dir)  # a checkpoint from before SECONDS_FILE has them in its history
    return [{**r, "seconds": r.get("seconds", seconds.get(r["epoch"]))} for r in state["history"][:start]]


def canonical(obj):
    """``obj`` rebuilt with fresh dicts, lists and tuples and interned strings (tensors as they are).

    Why: pickle writes an object it has met before as a reference to it (its memo), by identity. The
    optimiser's state read back from a checkpoint has other string objects than a fresh one's (torch's
    own names, which the fingerprint's keys share), so a resumed run's checkpoint would hold the same
    data in other bytes. Rebuilt this way, equal contents pickle to equal bytes however they were made.
    """
    if isinstance(obj, str):
        return sys.intern(str(obj))
    if isinstance(obj, dict):
        return {canonical(k): canonical(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [canonical(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(canonical(v) for v in obj)
    return obj


def _save_epoch(
    ckpt_dir: Path, cfg: TrainConfig, head: dict, hist: list[dict], val_logits: torch.Tensor, rebuild: bool = False
) -> None:
    """Epoch ``head["epoch"]``'s checkpoint: ``head`` (epoch, model, optimiser, generators), then the history,
    the fingerprint, the PyTorch version and the validation logits; and the seconds file beside it.

    ``rebuild``: through :func:`canonical` (the plain loop's, whose ``torch.optim`` state holds strings; the
    stacked engine's checkpoints are written as before, byte for byte).
    """
    state = dict(
        **head,
        # keys from one tuple: the pickle's memo then writes a resumed history as a fresh one
        history=[{k: row[k] for k in HISTORY_COLUMNS if k != "seconds"} for row in hist],
        fingerprint=cfg.fingerprint(),
        torch_version=str(torch.__version__),  # a str: torch's TorchVersion is not plain data
        val_logits=val_logits,
    )
    save_checkpoint(checkpoint_path(ckpt_dir, head["epoch"]), canonical(state) if rebuild else state)
    write_csv(pd.DataFrame(hist, columns=["epoch", "seconds"]), ckpt_dir / SECONDS_FILE)


def _log_epoch(epoch: int, cfg: TrainConfig, tl: float, ta: float, vl: float, va: float, seconds: float) -> None:
    log.info(
        "epoch %3d/%d  seed %d  train loss %.4f acc %.4f  val loss %.4f acc %.4f  %.1f s",
        epoch,
        cfg.epochs,
        cfg.seed,
        tl,
        ta,
        vl,
        va,
        seconds,
    )


def _progress_bar(cfgs: Sequence[TrainConfig], start: int, progress: bool) -> tqdm:
    cfg0 = cfgs[0]
    return tqdm(
        total=cfg0.epochs,
        initial=start,
        unit="epoch",
        disable=not progress,
        file=sys.stderr,
        dynamic_ncols=True,
        desc=f"{cfg0.dataset} seed{'s' if len(cfgs) > 1 else ''} {','.join(str(c.seed) for c in cfgs)}",
    )


def _template(cfg: TrainConfig) -> torch.nn.Module:
    """``cfg``'s network (its init applied), for its complete configuration (:func:`complete_config`)."""
    return build_network(cfg.network, cfg.network_kwargs, cfg.in_shape, cfg.num_classes, cfg.init)


def plain_model(cfg: TrainConfig, x_train: np.ndarray | None = None) -> torch.nn.Module:
    """The plain loop's model of ``cfg``: its network, behind :class:`~.networks.Standardise` when the recipe
    normalises (the statistics of ``x_train``; placeholders without it, for a checkpoint to fill)."""
    model = _template(cfg)
    if cfg.normalise:
        stats = channel_statistics(x_train) if x_train is not None else (None, None)
        model = standardised(model, cfg.in_shape[0], *stats)
    return model


def memory_format(cfg: TrainConfig) -> torch.memory_format:
    """Channels-last for the registered networks (all run in it; faster), the network's own layout for a
    user's or torchvision's (a ``view`` of a channels-last activation can fail in code not written for it)."""
    return torch.channels_last if cfg.network in registry.NETWORKS else torch.contiguous_format


def stream_seed(seed: int, stream: int, *more: int) -> int:
    """A 63-bit seed for one stream of ``seed``'s random numbers (:data:`AUGMENT_STREAM`, :data:`EPOCH_STREAM`),
    independent of the seed's own (numpy's SeedSequence mixes them)."""
    state = np.random.SeedSequence([seed, stream, *more]).generate_state(2, np.uint32)
    return (int(state[0]) << 31 | int(state[1]) >> 1) & (2**63 - 1)


def train_plain_epoch(
    trainer: PlainTrainer,
    x: torch.Tensor,
    y: torch.Tensor,
    shuffle: torch.Generator,
    augment_rng: torch.Generator,
    batch_size: int,
    augment: Sequence[str] = (),
    max_steps: int | None = None,
) -> tuple[float, float]:
    """One epoch (or its first ``max_steps`` steps) of the plain loop: (mean batch loss, accuracy).

    The seed's shuffling generator draws the epoch's order (as :func:`epoch_order` does for the stacked
    engine), its augmentation generator each sample's crop and flip (:func:`~.engine.draw_augmentation`).
    Loss and accuracy are those of the training steps (on augmented images, in training mode), as Keras
    reports them.
    """
    n = len(x)
    perm = torch.randperm(n, generator=shuffle).to(x.device)
    xs, ys = x[perm], y[perm]
    draws = draw_augmentation(n, x.shape[2:], augment, augment_rng)
    loss_sum = torch.zeros((), device=x.device)
    correct = torch.zeros((), dtype=torch.long, device=x.device)
    steps = seen = 0
    for i in range(0, n, batch_size):
        if max_steps is not None and steps == max_steps:
            break
        xb, yb = xs[i : i + batch_size].float().div_(255), ys[i : i + batch_size]
        if draws:
            xb = augment_batch(xb, {k: v[i : i + batch_size] for k, v in draws.items()})
        loss, logits = trainer.step(xb, yb)
        loss_sum += loss
        correct += (logits.argmax(1) == yb).sum()
        steps += 1
        seen += len(yb)
    return (loss_sum / steps).item(), (correct.float() / seen).item()


def plain_trainer(cfg: TrainConfig, model: torch.nn.Module, device: torch.device, n_train: int) -> PlainTrainer:
    """The plain loop's trainer of ``cfg`` for ``n_train`` training images (its schedule spans every epoch)."""
    return PlainTrainer(
        model,
        device,
        optimizer=cfg.optimizer,
        lr=cfg.learning_rate,
        betas=cfg.betas,
        eps=cfg.eps,
        momentum=cfg.momentum,
        nesterov=cfg.nesterov,
        weight_decay=cfg.weight_decay,
        schedule=cfg.schedule,
        total_steps=cfg.epochs * math.ceil(n_train / cfg.batch_size),
        memory_format=memory_format(cfg),
    )


def _train_plain(
    cfg: TrainConfig, data: dict[str, np.ndarray], ckpt_dir: Path, device: torch.device, progress: bool
) -> pd.DataFrame:
    """One seed in the plain loop (:class:`~.engine.PlainTrainer`), resuming if possible; its history.

    The global generator is seeded at every epoch's start (:data:`EPOCH_STREAM`), so random modules
    (dropout) draw the same numbers in a resumed run as in an uninterrupted one.
    """
    if cfg.optimizer == "sgd" and cfg.nesterov and cfg.momentum == 0:
        raise TrustcalError(f"{cfg.dataset}: recipe nesterov: true needs momentum > 0 (it is 0)")
    start, (state,) = _resume([cfg], [ckpt_dir])
    torch.manual_seed(cfg.seed)
    model = plain_model(cfg, data["x_train"])
    trainer = plain_trainer(cfg, model, device, len(data["x_train"]))
    shuffle = torch.Generator().manual_seed(cfg.seed)
    augment_rng = torch.Generator().manual_seed(stream_seed(cfg.seed, AUGMENT_STREAM))
    hist: list[dict] = []
    if start > 0:
        trainer.load(state["model"], state["optimizer"], state["scheduler"])
        shuffle.set_state(state["shuffle_rng"])
        augment_rng.set_state(state["augment_rng"])
        hist = _resumed_history(state, ckpt_dir, start)
        log.info("seed %d: resuming from %s", cfg.seed, checkpoint_path(ckpt_dir, start))

    x_train = torch.from_numpy(data["x_train"]).to(device)
    y_train = torch.from_numpy(data["y_train"]).to(device)
    x_val = torch.from_numpy(data["x_val"])
    y_val = torch.from_numpy(data["y_val"]).to(device)

    bar = _progress_bar([cfg], start, progress)
    for epoch in range(start + 1, cfg.epochs + 1):
        tic = time.perf_counter()
        torch.manual_seed(stream_seed(cfg.seed, EPOCH_STREAM, epoch))
        with flushed_denormals():
            tl, ta = train_plain_epoch(trainer, x_train, y_train, shuffle, augment_rng, cfg.batch_size, cfg.augment)
        val_logits = trainer.logits(x_val)
        vl = F.cross_entropy(val_logits, y_val).item()
        va = (val_logits.argmax(1) == y_val).float().mean().item()
        seconds = time.perf_counter() - tic
        if not np.isfinite([tl, vl]).all():
            raise TrustcalError(f"{cfg.dataset} seed {cfg.seed}: loss became non-finite at epoch {epoch}")
        hist.append(dict(epoch=epoch, train_loss=tl, train_accuracy=ta, val_loss=vl, val_accuracy=va, seconds=seconds))
        model_state, opt_state, schedule_state = trainer.checkpoint()
        head = dict(
            epoch=epoch,
            model=model_state,
            optimizer=opt_state,
            scheduler=schedule_state,
            shuffle_rng=shuffle.get_state(),
            augment_rng=augment_rng.get_state(),
        )
        _save_epoch(ckpt_dir, cfg, head, hist, val_logits.detach().cpu().clone(), rebuild=True)
        _log_epoch(epoch, cfg, tl, ta, vl, va, seconds)
        bar.set_postfix(val_acc=f"{va:.4f}", refresh=False)
        bar.update()
    bar.close()
    return pd.DataFrame(hist, columns=list(HISTORY_COLUMNS))


def train_seeds(
    cfgs: Sequence[TrainConfig], data: dict[str, np.ndarray], ckpt_dirs: Sequence[str | Path], progress: bool = False
) -> list[pd.DataFrame]:
    """Train several seeds of one configuration, resuming if possible; each seed's history.

    In the stacked engine (:attr:`TrainConfig.stacked`) the seeds train together as one stacked model:
    each keeps its own initialisation, shuffling generator, checkpoints and history, so its result equals
    training it alone (to float tolerance). In the plain loop they train one after the other, each exactly
    as it would alone.
    """
    digest = data_digest(data)
    cfgs = [complete_config(dataclasses.replace(c, data=digest), data) for c in cfgs]
    common = dataclasses.replace(cfgs[0], seed=0, seed_group=())
    if any(dataclasses.replace(c, seed=0, seed_group=()) != common for c in cfgs):
        raise ValueError("seeds trained together must share every setting but the seed")
    stacked = cfgs[0].stacked
    if len(cfgs) > 1 and stacked:
        group = tuple(sorted(c.seed for c in cfgs))
        cfgs = [dataclasses.replace(c, seed_group=group) for c in cfgs]
    cfg0 = cfgs[0]
    ckpt_dirs = [Path(d) for d in ckpt_dirs]
    for d in ckpt_dirs:
        d.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(cfg0.threads)
    device = resolve_device(cfg0.device)
    if not stacked:
        return [_train_plain(c, data, d, device, progress) for c, d in zip(cfgs, ckpt_dirs)]

    start, states = _resume(cfgs, ckpt_dirs)
    shuffles = [torch.Generator().manual_seed(c.seed) for c in cfgs]
    if start == 0:
        models = []
        for c in cfgs:
            torch.manual_seed(c.seed)
            models.append(_template(c).state_dict())
        histories: list[list[dict]] = [[] for _ in cfgs]
    else:
        models = [st["model"] for st in states]
        for gen, st in zip(shuffles, states):
            gen.set_state(st["shuffle_rng"])
        histories = [_resumed_history(st, d, start) for st, d in zip(states, ckpt_dirs)]
        for c, d in zip(cfgs, ckpt_dirs):
            log.info("seed %d: resuming from %s", c.seed, checkpoint_path(d, start))
    trainer = StackedTrainer(_template(cfg0), models, device, cfg0.learning_rate, cfg0.betas, cfg0.eps)
    if start > 0:
        trainer.load_optimizer([st["optimizer"] for st in states])

    x_train = torch.from_numpy(data["x_train"]).to(device)
    y_train = torch.from_numpy(data["y_train"]).to(device)
    x_val = torch.from_numpy(data["x_val"])
    y_val = torch.from_numpy(data["y_val"]).to(device)

    bar = _progress_bar(cfgs, start, progress)
    for epoch in range(start + 1, cfg0.epochs + 1):
        tic = time.perf_counter()
        with flushed_denormals():
            mean_loss, accuracy = train_epoch(trainer, x_train, y_train, shuffles, cfg0.batch_size)
        val_logits = trainer.logits(x_val)
        val_loss = F.cross_entropy(val_logits.transpose(1, 2), y_val.expand(len(cfgs), -1), reduction="none").mean(1)
        val_acc = (val_logits.argmax(2) == y_val).float().mean(1)
        seconds = time.perf_counter() - tic
        stats = zip(mean_loss.tolist(), accuracy.tolist(), val_loss.tolist(), val_acc.tolist())
        for s, (c, d, hist, (tl, ta, vl, va)) in enumerate(zip(cfgs, ckpt_dirs, histories, stats)):
            if not np.isfinite([tl, vl]).all():
                raise TrustcalError(f"{c.dataset} seed {c.seed}: loss became non-finite at epoch {epoch}")
            hist.append(
                dict(epoch=epoch, train_loss=tl, train_accuracy=ta, val_loss=vl, val_accuracy=va, seconds=seconds)
            )
            model_state, opt_state = trainer.seed_checkpoint(s)
            head = dict(epoch=epoch, model=model_state, optimizer=opt_state, shuffle_rng=shuffles[s].get_state())
            # clone: not the whole (S, N, classes) storage
            _save_epoch(d, c, head, hist, val_logits[s].detach().cpu().clone())
            _log_epoch(epoch, c, tl, ta, vl, va, seconds)
        bar.set_postfix(val_acc=" ".join(f"{a:.4f}" for a in val_acc.tolist()), refresh=False)
        bar.update()
    bar.close()
    return [pd.DataFrame(h, columns=list(HISTORY_COLUMNS)) for h in histories]


def logits_config(setup: str | registry.Setup | TrainConfig, data: dict[str, np.ndarray]) -> TrainConfig:
    """The (complete) configuration whose network reads a checkpoint of ``setup``: a :class:`TrainConfig`, a
    :class:`trustcal.registry.Setup`, or a registered dataset's name (its network, the paper's recipe)."""
    if isinstance(setup, str):
        setup = registry.resolve_setup(setup)
    cfg = setup if isinstance(setup, TrainConfig) else setup_config(setup, seed=0, epochs=0)
    return complete_config(cfg, data)


def compute_logits(
    ckpt_path: str | Path, setup: str | registry.Setup | TrainConfig, data: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """Validation and test logits of one checkpoint (the contract of ``logits/epochNNN.npz``).

    ``setup``: the run's :class:`trustcal.registry.Setup` (or its :class:`TrainConfig`; a registered
    dataset's name for its default network and the paper's recipe). The forward pass is the training
    engine's, the same function that produced the validation loss in the history (the plain loop's in
    evaluation mode); the validation logits are those training saved in the checkpoint (computed for a
    checkpoint without them).
    """
    cfg = logits_config(setup, data)
    state = load_checkpoint(ckpt_path)
    try:
        if cfg.stacked:
            model = stacked_model(_template(cfg), [state["model"]], torch.device("cpu"))
            forward = lambda x: stacked_logits(model, x)[0]  # noqa: E731
        else:
            network = plain_model(cfg)
            network.load_state_dict(state["model"])
            network = network.to(memory_format=memory_format(cfg))
            forward = lambda x: plain_logits(network, x, memory_format=memory_format(cfg))  # noqa: E731
    except (KeyError, RuntimeError, TypeError) as exc:
        raise TrustcalError(
            f"{ckpt_path}: not a {cfg.dataset} checkpoint of this workflow ({type(exc).__name__}: "
            f"{' '.join(str(exc).split())[:300]}); rerun training (snakemake --cores 2 --forcerun train)."
        ) from None
    val_logits = state.get("val_logits")  # trained on these data: the fingerprint holds their digest
    if val_logits is None or len(val_logits) != len(data["x_val"]):
        val_logits = forward(torch.from_numpy(data["x_val"]))
    return dict(
        val_logits=val_logits.numpy(),
        val_labels=data["y_val"].astype(np.int64),
        test_logits=forward(torch.from_numpy(data["x_test"])).numpy(),
        test_labels=data["y_test"].astype(np.int64),
    )
