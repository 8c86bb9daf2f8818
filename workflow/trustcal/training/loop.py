"""Training loop: a setup's network and recipe (the paper's protocol by default) with a resumable checkpoint per
epoch (the step itself: :mod:`.engine`).

Two engines run it. The paper's networks under the paper's recipe (Adam, a constant rate, no augmentation)
train in the stacked multi-seed engine (:class:`~.engine.StackedTrainer`: the seeds of a job as one stacked
model), chosen because their class has a stacked form (:data:`~.engine.STACKED`), at any image shape and
number of classes. Every other network or recipe trains in the plain loop (:mod:`.plain`, :class:`~.plain.PlainTrainer`:
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
import logging
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from trustcal import registry
from trustcal.errors import TrustcalError
from trustcal.training.checkpoints import (
    checkpoint_path,
    load_checkpoint,
    log_epoch,
    progress_bar,
    resume,
    resumed_history,
    save_epoch,
)
from trustcal.training.config import (
    TrainConfig,
    complete_config,
    configure_device,
    data_digest,
    logits_config,
    resolve_device,
    template,
)
from trustcal.training.engine import (
    StackedTrainer,
    flushed_denormals,
    network_input,
    stacked_logits,
    stacked_model,
)
from trustcal.training.history import HISTORY_COLUMNS
from trustcal.training.plain import memory_format, non_finite_loss, plain_logits, plain_model, train_plain

log = logging.getLogger(__name__)


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

    Each seed's generator draws its permutation; the stored data (uint8 images, or a table's float32
    features: :func:`~.engine.network_input`) are put in that order once per epoch, so a batch is a slice,
    not a gather. Nothing leaves the device until the epoch ends.
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
        loss, logits = trainer.step(network_input(xs[:, i : i + batch_size]), yb)
        loss_sum += loss
        correct += (logits.argmax(2) == yb).sum(1)
        steps += 1
        seen += yb.shape[1]
    return loss_sum / steps, correct.float() / seen


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
    configure_device(device, cfg0.deterministic)
    if not stacked:
        return [train_plain(c, data, d, device, progress) for c, d in zip(cfgs, ckpt_dirs)]

    start, states = resume(cfgs, ckpt_dirs)
    shuffles = [torch.Generator().manual_seed(c.seed) for c in cfgs]
    if start == 0:
        models = []
        for c in cfgs:
            torch.manual_seed(c.seed)
            models.append(template(c).state_dict())
        histories: list[list[dict]] = [[] for _ in cfgs]
    else:
        models = [st["model"] for st in states]
        for gen, st in zip(shuffles, states):
            gen.set_state(st["shuffle_rng"])
        histories = [resumed_history(st, d, start) for st, d in zip(states, ckpt_dirs)]
        for c, d in zip(cfgs, ckpt_dirs):
            log.info("seed %d: resuming from %s", c.seed, checkpoint_path(d, start))
    trainer = StackedTrainer(template(cfg0), models, device, cfg0.learning_rate, cfg0.betas, cfg0.eps)
    if start > 0:
        trainer.load_optimizer([st["optimizer"] for st in states])

    x_train = torch.from_numpy(data["x_train"]).to(device)
    y_train = torch.from_numpy(data["y_train"]).to(device)
    x_val = torch.from_numpy(data["x_val"]).to(device)
    y_val = torch.from_numpy(data["y_val"]).to(device)

    bar = progress_bar(cfgs, start, progress)
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
                raise non_finite_loss(c, epoch, tl, vl)
            hist.append(
                dict(epoch=epoch, train_loss=tl, train_accuracy=ta, val_loss=vl, val_accuracy=va, seconds=seconds)
            )
            model_state, opt_state = trainer.seed_checkpoint(s)
            head = dict(epoch=epoch, model=model_state, optimizer=opt_state, shuffle_rng=shuffles[s].get_state())
            # clone: not the whole (S, N, classes) storage
            save_epoch(d, c, head, hist, val_logits[s].detach().cpu().clone())
            log_epoch(epoch, c, tl, ta, vl, va, seconds)
        bar.set_postfix(val_acc=" ".join(f"{a:.4f}" for a in val_acc.tolist()), refresh=False)
        bar.update()
    bar.close()
    return [pd.DataFrame(h, columns=list(HISTORY_COLUMNS)) for h in histories]


# images a forward pass of the logits takes at once: the CPU's cache (256: ~1.7× the throughput of 1,000 for
# the paper's CNN), a GPU's width
LOGITS_BATCH = {"cpu": 256, "cuda": 4096}


def compute_logits(
    ckpt_path: str | Path,
    setup: str | registry.Setup | TrainConfig,
    data: dict[str, np.ndarray],
    device: str | torch.device = "cpu",
) -> dict[str, np.ndarray]:
    """Validation and test logits of one checkpoint (the contract of ``logits/epochNNN.npz``).

    ``setup``: the run's :class:`trustcal.registry.Setup` (or its :class:`TrainConfig`; a registered
    dataset's name for its default network and the paper's recipe). The forward pass is the training
    engine's, the same function that produced the validation loss in the history (the plain loop's in
    evaluation mode); the validation logits are those training saved in the checkpoint (computed for a
    checkpoint without them). ``device``: where the forward pass runs (a GPU's equal the CPU's to float32
    rounding; tests/gpu).
    """
    cfg = logits_config(setup, data)
    device = torch.device(device)
    batch = LOGITS_BATCH.get(device.type, LOGITS_BATCH["cpu"])
    state = load_checkpoint(ckpt_path)
    try:
        if cfg.stacked:
            model = stacked_model(template(cfg), [state["model"]], device)
            forward = lambda x: stacked_logits(model, x, batch)[0].cpu()  # noqa: E731
        else:
            network = plain_model(cfg)
            network.load_state_dict(state["model"])
            network = network.to(device=device, memory_format=memory_format(cfg))
            forward = lambda x: plain_logits(network, x, batch, memory_format(cfg)).cpu()  # noqa: E731
    except (KeyError, RuntimeError, TypeError) as exc:
        raise TrustcalError(
            f"{ckpt_path}: not a {cfg.dataset} checkpoint of this workflow ({type(exc).__name__}: "
            f"{' '.join(str(exc).split())[:300]}); rerun training (rule 'train').",
            rerun="train",
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
