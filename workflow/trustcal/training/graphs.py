"""A training step replayed from a CUDA graph: on a GPU, the stacked engine's step without the host's cost per
operation.

Why: on a GPU the paper's networks are small enough that a step's cost is the host's, not the GPU's: each of
a step's ~20 (MLP) to ~60 (CNN) kernels costs PyTorch's dispatch and a launch on the CPU while the GPU idles.
On an H200 an MLP step took 1.09 ms eagerly, whatever the number of seeds, for about 6 µs of arithmetic
(benchmarks/README.md, "Training on a GPU"). A CUDA graph records the step's kernels once and replays them
with one launch.

How, so that nothing changes but the speed:

- the step (forward, loss, backward, Adam) is captured once per trainer for the batch shape of the epoch's
  full batches, and replayed for every such batch after its images and labels are copied into the graph's
  inputs; a batch of another shape (the epoch's last, smaller one) runs eagerly, in every run alike;
- capturing needs a few eager warm-up steps first (PyTorch's rule, on a side stream). They are run on the
  first batch and then undone (:attr:`GraphedStep.state` restored), so every full batch's step is the
  graph's, in an uninterrupted run and in a resumed one alike: a resume stays bit for bit;
- outputs are the graph's own tensors, overwritten by the next replay: read them before the next step (the
  training loop adds them to its sums at once);
- a capture that fails (a PyTorch or driver without graph support for one of the step's kernels) is logged
  once, and the trainer steps eagerly from then on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import torch

log = logging.getLogger(__name__)

WARMUP_STEPS = 3  # eager steps before a capture (PyTorch's examples use 3; 11 for DistributedDataParallel)


class GraphedStep:
    """``step(x, y)`` through a CUDA graph for batches of one shape, eagerly for any other.

    Args:
        step: The eager step, ``step(x, y) -> outputs`` (a tensor or a tuple of tensors).
        state: Every tensor the step changes in place (parameters, optimiser moments, its step count): copied
            before the warm-up steps and restored after them.
    """

    def __init__(self, step: Callable, state: Sequence[torch.Tensor]):
        self.step, self.state = step, list(state)
        self.graph: torch.cuda.CUDAGraph | None = None
        self.inputs: tuple[torch.Tensor, torch.Tensor] | None = None
        self.outputs = None
        self.failed = False
        self.replays = 0

    def __call__(self, x: torch.Tensor, y: torch.Tensor):
        if self.graph is None and not self.failed:
            self._capture(x, y)
        if self.graph is None or (x.shape, y.shape) != (self.inputs[0].shape, self.inputs[1].shape):
            return self.step(x, y)
        self.inputs[0].copy_(x)
        self.inputs[1].copy_(y)
        self.graph.replay()
        self.replays += 1
        return self.outputs

    def _capture(self, x: torch.Tensor, y: torch.Tensor) -> None:
        saved = [t.detach().clone() for t in self.state]
        side = torch.cuda.Stream(x.device)
        side.wait_stream(torch.cuda.current_stream(x.device))
        try:
            with torch.cuda.stream(side):
                for _ in range(WARMUP_STEPS):
                    self.step(x, y)
            torch.cuda.current_stream(x.device).wait_stream(side)
            inputs = (x.clone(), y.clone())
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                outputs = self.step(*inputs)
        except RuntimeError as exc:  # e.g. "operation not permitted when stream is capturing"
            self.failed = True
            log.warning("training steps run eagerly on %s: a CUDA graph of the step failed (%s)", x.device, exc)
        else:
            self.graph, self.inputs, self.outputs = graph, inputs, outputs
        torch.cuda.synchronize(x.device)
        with torch.no_grad():
            for t, s in zip(self.state, saved):  # the warm-up steps undone
                t.copy_(s)
