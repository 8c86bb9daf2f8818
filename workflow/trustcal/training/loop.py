"""Training loop: the paper's protocol with a resumable checkpoint per epoch (the step itself: :mod:`.engine`).

The dataset sits in memory as one uint8 tensor; each epoch draws a
permutation from a dedicated generator and batches are index slices of it.
A checkpoint holds the model, the optimiser, the shuffling generator and the
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
import os
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch.torch_version import TorchVersion
from tqdm import tqdm

from trustcal.errors import TrustcalError
from trustcal.files import DigestMismatch, atomic_path, seal_zip, verify_zip, write_csv
from trustcal.training.engine import StackedTrainer, flushed_denormals, stacked_logits, stacked_model
from trustcal.training.history import HISTORY_COLUMNS
from trustcal.training.models import build_model

log = logging.getLogger(__name__)

CHECKPOINT_RE = re.compile(r"epoch(\d{3,})\.pt$")
# Each epoch's wall-clock seconds, beside the checkpoints: inside them, two identical runs would differ.
SECONDS_FILE = "seconds.csv"
ENGINE_VERSION = "stacked-1"


@dataclasses.dataclass(frozen=True)
class TrainConfig:
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

    def fingerprint(self) -> dict:
        """What makes checkpoints of two runs interchangeable (not epochs, device, threads).

        Seeds trained together agree with a seed trained alone only to float
        tolerance, so the group is part of it: resuming stays bit for bit. So
        is the data: checkpoints trained on other images (synthetic files
        replaced by the real archives, another validation split) are stale.
        """
        d = dataclasses.asdict(self)
        for key in ("epochs", "device", "threads"):
            d.pop(key)
        d["betas"] = list(d["betas"])
        d["seed_group"] = list(d["seed_group"])
        d["engine"] = ENGINE_VERSION
        return d


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
            changed = ", ".join(f"{k} {old.get(k)!r} → {new.get(k)!r}" for k in new if old.get(k) != new.get(k))
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


def train_seeds(
    cfgs: Sequence[TrainConfig], data: dict[str, np.ndarray], ckpt_dirs: Sequence[str | Path], progress: bool = False
) -> list[pd.DataFrame]:
    """Train several seeds of one configuration together (one stacked model), resuming if possible.

    Each seed keeps its own initialisation, shuffling generator, checkpoints
    and history, so its result equals training it alone (to float tolerance).
    """
    digest = data_digest(data)
    cfgs = [dataclasses.replace(c, data=digest) for c in cfgs]
    if len({dataclasses.replace(c, seed=0, seed_group=()) for c in cfgs}) != 1:
        raise ValueError("seeds trained together must share every setting but the seed")
    if len(cfgs) > 1:
        group = tuple(sorted(c.seed for c in cfgs))
        cfgs = [dataclasses.replace(c, seed_group=group) for c in cfgs]
    cfg0 = cfgs[0]
    ckpt_dirs = [Path(d) for d in ckpt_dirs]
    for d in ckpt_dirs:
        d.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(cfg0.threads)
    device = resolve_device(cfg0.device)

    start, states = _resume(cfgs, ckpt_dirs)
    shuffles = [torch.Generator().manual_seed(c.seed) for c in cfgs]
    if start == 0:
        models = []
        for c in cfgs:
            torch.manual_seed(c.seed)
            models.append(build_model(c.dataset, c.init).state_dict())
        histories: list[list[dict]] = [[] for _ in cfgs]
    else:
        models = [st["model"] for st in states]
        for gen, st in zip(shuffles, states):
            gen.set_state(st["shuffle_rng"])
        histories = []
        for st, d in zip(states, ckpt_dirs):
            seconds = _recorded_seconds(d)  # a checkpoint from before SECONDS_FILE has them in its history
            histories.append(
                [{**r, "seconds": r.get("seconds", seconds.get(r["epoch"]))} for r in st["history"][:start]]
            )
        for c, d in zip(cfgs, ckpt_dirs):
            log.info("seed %d: resuming from %s", c.seed, checkpoint_path(d, start))
    trainer = StackedTrainer(cfg0.dataset, models, device, cfg0.learning_rate, cfg0.betas, cfg0.eps)
    if start > 0:
        trainer.load_optimizer([st["optimizer"] for st in states])

    x_train = torch.from_numpy(data["x_train"]).to(device)
    y_train = torch.from_numpy(data["y_train"]).to(device)
    x_val = torch.from_numpy(data["x_val"])
    y_val = torch.from_numpy(data["y_val"]).to(device)

    bar = tqdm(
        total=cfg0.epochs,
        initial=start,
        unit="epoch",
        disable=not progress,
        file=sys.stderr,
        dynamic_ncols=True,
        desc=f"{cfg0.dataset} seed{'s' if len(cfgs) > 1 else ''} {','.join(str(c.seed) for c in cfgs)}",
    )
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
            save_checkpoint(
                checkpoint_path(d, epoch),
                dict(
                    epoch=epoch,
                    model=model_state,
                    optimizer=opt_state,
                    shuffle_rng=shuffles[s].get_state(),
                    # keys from one tuple: the pickle's memo then writes a resumed history as a fresh one
                    history=[{k: row[k] for k in HISTORY_COLUMNS if k != "seconds"} for row in hist],
                    fingerprint=c.fingerprint(),
                    torch_version=str(torch.__version__),  # a str: torch's TorchVersion is not plain data
                    val_logits=val_logits[s].detach().cpu().clone(),  # clone: not the whole (S, N, 10) storage
                ),
            )
            write_csv(pd.DataFrame(hist, columns=["epoch", "seconds"]), d / SECONDS_FILE)
            log.info(
                "epoch %3d/%d  seed %d  train loss %.4f acc %.4f  val loss %.4f acc %.4f  %.1f s",
                epoch,
                c.epochs,
                c.seed,
                tl,
                ta,
                vl,
                va,
                seconds,
            )
        bar.set_postfix(val_acc=" ".join(f"{a:.4f}" for a in val_acc.tolist()), refresh=False)
        bar.update()
    bar.close()
    return [pd.DataFrame(h, columns=list(HISTORY_COLUMNS)) for h in histories]


def compute_logits(ckpt_path: str | Path, dataset: str, data: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Validation and test logits of one checkpoint (the contract of ``logits/epochNNN.npz``).

    The forward pass is the training engine's, the same function that
    produced the validation loss in the history; the validation logits are
    those training saved in the checkpoint (computed for a checkpoint
    without them).
    """
    state = load_checkpoint(ckpt_path)
    try:
        model = stacked_model(dataset, [state["model"]], torch.device("cpu"))
    except (KeyError, RuntimeError, TypeError) as exc:
        raise TrustcalError(
            f"{ckpt_path}: not a {dataset} checkpoint of this workflow ({type(exc).__name__}: {exc}); "
            "rerun training (snakemake --cores 2 --forcerun train)."
        ) from None
    val_logits = state.get("val_logits")  # trained on these data: the fingerprint holds their digest
    if val_logits is None or len(val_logits) != len(data["x_val"]):
        val_logits = stacked_logits(model, torch.from_numpy(data["x_val"]))[0]
    return dict(
        val_logits=val_logits.numpy(),
        val_labels=data["y_val"].astype(np.int64),
        test_logits=stacked_logits(model, torch.from_numpy(data["x_test"]))[0].numpy(),
        test_labels=data["y_test"].astype(np.int64),
    )
