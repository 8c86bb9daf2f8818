"""The training step for S seeds at once (S = 1 for a single run), and what makes it fast.

A step is the textbook one, for every seed at once; schematically::

    optimizer.zero_grad()
    logits = model(x)                    # (S, B, classes): seed s sees only its x[s] and its parameters
    loss = F.cross_entropy(logits, y)    # the mean over the batch, one per seed
    loss.backward()                      # the gradients of all seeds in one flat tensor, flat.grad
    optimizer.step()                     # Adam (Keras defaults) on the flat tensor

(:meth:`StackedTrainer.step`; tests/unit/training/test_engine.py checks it against exactly that loop
with an ``nn.Module`` and ``torch.optim.Adam``.) Seeds share no parameter, so S seeds
trained together equal each seed trained alone, to float tolerance. Which stacked
model runs a network is decided by its class in :mod:`.models` (:data:`STACKED`); the
parameters are found from the network's own modules and names.

The speed measures, each in one place, with the reason and what it gained on a
2-core VM with PyTorch 2.14 on the CPU (``benchmarks/bench_training.py --variants
engine engine-<measure>`` runs the engine with one measure undone; README "Training
speed"). None of them changes a number, except that flushing denormals rounds
values below 1.2e-38 to zero:

- one flat parameter tensor (:class:`StackedParameters`): S seeds run as one set of
  batched products and grouped convolutions, and Adam is one kernel call; five seeds
  together cost 3.3× (MLP) and 4.5× (CNN) one seed's step;
- Adam's fused kernel called directly (:func:`fused_adam_step`): an MLP step
  1.2–1.3× faster than through ``torch.optim.Adam(fused=True)``;
- the MLP's backward written out (:class:`StackedMLP`): an MLP step 1.4–1.8× faster
  than with the same products run by autograd;
- channels-last memory format (:class:`StackedCNN`): a CNN step ~1.5× faster;
- ReLU after max-pooling (:func:`relu_after_max_pooling`): exact, less work, no
  difference measurable here;
- denormals flushed to zero (:func:`flush_denormals_in_this_process`): Adam's pass
  up to ~30× faster once its moments decay;
- freed memory kept in malloc's heap (:func:`keep_freed_memory_in_process`): a CNN
  step 1.12–1.15× faster.

On a CUDA GPU (benchmarks/README.md, "Training on a GPU"; ``bench_training.py --device cuda``) the step is
replayed from a CUDA graph (:mod:`.graphs`), and the CPU's measures were each measured again there: each kept,
channels-last though NCHW is faster there, for the float32 accuracy of its kernels (:class:`StackedCNN`).

Every other network, and the paper's networks under another recipe (SGD, a schedule, augmentation,
normalisation, weight decay), trains one seed at a time in the textbook loop with ``torch.optim``
(:class:`trustcal.training.plain.PlainTrainer`): no stacked form, any ``nn.Module``.
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
from torch import nn

from trustcal.training.graphs import GraphedStep
from trustcal.training.models import CIFARCNN, MNISTMLP, build_model

# --- process settings -------------------------------------------------------------------------


def flush_denormals_in_this_process() -> None:
    """Flush denormal floats to zero for the rest of the process, in every thread.

    Why: Adam's moments of parameters whose gradient is always zero (the
    weights of MNIST's blank border pixels) decay geometrically into denormal
    floats, on which the CPU is ~20–30× slower: the fused Adam pass ran ~30×
    slower on PyTorch's worker threads before this. The CPU's mode is per
    thread and PyTorch does not pass it to its OpenMP workers, but new threads
    inherit it: call this before the first parallel operation (at the top of a
    training process), so the workers are created with it. Flushing changes
    numbers only where a value would be below 1.2e-38.
    """
    torch.set_flush_denormal(True)


@contextlib.contextmanager
def flushed_denormals() -> Iterator[None]:
    """Flush denormal floats to zero inside the block (this thread), and restore the mode after it.

    The same setting as :func:`flush_denormals_in_this_process`, for a training
    loop called in a process that did not set it first (its worker threads
    then keep the CPU's default).
    """
    was_flushing = torch.tensor(1e-40).mul(1.0).item() == 0.0
    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_flush_denormal(was_flushing)


def keep_freed_memory_in_process() -> bool:
    """Make glibc's malloc reuse freed memory instead of returning it to the kernel; True if it took effect.

    Why: PyTorch's CPU tensors come from malloc. By default glibc serves large
    blocks (above a threshold that adapts between 128 KiB and 32 MiB) with a
    fresh ``mmap`` and unmaps them when freed, so the activations and
    gradients of every step (3.7 MB for the CNN's first layer at batch 32,
    S times that for S seeds) arrive as new pages that the kernel must fault
    in and zero, ~1,000–2,000 page faults a CNN step. Fixing the mmap
    threshold at its maximum and not trimming the heap keeps those blocks for
    the next step: a CNN step 1.15× faster with one seed and 1.12× with five,
    an MLP step 1.02× (``bench_training.py --variants engine engine-malloc``).
    The memory stays with the process until it exits, as it would with a
    caching allocator. A no-op elsewhere than glibc.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3  # <malloc.h>
    return bool(mallopt(m_mmap_threshold, 32 * 1024 * 1024)) and bool(mallopt(m_trim_threshold, 1 << 30))


# --- parameters ---------------------------------------------------------------------------------


class StackedParameters:
    """The parameters of S copies of one network in one flat tensor, ``flat``, and its gradient in ``flat.grad``.

    Parameter by parameter (in the network's ``named_parameters`` order), a
    block of shape (S, *shape in the network): seed s of a parameter is
    ``block[s]``, and a seed's ``state_dict`` is a set of slices, under the
    network's own names. Why one tensor: the S seeds become batched matrix
    products and grouped convolutions instead of S networks, and Adam is one
    kernel call over one contiguous tensor, whatever the number of seeds and
    parameters.

    Args:
        template: The network (an ``nn.Module``): its parameters' names and shapes, its modules' names.
        states: One ``state_dict`` of the network per seed.
        device: Where the flat tensor lives.
    """

    def __init__(self, template: nn.Module, states: Sequence[dict], device: torch.device):
        self.names = [n for n, _ in template.named_parameters()]
        self.shapes = [tuple(p.shape) for _, p in template.named_parameters()]
        self.module_names = {module: name for name, module in template.named_modules()}
        self.seeds = len(states)
        self.sizes = [self.seeds * math.prod(s) for s in self.shapes]
        blocks = [torch.stack([st[n].detach().float() for st in states]).reshape(-1) for n in self.names]
        self.flat = torch.cat(blocks).to(device).requires_grad_(True)

    def views(self, flat: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """Name → view (S, *shape) into ``flat`` (default: the parameters, tracked by autograd)."""
        flat = self.flat if flat is None else flat
        return {
            n: block.view(self.seeds, *shape)
            for n, shape, block in zip(self.names, self.shapes, flat.split(self.sizes))
        }

    def of(self, views: dict[str, torch.Tensor], layer: nn.Module) -> tuple[torch.Tensor, torch.Tensor]:
        """(weight, bias) of ``layer``, a module of the template, among ``views``."""
        name = self.module_names[layer]
        return views[f"{name}.weight"], views[f"{name}.bias"]

    def seed_state(self, s: int, flat: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """Seed ``s``'s tensors with the nn.Module's names and shapes (CPU copies)."""
        flat = self.flat.detach() if flat is None else flat
        return {n: v[s].detach().cpu().clone() for n, v in self.views(flat).items()}

    def seed_vector(self, s: int, flat: torch.Tensor) -> torch.Tensor:
        """Seed ``s``'s part of a flat tensor (e.g. an Adam moment), parameter after parameter (a CPU copy)."""
        return torch.cat([v[s].reshape(-1) for v in self.views(flat).values()]).cpu().clone()

    def stack_vectors(self, vectors: Sequence[torch.Tensor]) -> torch.Tensor:
        """Inverse of :meth:`seed_vector` over all seeds."""
        per_param = [torch.split(v.to(self.flat.device), [math.prod(s) for s in self.shapes]) for v in vectors]
        blocks = [torch.stack([pp[i] for pp in per_param]).reshape(-1) for i in range(len(self.names))]
        return torch.cat(blocks)


# --- Adam ---------------------------------------------------------------------------------------


def fused_adam_step(param, grad, exp_avg, exp_avg_sq, step, lr, betas, eps) -> None:
    """Adam's update of ``param`` in place: PyTorch's fused kernel, called directly.

    Why directly: ``torch.optim.Adam(fused=True)`` over the same one flat
    tensor calls this kernel too, with the same numbers bit for bit, but its
    Python wrapper (state lookup, grouping of tensors by device and dtype,
    hooks) costs ~0.13 ms a step: an MLP step 1.32× slower on one thread,
    1.17–1.25× on two (``--variants engine engine-torch-adam``; a CNN step,
    ~8 ms, within noise). ``torch._fused_adam_`` is private:
    :class:`FlatAdam` checks that it exists (:func:`has_fused_adam`) and
    otherwise steps a ``torch.optim.Adam``. ``step`` is a float32 scalar tensor,
    already counting this update.
    """
    torch._fused_adam_(
        [param],
        [grad],
        [exp_avg],
        [exp_avg_sq],
        [],
        [step],
        amsgrad=False,
        lr=lr,
        beta1=betas[0],
        beta2=betas[1],
        weight_decay=0.0,
        eps=eps,
        maximize=False,
    )


def has_fused_adam() -> bool:
    """Whether this PyTorch has the private kernel :func:`fused_adam_step` calls."""
    return callable(getattr(torch, "_fused_adam_", None))


class FlatAdam:
    """Adam on one flat parameter tensor (Keras' defaults: ε = 1e-7), as ``torch.optim.Adam``.

    The interface of ``torch.optim.Optimizer`` that training uses: :meth:`step`
    (reads ``param.grad``), :meth:`zero_grad`, :meth:`state_dict` and
    :meth:`load_state_dict`. The update is :func:`fused_adam_step`; where
    PyTorch lacks that kernel, a ``torch.optim.Adam`` over the same tensor and
    state (the same update, to float rounding).
    """

    def __init__(self, param: torch.Tensor, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-7):
        self.param, self.lr, self.betas, self.eps = param, lr, betas, eps
        self.exp_avg = torch.zeros_like(param, requires_grad=False)
        self.exp_avg_sq = torch.zeros_like(param, requires_grad=False)
        self.steps = torch.zeros((), dtype=torch.float32, device=param.device)
        self._public = None
        if not has_fused_adam():
            self._public = torch.optim.Adam([param], lr=lr, betas=betas, eps=eps)
            self._public.state[param] = dict(step=self.steps, exp_avg=self.exp_avg, exp_avg_sq=self.exp_avg_sq)

    @property
    def step_count(self) -> int:
        return int(self.steps.item())

    def zero_grad(self) -> None:
        """Forget the gradient (``param.grad = None``, as ``torch.optim`` does by default)."""
        self.param.grad = None

    @torch.no_grad()
    def step(self) -> None:
        """One update of the parameter with its gradient ``param.grad``."""
        if self._public is not None:
            self._public.step()
            return
        self.steps += 1
        fused_adam_step(
            self.param, self.param.grad, self.exp_avg, self.exp_avg_sq, self.steps, self.lr, self.betas, self.eps
        )

    def state_dict(self) -> dict:
        """``step`` (int) and the moments ``exp_avg``, ``exp_avg_sq`` (flat, like the parameter)."""
        return dict(step=self.step_count, exp_avg=self.exp_avg, exp_avg_sq=self.exp_avg_sq)

    def load_state_dict(self, state: dict) -> None:
        self.steps.fill_(float(state["step"]))
        self.exp_avg.copy_(state["exp_avg"])
        self.exp_avg_sq.copy_(state["exp_avg_sq"])


# --- stacked networks ---------------------------------------------------------------------------


def _layers(template: nn.Module, kinds: tuple[type, ...], what: str) -> list[nn.Module]:
    layers = list(template.children())
    unknown = sorted({type(m).__name__ for m in layers if not isinstance(m, kinds)})
    if unknown:
        raise ValueError(
            f"{type(template).__name__}: {what} has no stacked form of {', '.join(unknown)}; "
            f"it knows {', '.join(k.__name__ for k in kinds)}"
        )
    return layers


class StackedMLP:
    """S copies of ``Flatten → Linear → ReLU → Linear``, with their backward written out.

    ``model(x)`` gives the logits (S, B, classes) of x (S, B, …);
    :meth:`loss_and_gradients` is a training step's forward, loss and backward.
    Every product is a batched matrix product over the seeds (``baddbmm``, ``bmm``).

    Why the backward is written out: at this size (a 0.31 ms step on two
    threads) the cost of a step is the number of operations, not their
    arithmetic. The same products and gradients in two
    ``torch.autograd.Function`` classes, so that ``loss.sum().backward()`` ran
    them, gave the same numbers bit for bit and made a step 1.4–1.6× slower on
    two threads and 1.55–1.8× on one (``--variants engine engine-autograd``):
    autograd's graph, its engine and the Python functions it calls back cost
    more than the products. The gradients go straight into ``flat.grad``.
    """

    def __init__(self, template: nn.Module, params: StackedParameters):
        layers = _layers(template, (nn.Flatten, nn.Linear, nn.ReLU), "StackedMLP")
        if [type(m) for m in layers] != [nn.Flatten, nn.Linear, nn.ReLU, nn.Linear]:
            raise ValueError(
                f"{type(template).__name__}: StackedMLP runs Flatten → Linear → ReLU → Linear, "
                f"not {' → '.join(type(m).__name__ for m in layers)}"
            )
        self.params = params
        p = params.views(params.flat.detach())  # written by hand: no autograd graph
        self.w1, self.b1 = params.of(p, layers[1])
        self.w2, self.b2 = params.of(p, layers[3])
        self.grad = torch.zeros_like(params.flat, requires_grad=False)
        self.g = params.views(self.grad)
        self.g_w1, self.g_b1 = params.of(self.g, layers[1])
        self.g_w2, self.g_b2 = params.of(self.g, layers[3])

    def hidden(self, x: torch.Tensor) -> torch.Tensor:
        """ReLU(x W1ᵀ + b1) for flattened x (S, B, inputs)."""
        return torch.baddbmm(self.b1.unsqueeze(1), x, self.w1.transpose(1, 2)).relu_()

    def output(self, h: torch.Tensor) -> torch.Tensor:
        """The logits h W2ᵀ + b2."""
        return torch.baddbmm(self.b2.unsqueeze(1), h, self.w2.transpose(1, 2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits (S, B, classes) of x (S, B, …)."""
        return self.output(self.hidden(x.flatten(2)))

    __call__ = forward

    def loss_and_gradients(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean cross-entropy per seed (S,) and the logits; the loss's gradient into ``flat.grad``."""
        x = x.flatten(2)
        h = self.hidden(x)
        logits = self.output(h)
        log_probs = torch.log_softmax(logits, dim=2)
        loss = -log_probs.gather(2, y.unsqueeze(2)).squeeze(2).mean(1)
        # d loss / d logits = (softmax - one-hot) / B
        grad_logits = log_probs.exp_()
        grad_logits.scatter_add_(2, y.unsqueeze(2), torch.full_like(logits[:, :, :1], -1.0)).div_(x.shape[1])
        self.backward(x, h, grad_logits)
        return loss, logits

    def backward(self, x: torch.Tensor, h: torch.Tensor, grad_logits: torch.Tensor) -> None:
        """The parameters' gradients, into ``flat.grad``, from the logits' gradient (chain rule by hand)."""
        torch.bmm(grad_logits.transpose(1, 2), h, out=self.g_w2)
        torch.sum(grad_logits, dim=1, out=self.g_b2)
        grad_h = torch.bmm(grad_logits, self.w2).mul_(h > 0)
        torch.bmm(grad_h.transpose(1, 2), x, out=self.g_w1)
        torch.sum(grad_h, dim=1, out=self.g_b1)
        self.params.flat.grad = self.grad


def relu_after_max_pooling(layers: list[nn.Module]) -> list[nn.Module]:
    """``layers`` with every ReLU that comes just before a max-pooling moved after it.

    Why: both are monotone, so the two orders give the same values and the same
    gradients, bit for bit, and the ReLU then runs on a quarter of the values.
    The gain is within noise here (0.98–1.02× a CNN step, ``--variants engine
    engine-relu-first``).
    """
    layers = list(layers)
    for i in range(len(layers) - 1):
        if isinstance(layers[i], nn.ReLU) and isinstance(layers[i + 1], nn.MaxPool2d):
            layers[i], layers[i + 1] = layers[i + 1], layers[i]
    return layers


class StackedCNN:
    """S copies of a convolutional network (Conv2d, ReLU, MaxPool2d, Flatten, Linear), through autograd.

    Seed s's channels are group s of grouped convolutions; the dense layers
    are batched matrix products. ``model(x)`` gives the logits (S, B, classes)
    of x (S, B, C, H, W); :meth:`loss_and_gradients` runs ``F.cross_entropy``
    and ``loss.backward()``, whose gradients autograd gathers into ``flat.grad``.

    Why channels-last (:attr:`MEMORY_FORMAT`): on the CPU it is oneDNN's fast path for convolutions and
    pooling; a CIFAR-10 step is 1.47× faster with one seed and 1.2–1.3× with five (one thread) than in the
    network's own NCHW format (``--variants engine engine-nchw``; other kernels, so other roundings). On a
    CUDA GPU NCHW made a five-seed step 1.57× faster (an H200, ``--device cuda``), but cuDNN's kernels for
    it put the first convolution's weights 9× outside the float32 budget of a summation after one epoch
    (tests/gpu, benchmarks/README.md "Training on a GPU"), where channels-last stays inside it: the
    accurate kernels are kept.
    """

    MEMORY_FORMAT = torch.channels_last

    def __init__(self, template: nn.Module, params: StackedParameters):
        layers = _layers(template, (nn.Conv2d, nn.ReLU, nn.MaxPool2d, nn.Flatten, nn.Linear), "StackedCNN")
        self.layers, self.params = relu_after_max_pooling(layers), params

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits (S, B, classes) of x (S, B, C, H, W)."""
        params, fmt = self.params, self.MEMORY_FORMAT
        p = params.views()
        s, b = x.shape[:2]
        h = x.transpose(0, 1).reshape(b, s * x.shape[2], *x.shape[3:]).contiguous(memory_format=fmt)
        for layer in self.layers:
            if isinstance(layer, nn.Conv2d):  # (B, S·C, H, W): group s is seed s
                w, bias = params.of(p, layer)
                w = w.reshape(-1, *w.shape[2:]).contiguous(memory_format=fmt)
                h = F.conv2d(h, w, bias.reshape(-1), layer.stride, layer.padding, layer.dilation, groups=s)
            elif isinstance(layer, nn.MaxPool2d):
                h = F.max_pool2d(h, layer.kernel_size, layer.stride, layer.padding, layer.dilation)
            elif isinstance(layer, nn.ReLU):
                h = h.relu_()
            elif isinstance(layer, nn.Flatten):  # (S, B, C·H·W) in nn.Flatten's (C, H, W) order
                h = h.contiguous().reshape(b, s, -1).transpose(0, 1)
            else:
                w, bias = params.of(p, layer)
                h = torch.baddbmm(bias.unsqueeze(1), h, w.transpose(1, 2))
        return h

    __call__ = forward

    def loss_and_gradients(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean cross-entropy per seed (S,) and the logits; the loss's gradient into ``flat.grad``."""
        logits = self.forward(x)
        loss = F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="none").view(y.shape).mean(1)
        loss.sum().backward()  # seeds share no parameter: each gets its own loss's gradient
        return loss.detach(), logits.detach()


STACKED: dict[type[nn.Module], type] = {MNISTMLP: StackedMLP, CIFARCNN: StackedCNN}
"""The stacked form of each network class that has one: the paper's two, at any image shape and number of
classes (trustcal.training.loop trains a network in it when its recipe is the paper's)."""


def stacked_model(network: str | nn.Module, states: Sequence[dict], device: torch.device) -> StackedMLP | StackedCNN:
    """The stacked form of ``network`` with one seed per ``state_dict`` in ``states``.

    ``network``: the network itself (its modules and names; its parameters are not used), or the name of a
    dataset of :data:`trustcal.training.models.ARCHITECTURES` for the paper's network of it.
    """
    template = build_model(network) if isinstance(network, str) else network
    try:
        stacked = STACKED[type(template)]
    except KeyError:
        raise ValueError(f"{type(template).__name__}: no stacked form in trustcal.training.engine.STACKED") from None
    return stacked(template, StackedParameters(template, states, device))


def network_input(x: torch.Tensor) -> torch.Tensor:
    """A batch as ``splits.npz`` stores it, made the network's input: a new float32 tensor, uint8 images scaled
    to [0, 1] (``x.float().div_(255)``, as every engine always did: the same bits), a user's table (float32
    features, standardised when prepared: trustcal.data.tabular) as it is."""
    if x.dtype == torch.uint8:
        return x.float().div_(255)
    return x.to(dtype=torch.float32, copy=True)


@torch.no_grad()
def stacked_logits(model: StackedMLP | StackedCNN, x: torch.Tensor, batch_size: int = 256) -> torch.Tensor:
    """Logits (S, N, classes) of stored x (N, …: :func:`network_input`), as in training, for every seed, in
    batches of ``batch_size`` (256 keep the CNN's activations in a CPU's cache: ~1.7× the throughput of 1000).
    """
    seeds, device = model.params.seeds, model.params.flat.device
    out = []
    for i in range(0, len(x), batch_size):
        xb = network_input(x[i : i + batch_size].to(device))
        out.append(model(xb.unsqueeze(0).expand(seeds, *xb.shape)))
    return torch.cat(out, dim=1)


# --- training -----------------------------------------------------------------------------------


class StackedTrainer:
    """A training step and evaluation for S seeds of one network.

    Args:
        network: The network (an ``nn.Module`` whose class is in :data:`STACKED`), or a key of
            :data:`trustcal.training.models.ARCHITECTURES` for the paper's network of that dataset.
        states: Each seed's ``state_dict`` to start from.
        device: Where to train.
        lr, betas, eps: Adam's settings.
        graphs: Replay the step from a CUDA graph (:class:`~.graphs.GraphedStep`); default: on a CUDA device.
    """

    def __init__(
        self, network: str | nn.Module, states: Sequence[dict], device: torch.device, lr, betas, eps, graphs=None
    ):
        self.model = stacked_model(network, states, device)
        self.params = self.model.params
        self.optimizer = FlatAdam(self.params.flat, lr, betas, eps)
        self.graphs = torch.device(device).type == "cuda" if graphs is None else graphs
        opt = self.optimizer
        self._graphed = GraphedStep(self.eager_step, [self.params.flat, opt.exp_avg, opt.exp_avg_sq, opt.steps])

    def step(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One Adam step on x (S, B, …) float in [0, 1], labels y (S, B); returns (loss per seed, logits), which
        the next step may overwrite (a CUDA graph's outputs)."""
        return self._graphed(x, y) if self.graphs else self.eager_step(x, y)

    def eager_step(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`step`, one operation after the other."""
        self.optimizer.zero_grad()
        loss, logits = self.model.loss_and_gradients(x, y)  # forward, loss, backward
        self.optimizer.step()
        return loss, logits

    def logits(self, x: torch.Tensor, batch_size: int = 256) -> torch.Tensor:
        """Logits (S, N, classes) of the same uint8 images x (N, …) under every seed's parameters."""
        return stacked_logits(self.model, x, batch_size)

    def seed_checkpoint(self, s: int) -> tuple[dict, dict]:
        """(model state_dict, optimiser state) of seed ``s``: the network's names, Adam's step and moments."""
        opt = self.optimizer.state_dict()
        opt = dict(
            step=opt["step"],
            exp_avg=self.params.seed_vector(s, opt["exp_avg"]),
            exp_avg_sq=self.params.seed_vector(s, opt["exp_avg_sq"]),
        )
        return self.params.seed_state(s), opt

    def load_optimizer(self, states: Sequence[dict]) -> None:
        """Adam's state from each seed's checkpoint (all at the same step)."""
        steps = {st["step"] for st in states}
        if len(steps) != 1:
            raise ValueError(f"seeds trained together must be at the same step (got {sorted(steps)})")
        self.optimizer.load_state_dict(
            dict(
                step=steps.pop(),
                exp_avg=self.params.stack_vectors([st["exp_avg"] for st in states]),
                exp_avg_sq=self.params.stack_vectors([st["exp_avg_sq"] for st in states]),
            )
        )
