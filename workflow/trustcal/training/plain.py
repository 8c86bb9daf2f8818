"""One seed at a time, for any network and recipe: ``torch.optim`` (Adam or SGD), a schedule stepped per batch,
augmentation drawn from the seed's own generator, ``model.train()`` for the steps and ``model.eval()`` for
the validation and test logits (:class:`PlainTrainer`), and the loop that trains one seed with it
(:func:`train_plain`), resumable from a checkpoint per epoch."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from trustcal import registry
from trustcal.errors import TrustcalError
from trustcal.training.checkpoints import (
    checkpoint_path,
    log_epoch,
    progress_bar,
    resume,
    resumed_history,
    save_epoch,
)
from trustcal.training.config import TrainConfig, template
from trustcal.training.engine import flushed_denormals, network_input
from trustcal.training.history import HISTORY_COLUMNS
from trustcal.training.networks import channel_statistics, standardised

log = logging.getLogger(__name__)

# the streams of a seed's random numbers besides its shuffling (seeded with the seed itself) and its
# initialisation (the global generator seeded with the seed): the plain loop's augmentation, and the global
# generator at each epoch's start (dropout and other random modules)
AUGMENT_STREAM, EPOCH_STREAM = 1, 2
ADAM_BETAS, ADAM_EPS = (0.9, 0.999), 1e-7  # Keras' defaults, as the paper's Adam


def make_optimizer(
    params,
    optimizer: str,
    lr: float,
    *,
    betas=ADAM_BETAS,
    eps: float = ADAM_EPS,
    momentum: float = 0.9,
    nesterov: bool = False,
    weight_decay: float = 0.0,
) -> torch.optim.Optimizer:
    """``torch.optim.Adam`` (betas, eps: Keras' defaults) or ``torch.optim.SGD`` (momentum, Nesterov), both
    with coupled weight decay (an L2 penalty's gradient added to every parameter's, biases and BatchNorm's too)."""
    if optimizer == "adam":
        return torch.optim.Adam(params, lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay)
    if optimizer == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=momentum, nesterov=nesterov, weight_decay=weight_decay)
    raise ValueError(f"optimizer {optimizer!r}: use adam or sgd")


def cosine_factor(total_steps: int) -> Callable[[int], float]:
    """The learning rate's factor after t steps of a cosine schedule to 0 over ``total_steps``:
    (1 + cos(π·t/T)) / 2, in closed form (exactly 0 after the last step: cos(π) = -1)."""

    def factor(t: int) -> float:
        return 0.5 * (1.0 + math.cos(math.pi * min(t, total_steps) / total_steps))

    return factor


def _constant(t: int) -> float:
    return 1.0


def make_schedule(optimizer: torch.optim.Optimizer, schedule: str, lr: float, total_steps: int):
    """The learning-rate schedule, stepped once per batch (``total_steps``: every epoch's batches).

    ``constant``: ``lr`` throughout; ``cosine``: from ``lr`` to 0 (:func:`cosine_factor`); ``onecycle``:
    ``torch.optim.lr_scheduler.OneCycleLR`` with ``max_lr = lr`` and its defaults (30 % warm-up from lr/25,
    cosine annealing to lr/25e4, momentum or Adam's β1 cycled between 0.85 and 0.95). The first two are a
    ``LambdaLR`` of a plain function, whose ``state_dict`` holds numbers only.
    """
    total_steps = max(int(total_steps), 1)
    if schedule == "constant":
        return torch.optim.lr_scheduler.LambdaLR(optimizer, _constant)
    if schedule == "cosine":
        return torch.optim.lr_scheduler.LambdaLR(optimizer, cosine_factor(total_steps))
    if schedule == "onecycle":
        return torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr, total_steps=total_steps)
    raise ValueError(f"schedule {schedule!r}: use constant, cosine or onecycle")


def crop_padding(side: int) -> int:
    """How far ``crop`` pads (reflecting) a side before cropping back: 1/8 of it (4 for 32, 3 for 28)."""
    return side // 8


def draw_augmentation(
    n: int, image_shape: Sequence[int], augment: Sequence[str], generator: torch.Generator
) -> dict[str, torch.Tensor]:
    """One epoch's random augmentation of n samples (in the epoch's order), from the seed's own generator.

    ``crop``: each sample's offsets (row, column) into its padded image, uniform in [0, 2·pad]; ``flip``:
    whether it is mirrored left to right (probability 1/2). Drawn in that order, the same for every
    epoch of every run of the seed: a resumed run draws what an uninterrupted one did.
    """
    draws = {}
    if "crop" in augment:
        rows = torch.randint(0, 2 * crop_padding(image_shape[-2]) + 1, (n,), generator=generator)
        cols = torch.randint(0, 2 * crop_padding(image_shape[-1]) + 1, (n,), generator=generator)
        draws["offsets"] = torch.stack([rows, cols], dim=1)
    if "flip" in augment:
        draws["flips"] = torch.rand(n, generator=generator) < 0.5
    return draws


def augment_batch(x: torch.Tensor, draws: dict[str, torch.Tensor]) -> torch.Tensor:
    """The batch x (B, C, H, W, float) augmented by this batch's ``draws`` (:func:`draw_augmentation`):
    padded by reflection and cropped back to H × W at each sample's offsets, then mirrored where drawn."""
    if "offsets" in draws:
        b, c, h, w = x.shape
        ph, pw = crop_padding(h), crop_padding(w)
        if ph or pw:
            padded = F.pad(x, (pw, pw, ph, ph), mode="reflect")
            offsets = draws["offsets"].to(x.device)
            rows = (offsets[:, 0, None] + torch.arange(h, device=x.device))[:, None, :, None]
            cols = (offsets[:, 1, None] + torch.arange(w, device=x.device))[:, None, None, :]
            batch = torch.arange(b, device=x.device)[:, None, None, None]
            channel = torch.arange(c, device=x.device)[None, :, None, None]
            x = padded[batch, channel, rows, cols]
    if "flips" in draws:
        x = torch.where(draws["flips"].to(x.device)[:, None, None, None], x.flip(3), x)
    return x


@torch.no_grad()
def plain_logits(
    model: nn.Module, x: torch.Tensor, batch_size: int = 256, memory_format=torch.contiguous_format
) -> torch.Tensor:
    """Logits (N, classes) of stored x (uint8 images (N, C, H, W) or a table (N, F): :func:`~.engine.network_input`),
    as in training, in evaluation mode (BatchNorm's running statistics, no dropout); the model's mode is restored
    after."""
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    try:
        out = []
        for i in range(0, len(x), batch_size):
            xb = network_input(x[i : i + batch_size].to(device)).contiguous(memory_format=memory_format)
            out.append(model(xb))
        return torch.cat(out)
    finally:
        model.train(was_training)


class PlainTrainer:
    """The textbook training step for one seed of any network, with ``torch.optim``::

        model.train()
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        scheduler.step()       # the learning rate's schedule advances once per batch

    Args:
        model: The network (moved to ``device`` and ``memory_format``).
        device: Where to train.
        optimizer, lr, betas, eps, momentum, nesterov, weight_decay: :func:`make_optimizer`'s.
        schedule, total_steps: :func:`make_schedule`'s.
        memory_format: ``torch.channels_last`` for a convolutional network known to run in it (oneDNN's fast
            path: a ResNet-20 step 1.17× faster on the 2-core VM of benchmarks/README.md); inputs follow it.
    """

    def __init__(
        self,
        model: nn.Module,
        device: torch.device,
        *,
        optimizer: str = "adam",
        lr: float = 1e-3,
        betas=ADAM_BETAS,
        eps: float = ADAM_EPS,
        momentum: float = 0.9,
        nesterov: bool = False,
        weight_decay: float = 0.0,
        schedule: str = "constant",
        total_steps: int = 1,
        memory_format=torch.contiguous_format,
    ):
        self.memory_format = memory_format
        self.model = model.to(device=device, memory_format=memory_format)
        params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = make_optimizer(
            params,
            optimizer,
            lr,
            betas=betas,
            eps=eps,
            momentum=momentum,
            nesterov=nesterov,
            weight_decay=weight_decay,
        )
        self.scheduler = make_schedule(self.optimizer, schedule, lr, total_steps)

    def step(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One step on x (B, C, H, W) float in [0, 1] (augmented), labels y (B,); returns (loss, logits)."""
        self.model.train()
        self.optimizer.zero_grad()
        logits = self.model(x.contiguous(memory_format=self.memory_format))
        loss = F.cross_entropy(logits, y)
        loss.backward()
        self.optimizer.step()
        self.scheduler.step()
        return loss.detach(), logits.detach()

    def logits(self, x: torch.Tensor, batch_size: int = 256) -> torch.Tensor:
        """Logits (N, classes) of uint8 images x (N, C, H, W) in evaluation mode (:func:`plain_logits`)."""
        return plain_logits(self.model, x, batch_size, self.memory_format)

    def checkpoint(self) -> tuple[dict, dict, dict]:
        """(model state_dict as CPU copies, optimizer state_dict, scheduler state_dict)."""
        model = {k: v.detach().cpu().clone() for k, v in self.model.state_dict().items()}
        return model, self.optimizer.state_dict(), self.scheduler.state_dict()

    def load(self, model: dict, optimizer: dict, scheduler: dict) -> None:
        """The state a :meth:`checkpoint` saved (the optimizer's before the scheduler's, which reads it)."""
        self.model.load_state_dict(model)
        self.optimizer.load_state_dict(optimizer)
        self.scheduler.load_state_dict(scheduler)


def plain_model(cfg: TrainConfig, x_train: np.ndarray | None = None) -> torch.nn.Module:
    """The plain loop's model of ``cfg``: its network, behind :class:`~.networks.Standardise` when the recipe
    normalises (the statistics of ``x_train``; placeholders without it, for a checkpoint to fill)."""
    model = template(cfg)
    if cfg.normalise:
        stats = channel_statistics(x_train) if x_train is not None else (None, None)
        model = standardised(model, cfg.in_shape[0], *stats)
    return model


def memory_format(cfg: TrainConfig) -> torch.memory_format:
    """Channels-last for the registered networks on images (all run in it; faster), the network's own layout for
    a user's or torchvision's (a ``view`` of a channels-last activation can fail in code not written for it) and
    for a table (rows have no channels)."""
    images = cfg.in_shape is None or len(cfg.in_shape) == 3
    return torch.channels_last if cfg.network in registry.NETWORKS and images else torch.contiguous_format


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
    engine), its augmentation generator each sample's crop and flip (:func:`draw_augmentation`).
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
        xb, yb = network_input(xs[i : i + batch_size]), ys[i : i + batch_size]
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


def non_finite_loss(cfg: TrainConfig, epoch: int, train_loss: float, val_loss: float) -> TrustcalError:
    """The error that stops a seed whose loss became NaN or infinite, with the fix: a lower learning rate, by
    the key that sets this run's (the images are finite: uint8, checked when prepared; gradients are not
    clipped). A network of one's own may compute it too: a log, a division or a square root of 0."""
    which, value = ("training", train_loss) if not math.isfinite(train_loss) else ("validation", val_loss)
    lower = f"{cfg.learning_rate / 10:g}"
    if "e" in lower and "." not in lower:  # 1e-05 is a string to YAML's reader, 1.0e-05 a number
        lower = lower.replace("e", ".0e", 1)
    if cfg.dataset in registry.DATASETS:  # a registered dataset's run: the top-level key (no setup can take its name)
        key = f"learning_rate: {lower} in the configuration"
    else:
        key = (
            f"setups: {cfg.dataset}: recipe: {{learning_rate: {lower}}} (beside the recipe's other fields; a recipe "
            f"given by name becomes {{preset: <name>, learning_rate: {lower}}})"
        )
    own = cfg.network not in registry.NETWORKS and not cfg.network.startswith(registry.TORCHVISION_PREFIX)
    return TrustcalError(
        f"{cfg.dataset} seed {cfg.seed}: the {which} loss became {value} at epoch {epoch}, at learning rate "
        f"{cfg.learning_rate:g}. Fix: lower the learning rate, e.g. {key}, and run again"
        + (
            f"; if it persists, look in the forward pass of {cfg.network} for a log, a division or a square root "
            "that can reach 0"
            if own
            else ""
        )
    )


def train_plain(
    cfg: TrainConfig, data: dict[str, np.ndarray], ckpt_dir: Path, device: torch.device, progress: bool
) -> pd.DataFrame:
    """One seed in the plain loop (:class:`PlainTrainer`), resuming if possible; its history.

    The global generator is seeded at every epoch's start (:data:`EPOCH_STREAM`), so random modules
    (dropout) draw the same numbers in a resumed run as in an uninterrupted one.
    """
    if cfg.optimizer == "sgd" and cfg.nesterov and cfg.momentum == 0:
        raise TrustcalError(f"{cfg.dataset}: recipe nesterov: true needs momentum > 0 (it is 0)")
    start, (state,) = resume([cfg], [ckpt_dir])
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
        hist = resumed_history(state, ckpt_dir, start)
        log.info("seed %d: resuming from %s", cfg.seed, checkpoint_path(ckpt_dir, start))

    x_train = torch.from_numpy(data["x_train"]).to(device)
    y_train = torch.from_numpy(data["y_train"]).to(device)
    x_val = torch.from_numpy(data["x_val"]).to(device)
    y_val = torch.from_numpy(data["y_val"]).to(device)

    bar = progress_bar([cfg], start, progress)
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
            raise non_finite_loss(cfg, epoch, tl, vl)
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
        save_epoch(ckpt_dir, cfg, head, hist, val_logits.detach().cpu().clone(), rebuild=True)
        log_epoch(epoch, cfg, tl, ta, vl, va, seconds)
        bar.set_postfix(val_acc=f"{va:.4f}", refresh=False)
        bar.update()
    bar.close()
    return pd.DataFrame(hist, columns=list(HISTORY_COLUMNS))
