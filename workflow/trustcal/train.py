"""Training engine: the paper's protocol with a resumable checkpoint per epoch.

The dataset sits in memory as one uint8 tensor; each epoch draws a
permutation from a dedicated generator and batches are index slices of it.
A checkpoint holds the model, the optimiser, the shuffling generator and the
history so far, so a resumed run continues bit for bit (same machine, same
thread count) where an uninterrupted one would be.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from .io import TrustcalError, atomic_path
from .models import build_model

log = logging.getLogger(__name__)

HISTORY_COLUMNS = ("epoch", "train_loss", "train_accuracy", "val_loss", "val_accuracy", "seconds")
CHECKPOINT_RE = re.compile(r"epoch(\d{3,})\.pt$")


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

    def fingerprint(self) -> dict:
        """What makes checkpoints of two runs interchangeable (not epochs, device, threads)."""
        d = dataclasses.asdict(self)
        for key in ("epochs", "device", "threads"):
            d.pop(key)
        d["betas"] = list(d["betas"])
        return d


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
            "CUDA_VISIBLE_DEVICES=%s); use 'device: auto' or 'device: cpu', or run on a GPU node."
            % (__import__("os").environ.get("CUDA_VISIBLE_DEVICES", "unset"))
        )
    return torch.device(name)


def checkpoint_path(ckpt_dir: str | Path, epoch: int) -> Path:
    return Path(ckpt_dir) / f"epoch{epoch:03d}.pt"


def load_checkpoint(path: str | Path, map_location="cpu") -> dict:
    """Load a checkpoint written by :func:`train`, with a clear error when it is damaged."""
    path = Path(path)
    try:
        return torch.load(path, map_location=map_location, weights_only=False)
    except FileNotFoundError:
        raise TrustcalError(
            f"{path}: checkpoint not found; rerun training (snakemake --cores 2 --forcerun train)."
        ) from None
    except Exception as exc:  # truncated zip, pickle errors, …
        raise TrustcalError(
            f"{path}: checkpoint is truncated or corrupt ({type(exc).__name__}: {exc}); delete it "
            "and rerun training (snakemake --cores 2 --forcerun train), which resumes from the "
            "last good epoch."
        ) from None


def _existing_epochs(ckpt_dir: Path) -> list[int]:
    return sorted(int(m.group(1)) for p in ckpt_dir.glob("epoch*.pt") if (m := CHECKPOINT_RE.search(p.name)))


def find_resume_point(ckpt_dir: Path, cfg: TrainConfig) -> dict | None:
    """The latest usable checkpoint for ``cfg``, or None to start afresh.

    Checkpoints written under another training configuration are stale: they
    are removed (with a log line) so they can never be mixed with new ones.
    """
    epochs = _existing_epochs(ckpt_dir)
    for epoch in reversed(epochs):
        path = checkpoint_path(ckpt_dir, epoch)
        try:
            state = load_checkpoint(path)
        except TrustcalError as exc:
            log.warning("%s; trying the previous epoch", exc)
            path.unlink()
            continue
        if state.get("fingerprint") != cfg.fingerprint():
            log.warning(
                "checkpoints in %s were trained with %s, not %s: removing them and training afresh",
                ckpt_dir, state.get("fingerprint"), cfg.fingerprint(),
            )
            for e in epochs:
                checkpoint_path(ckpt_dir, e).unlink(missing_ok=True)
            return None
        return state
    return None


@torch.no_grad()
def predict_logits(model: torch.nn.Module, x: torch.Tensor, batch_size: int = 1000) -> torch.Tensor:
    """Logits of uint8 images ``x`` (scaled by 1/255 as in training), float32 on the CPU."""
    model.eval()
    device = next(model.parameters()).device
    out = [model(x[i : i + batch_size].to(device).float().div_(255)) for i in range(0, len(x), batch_size)]
    return torch.cat(out).float().cpu()


def _evaluate(model, x, y) -> tuple[float, float]:
    logits = predict_logits(model, x)
    return F.cross_entropy(logits, y).item(), (logits.argmax(1) == y).float().mean().item()


def train(cfg: TrainConfig, data: dict[str, np.ndarray], ckpt_dir: str | Path) -> pd.DataFrame:
    """Train to ``cfg.epochs``, resuming from the last checkpoint in ``ckpt_dir``.

    Returns the per-epoch history (SPEC §1): mean training loss/accuracy over
    the epoch's batches, validation loss/accuracy after the epoch, seconds.
    """
    ckpt_dir = Path(ckpt_dir)
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(cfg.threads)
    device = resolve_device(cfg.device)

    torch.manual_seed(cfg.seed)
    model = build_model(cfg.dataset, cfg.init).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.learning_rate, betas=cfg.betas, eps=cfg.eps)
    shuffle = torch.Generator().manual_seed(cfg.seed)
    history: list[dict] = []

    state = find_resume_point(ckpt_dir, cfg)
    if state is not None:
        start = min(state["epoch"], cfg.epochs)
        if start < state["epoch"]:
            log.info("checkpoint epoch %d already covers the %d requested epochs", state["epoch"], cfg.epochs)
            state = load_checkpoint(checkpoint_path(ckpt_dir, start))
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        shuffle.set_state(state["shuffle_rng"])
        history = state["history"][:start]
        log.info("resuming from %s (epoch %d)", checkpoint_path(ckpt_dir, start), start)
    else:
        start = 0

    x_train = torch.from_numpy(data["x_train"]).to(device)
    y_train = torch.from_numpy(data["y_train"]).to(device)
    x_val = torch.from_numpy(data["x_val"])
    y_val = torch.from_numpy(data["y_val"])
    n = len(x_train)

    for epoch in range(start + 1, cfg.epochs + 1):
        tic = time.perf_counter()
        model.train()
        perm = torch.randperm(n, generator=shuffle).to(device)
        loss_sum = torch.zeros((), device=device)
        correct = torch.zeros((), dtype=torch.long, device=device)
        steps = 0
        for i in range(0, n, cfg.batch_size):
            idx = perm[i : i + cfg.batch_size]
            xb = x_train[idx].float().div_(255)
            yb = y_train[idx]
            logits = model(xb)
            loss = F.cross_entropy(logits, yb)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            loss_sum += loss.detach()
            correct += (logits.detach().argmax(1) == yb).sum()
            steps += 1
        train_loss = loss_sum.item() / steps
        train_acc = correct.item() / n
        val_loss, val_acc = _evaluate(model, x_val, y_val)
        row = dict(
            epoch=epoch, train_loss=train_loss, train_accuracy=train_acc,
            val_loss=val_loss, val_accuracy=val_acc, seconds=time.perf_counter() - tic,
        )
        history.append(row)
        if not all(np.isfinite([train_loss, val_loss])):
            raise TrustcalError(f"{cfg.dataset} seed {cfg.seed}: loss became non-finite at epoch {epoch}")
        with atomic_path(checkpoint_path(ckpt_dir, epoch)) as tmp:
            torch.save(
                dict(
                    epoch=epoch, model=model.state_dict(), optimizer=optimizer.state_dict(),
                    shuffle_rng=shuffle.get_state(), history=list(history),
                    fingerprint=cfg.fingerprint(), torch_version=torch.__version__,
                ),
                tmp,
            )
        log.info(
            "epoch %3d/%d  train loss %.4f acc %.4f  val loss %.4f acc %.4f  %.1f s",
            epoch, cfg.epochs, train_loss, train_acc, val_loss, val_acc, row["seconds"],
        )
    return pd.DataFrame(history, columns=list(HISTORY_COLUMNS))


def model_from_checkpoint(path: str | Path, dataset: str, device: str = "cpu") -> torch.nn.Module:
    state = load_checkpoint(path)
    model = build_model(dataset)
    try:
        model.load_state_dict(state["model"])
    except (KeyError, RuntimeError) as exc:
        raise TrustcalError(
            f"{path}: not a {dataset} checkpoint of this workflow ({exc}); rerun training "
            "(snakemake --cores 2 --forcerun train)."
        ) from None
    return model.to(device)


def compute_logits(ckpt_path: str | Path, dataset: str, data: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Validation and test logits of one checkpoint (the contract of ``logits/epochNNN.npz``)."""
    model = model_from_checkpoint(ckpt_path, dataset)
    return dict(
        val_logits=predict_logits(model, torch.from_numpy(data["x_val"])).numpy(),
        val_labels=data["y_val"].astype(np.int64),
        test_logits=predict_logits(model, torch.from_numpy(data["x_test"])).numpy(),
        test_labels=data["y_test"].astype(np.int64),
    )
