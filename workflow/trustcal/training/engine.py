"""Fast training step for S seeds at once (S = 1 for a single run).

The parameters of all seeds live in one flat buffer: parameter by parameter,
a block of shape (S, *shape in the nn.Module) — so seed s of any parameter is
``block[s]`` and a seed's ``state_dict`` is a set of slices. On it:

* the MLP's forward and backward are written out by hand as batched matrix
  products (autograd's per-op overhead is most of a step at this size);
* the CNN runs through autograd with grouped convolutions (group s = seed s)
  and batched matrix products for the dense layers;
* Adam (Keras defaults) is PyTorch's fused kernel over the flat buffer.

Every seed sees only its own data and parameters, so S seeds trained together
equal each seed trained alone, to float tolerance. Denormal floats are flushed
to zero: Adam's decaying moments of always-zero inputs (MNIST's border pixels)
otherwise become denormals that make the CPU ~20× slower on those passes.
A training process also keeps freed memory in malloc's heap
(:func:`keep_freed_memory_in_process`) instead of taking fresh pages from
the kernel for every large buffer of every step.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import math
import sys
from collections.abc import Iterator, Sequence

import torch
import torch.nn.functional as F

from trustcal.training.models import build_model


def flush_denormals_in_this_process() -> None:
    """Flush denormals to zero for the rest of the process, in every thread.

    The CPU's mode is per thread and PyTorch does not pass it to its OpenMP
    workers, but new threads inherit it: call this before the first parallel
    operation (at the top of a training process), so the workers are created
    with it. Otherwise Adam's moments, once they underflow, run ~30× slower
    on the worker threads.
    """
    torch.set_flush_denormal(True)


def keep_freed_memory_in_process() -> bool:
    """Make glibc's malloc reuse freed memory instead of returning it to the kernel; True if it took effect.

    PyTorch's CPU tensors come from malloc. By default glibc serves large
    blocks (above a threshold that adapts between 128 KiB and 32 MiB) with a
    fresh ``mmap`` and unmaps them when freed, so the activations and
    gradients of every step (3.7 MB for the CNN's first layer at batch 32,
    S times that for S seeds) arrive as new pages that the kernel must fault
    in and zero. Fixing the mmap threshold at its maximum and not trimming
    the heap keeps those blocks for the next step: a CIFAR-10 step 1.1–1.2×
    faster here (``benchmarks/bench_training.py``). The memory stays with the
    process until it exits, as it would with a caching allocator. A no-op
    elsewhere than glibc.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3  # <malloc.h>
    return bool(mallopt(m_mmap_threshold, 32 * 1024 * 1024)) and bool(mallopt(m_trim_threshold, 1 << 30))


@contextlib.contextmanager
def flushed_denormals() -> Iterator[None]:
    """Flush denormal floats to zero inside the block (this thread), and restore the mode after it."""
    was_flushing = torch.tensor(1e-40).mul(1.0).item() == 0.0
    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_flush_denormal(was_flushing)


class StackedParameters:
    """Parameters of S copies of one architecture in one flat buffer."""

    def __init__(self, template: torch.nn.Module, states: Sequence[dict], device: torch.device):
        self.names = [n for n, _ in template.named_parameters()]
        self.shapes = [tuple(p.shape) for _, p in template.named_parameters()]
        self.seeds = len(states)
        self.sizes = [self.seeds * math.prod(s) for s in self.shapes]
        blocks = [torch.stack([st[n].detach().float() for st in states]).reshape(-1) for n in self.names]
        self.flat = torch.cat(blocks).to(device)

    def views(self, flat: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        flat = self.flat if flat is None else flat
        return {
            n: block.view(self.seeds, *shape)
            for n, shape, block in zip(self.names, self.shapes, flat.split(self.sizes))
        }

    def seed_state(self, s: int, flat: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """Seed ``s``'s tensors with the nn.Module's names and shapes (CPU copies)."""
        return {n: v[s].detach().cpu().clone() for n, v in self.views(flat).items()}

    def seed_vector(self, s: int, flat: torch.Tensor) -> torch.Tensor:
        return torch.cat([v[s].reshape(-1) for v in self.views(flat).values()]).cpu().clone()

    def stack_vectors(self, vectors: Sequence[torch.Tensor]) -> torch.Tensor:
        """Inverse of :meth:`seed_vector` over all seeds."""
        per_param = [torch.split(v.to(self.flat.device), [math.prod(s) for s in self.shapes]) for v in vectors]
        blocks = [torch.stack([pp[i] for pp in per_param]).reshape(-1) for i in range(len(self.names))]
        return torch.cat(blocks)


class FlatAdam:
    """Adam (Keras defaults) on the one flat parameter tensor.

    It calls the kernel behind ``torch.optim.Adam(fused=True)`` directly: one
    pass over the flat buffer, without the optimiser wrapper's per-step Python
    work (≈140 µs, more than the kernel itself at the MLP's size).
    """

    def __init__(self, params: torch.Tensor, lr=1e-3, betas=(0.9, 0.999), eps=1e-7):
        self.params, self.lr, self.betas, self.eps = params, lr, betas, eps
        self.exp_avg = torch.zeros_like(params)
        self.exp_avg_sq = torch.zeros_like(params)
        self.steps = torch.zeros((), dtype=torch.float32, device=params.device)

    @property
    def step_count(self) -> int:
        return int(self.steps.item())

    def load_state(self, step: int, exp_avg: torch.Tensor, exp_avg_sq: torch.Tensor) -> None:
        self.steps.fill_(float(step))
        self.exp_avg.copy_(exp_avg)
        self.exp_avg_sq.copy_(exp_avg_sq)

    @torch.no_grad()
    def step(self, grad: torch.Tensor) -> None:
        self.steps += 1
        torch._fused_adam_(
            [self.params],
            [grad],
            [self.exp_avg],
            [self.exp_avg_sq],
            [],
            [self.steps],
            amsgrad=False,
            lr=self.lr,
            beta1=self.betas[0],
            beta2=self.betas[1],
            weight_decay=0.0,
            eps=self.eps,
            maximize=False,
        )


def mlp_logits(p: dict[str, torch.Tensor], x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(hidden, logits) of the stacked MLP for x of shape (S, B, 784)."""
    h = torch.baddbmm(p["1.bias"].unsqueeze(1), x, p["1.weight"].transpose(1, 2)).relu_()
    return h, torch.baddbmm(p["3.bias"].unsqueeze(1), h, p["3.weight"].transpose(1, 2))


def mlp_step(p: dict[str, torch.Tensor], g: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor):
    """Mean cross-entropy per seed and its gradient, written into ``g`` (hand-derived backward)."""
    x = x.flatten(2)
    h, z = mlp_logits(p, x)
    logp = torch.log_softmax(z, dim=2)
    loss = -logp.gather(2, y.unsqueeze(2)).squeeze(2).mean(1)
    dz = logp.exp_()
    dz.scatter_add_(2, y.unsqueeze(2), torch.full_like(z[:, :, :1], -1.0)).div_(x.shape[1])
    torch.bmm(dz.transpose(1, 2), h, out=g["3.weight"])
    torch.sum(dz, dim=1, out=g["3.bias"])
    dh = torch.bmm(dz, p["3.weight"]).mul_(h > 0)
    torch.bmm(dh.transpose(1, 2), x, out=g["1.weight"])
    torch.sum(dh, dim=1, out=g["1.bias"])
    return loss, z


def cnn_logits(p: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """Logits (S, B, 10) of the stacked CNN for x of shape (S, B, 3, 32, 32).

    Channels-last layout (oneDNN's fast path for convolutions and pooling) and
    ReLU after max-pooling (the same function, on a quarter of the values)
    make a step ~1.5× faster on the CPU than the textbook NCHW order.
    """
    s, b = x.shape[:2]
    h = x.transpose(0, 1).reshape(b, s * 3, 32, 32).contiguous(memory_format=torch.channels_last)
    for i, name in enumerate(("0", "3", "6")):
        w = p[f"{name}.weight"]
        w = w.reshape(-1, *w.shape[2:]).contiguous(memory_format=torch.channels_last)
        h = F.conv2d(h, w, p[f"{name}.bias"].reshape(-1), groups=s)
        h = (F.max_pool2d(h, 2) if i < 2 else h).relu_()
    h = h.contiguous().reshape(b, s, -1).transpose(0, 1)  # (S, B, 1024) in nn.Flatten's (C, H, W) order
    h = torch.baddbmm(p["9.bias"].unsqueeze(1), h, p["9.weight"].transpose(1, 2)).relu_()
    return torch.baddbmm(p["11.bias"].unsqueeze(1), h, p["11.weight"].transpose(1, 2))


@torch.no_grad()
def stacked_logits(dataset: str, params: StackedParameters, x: torch.Tensor, batch_size: int = 256) -> torch.Tensor:
    """Logits (S, N, 10) of uint8 images x (N, …), scaled by 1/255 as in training, for every seed.

    Batches of 256 keep the CNN's activations in cache: ~1.7× the throughput of 1000.
    """
    p = params.views(params.flat.detach())
    out = []
    for i in range(0, len(x), batch_size):
        xb = x[i : i + batch_size].to(params.flat.device).float().div_(255)
        xb = xb.unsqueeze(0).expand(params.seeds, *xb.shape)
        out.append(mlp_logits(p, xb.flatten(2))[1] if dataset == "mnist" else cnn_logits(p, xb))
    return torch.cat(out, dim=1)


class StackedTrainer:
    """One optimisation step and evaluation for S seeds of one architecture."""

    def __init__(self, dataset: str, states: Sequence[dict], device: torch.device, lr, betas, eps):
        self.dataset = dataset
        self.params = StackedParameters(build_model(dataset), states, device)
        self.optimizer = FlatAdam(self.params.flat, lr, betas, eps)
        if dataset == "mnist":  # the hand-written backward writes into views of one gradient buffer
            self.grad = torch.zeros_like(self.params.flat)
            self.p, self.g = self.params.views(), self.params.views(self.grad)
        else:  # autograd accumulates into the flat leaf's .grad through its views
            self.params.flat.requires_grad_(True)

    def step(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One Adam step on x (S, B, …) float in [0, 1]; returns (loss per seed, logits)."""
        if self.dataset == "mnist":
            loss, z = mlp_step(self.p, self.g, x, y)
            self.optimizer.step(self.grad)
            return loss, z
        flat = self.params.flat
        z = cnn_logits(self.params.views(flat), x)
        loss = F.cross_entropy(z.flatten(0, 1), y.flatten(), reduction="none").view(y.shape).mean(1)
        flat.grad = None
        loss.sum().backward()
        self.optimizer.step(flat.grad)
        return loss.detach(), z.detach()

    def logits(self, x: torch.Tensor, batch_size: int = 256) -> torch.Tensor:
        """Logits (S, N, 10) of the same uint8 images x (N, …) under every seed's parameters."""
        return stacked_logits(self.dataset, self.params, x, batch_size)

    def seed_checkpoint(self, s: int) -> tuple[dict, dict]:
        """(model state_dict, optimiser state) of seed ``s``."""
        flat = self.params.flat.detach()
        opt = dict(
            step=self.optimizer.step_count,
            exp_avg=self.params.seed_vector(s, self.optimizer.exp_avg),
            exp_avg_sq=self.params.seed_vector(s, self.optimizer.exp_avg_sq),
        )
        return self.params.seed_state(s, flat), opt

    def load_optimizer(self, states: Sequence[dict]) -> None:
        steps = {st["step"] for st in states}
        if len(steps) != 1:
            raise ValueError(f"seeds trained together must be at the same step (got {sorted(steps)})")
        self.optimizer.load_state(
            steps.pop(),
            self.params.stack_vectors([st["exp_avg"] for st in states]),
            self.params.stack_vectors([st["exp_avg_sq"] for st in states]),
        )
