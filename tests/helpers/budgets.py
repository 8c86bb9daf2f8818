"""Float32 error budgets of training: a float64 run of the same steps and how far a float32 run of them may
lie from it (tests/unit/training/test_engine.py, tests/gpu/).

Tolerances: every float32 run is compared with the same steps in float64
(same initial parameters, same float32 inputs), and must stay within an error
budget derived from float32's machine epsilon ε = torch.finfo(torch.float32).eps,
the sizes of the network's sums, Adam's lr, β1, β2 and ε̂ (1e-7, Keras' default)
and the number of steps -- never from what one CPU happened to give. Two float32
implementations then agree to the sum of their budgets. The derivation:

1. A K-term sum (dot product, convolution, batch reduction) rounds each partial
   sum with a relative error ≤ ε/2. Its terms have random signs, so partial
   sums are of the size of the result, and the errors are of random sign: by
   Hoeffding's inequality the total exceeds λ·sqrt(K)·ε times the result's size
   (ε rather than ε/2: a factor 2 to spare) with probability ≤ 2·exp(-λ²/2) (the probabilistic error analysis of Higham
   & Mary, SIAM J. Sci. Comput. 41, 2019). LAMBDA makes that one in a million
   over 10⁷ checked values (union bound). The order of summation (blocking, FMA,
   threads: what differs between CPUs and kernels) only changes which errors occur.
   A kernel that rounds its operands to TF32 (a GPU's convolutions) adds ε_tf32.
2. Forward: the relative errors of successive layers add (to first order; ReLU
   and max-pooling are 1-Lipschitz and add none), so every logit is within
   η_fwd·max|z|, η_fwd = λ·ε·(Σ_layers sqrt(fan-in + 1)). Cross-entropy is
   2-Lipschitz in the logits' max-norm: a loss is within 2·η_fwd·max|z| plus
   λ·ε·(sqrt(C) + sqrt(B))·(1 + L) for the softmax's sum and the batch mean.
3. Backward: a parameter's gradient adds the softmax's sum, the backward sums of
   the layers above it (fan-out) and its own reduction over batch × output
   positions: every element is within e = η_P·max|g_P| of the exact one. The
   bound is norm-wise: an element near zero can be wrong by 100 %.
4. Adam's update is u_t = m̂_t/(sqrt(v̂_t) + ε̂). For any gradients,
   |m̂_t| ≤ ρ_t·sqrt(v̂_t) (Cauchy-Schwarz; ρ_t = adam_update_bound(t) ≈ 1 for
   t ≤ 10), so two runs' updates differ by at most 2ρ_t, i.e. 2·n·lr after n
   steps. Gradients that differ by at most e_k move m̂_t by at most μ_t and
   sqrt(v̂_t) by at most σ_t (triangle inequality), so the updates differ by at
   most min(2ρ_t, (μ_t + ρ_t·σ_t)/(max(sqrt(v̂_t) - σ_t, 0) + ε̂)) (adam_tolerance).
   This is where rounding meets Adam's normalisation: an element whose gradient
   is at the rounding level (sqrt(v̂) ≲ σ) may move by up to 2ρ_t·lr a step, as
   one of 65,536 CNN weights did on an AMD EPYC (by 2.5e-5: its only non-zero
   gradient, -1.5e-9 in float64, came out 1.6e-10 and -2.8e-9); an element with a clear gradient moves by
   lr·(μ + ρσ)/sqrt(v̂), far less. The update's own roundings (about 12 a step,
   and m, v carried in float32) and the rounding of θ - lr·u add
   lr·ρ_t·(12 + 2t)·ε + ε·|θ|.
5. A loss after some steps also sees the parameters' differences: to first
   order Σ|∂L/∂θ|·budget(θ).

Assumption: the float32 runs compute their gradients at their own parameters;
the budget treats those as the float64 gradients plus rounding (first order: the
parameters differ by rounding except where the gradients are at the rounding
level too). Where a gradient stays clear of the rounding level the budget is
1e-6..3e-5 (the parameters move by up to 5e-3 in five steps); elsewhere it rises
to 2·n·lr -- for about half the CNN's parameters, whose gradient is zero (a
ReLU dead for a whole batch) in some step, as the norm-wise model of 3. cannot
tell a structural zero from a rounded one. Later losses inherit that through 5.
A learning rate 1 % off, a bias not updated, two batches swapped or a step
skipped still exceed the budgets hundreds of times (test_a_wrong_step_exceeds_the_budget).
"""

import functools
import math
from types import SimpleNamespace

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from helpers.training import EPS32, LAMBDA  # LAMBDA: (1.) ≈ 7.8, 2·exp(-λ²/2)·1e7 checked values = 1e-6
from trustcal.training.models import build_model

EPS_TF32 = 2.0**-10  # TF32 keeps 10 of float32's 23 mantissa bits
LR, BETAS, ADAM_EPS = 1e-3, (0.9, 0.999), 1e-7  # the project's Adam: Keras' defaults


def adam_update_bound(t, betas=BETAS):
    """ρ_t with |m̂_t| ≤ ρ_t·sqrt(v̂_t) whatever the gradients g_1..g_t (4.).

    Cauchy-Schwarz on m_t = Σ_k (1-β1)·β1^(t-k)·g_k against v_t = Σ_k (1-β2)·β2^(t-k)·g_k²;
    ρ_1 = 1, ρ_5 ≈ 1.01, ρ_8 ≈ 1.03 (→ 7.3 for t → ∞).
    """
    b1, b2 = betas
    return (1 - b1) / (1 - b1**t) * math.sqrt((1 - b2**t) / (1 - b2) * sum((b1 * b1 / b2) ** k for k in range(t)))


def adam_tolerance(t, grad_errors, sqrt_vhat, lr=LR, betas=BETAS, eps=ADAM_EPS):
    """How differently step t of Adam may move each parameter in two runs (4.).

    ``grad_errors[k - 1]`` bounds the difference of the runs' gradients at step
    k ≤ t; ``sqrt_vhat`` is one run's sqrt(v̂_t). With μ_t and σ_t the most those
    differences can change m̂_t and sqrt(v̂_t), the updates lr·m̂/(sqrt(v̂) + ε̂)
    differ by at most lr·min(2ρ_t, (μ_t + ρ_t·σ_t)/(max(sqrt(v̂_t) - σ_t, 0) + ε̂)),
    plus lr·ρ_t·(12 + 2t)·ε for the update's own float32 roundings.
    """
    b1, b2 = betas
    rho = adam_update_bound(t, betas)
    mu = sum((1 - b1) * b1 ** (t - k) * e for k, e in enumerate(grad_errors, 1)) / (1 - b1**t)
    sigma = math.sqrt(sum((1 - b2) * b2 ** (t - k) * e * e for k, e in enumerate(grad_errors, 1)) / (1 - b2**t))
    du = ((mu + rho * sigma) / ((sqrt_vhat - sigma).clamp(min=0) + eps)).clamp(max=2 * rho)
    return lr * (du + (12 + 2 * t) * EPS32 * rho)


class Float64Reference:
    """The textbook loop (nn.Module + torch.optim.Adam) in float64, with the budgets of float32 runs of its steps."""

    def __init__(
        self, dataset, state, lr=LR, betas=BETAS, eps=ADAM_EPS, tf32_conv=False, tf32_matmul=False, model=None
    ):
        self.model = (build_model(dataset) if model is None else model).double()
        self.model.load_state_dict({k: v.double() for k, v in state.items()})
        self.lr, self.betas, self.eps = lr, betas, eps
        self.opt = torch.optim.Adam(self.model.parameters(), lr=lr, betas=betas, eps=eps)
        self.params = dict(self.model.named_parameters())
        self.budget = {n: torch.zeros_like(p, requires_grad=False) for n, p in self.params.items()}
        self.grad_errors = {n: [] for n in self.params}
        self.sums = {}  # layer → (fan-in + 1, fan-out, terms of its gradient's sum, ε of TF32 operands), in forward order
        for name, layer in self.model.named_children():
            if isinstance(layer, (nn.Linear, nn.Conv2d)):
                tf32 = tf32_conv if isinstance(layer, nn.Conv2d) else tf32_matmul
                layer.register_forward_hook(functools.partial(self._count_sums, name, EPS_TF32 if tf32 else 0.0))

    def _count_sums(self, name, eps_operands, layer, inputs, out):
        if isinstance(layer, nn.Conv2d):
            area = layer.kernel_size[0] * layer.kernel_size[1]
            fan_in, fan_out = layer.in_channels * area, layer.out_channels * area
        else:
            fan_in, fan_out = layer.in_features, layer.out_features
        self.sums[name] = (fan_in + 1, fan_out, out[:, 0].numel(), eps_operands)

    @staticmethod
    def _relative_error(*sums):
        """(1.) of a chain of (terms, ε of TF32 operands) sums."""
        return LAMBDA * sum(math.sqrt(k) * EPS32 + eps_operands for k, eps_operands in sums)

    def eta_forward(self):
        return self._relative_error(*[(k, e) for k, _, _, e in self.sums.values()])

    def eta_gradients(self, classes):
        """η_P of every parameter tensor (3.)."""
        layers = list(self.sums)
        forward = [(k, e) for k, _, _, e in self.sums.values()] + [(classes, 0.0)]
        eta = {}
        for j, name in enumerate(layers):
            above = [(self.sums[m][1], self.sums[m][3]) for m in layers[j + 1 :]]
            own = (self.sums[name][2], self.sums[name][3])
            eta[f"{name}.weight"] = eta[f"{name}.bias"] = self._relative_error(*forward, *above, own)
        return eta

    def loss(self, x, y):
        """The batch's loss, the budget of a float32 run's loss of it (2., 5.) and the gradient."""
        z = self.model(x.double())
        loss = F.cross_entropy(z, y)
        grads = dict(zip(self.params, torch.autograd.grad(loss, list(self.params.values()))))
        b, self.classes = z.shape
        rounding = 2 * self.eta_forward() * z.abs().max().item()
        rounding += LAMBDA * EPS32 * (math.sqrt(self.classes) + math.sqrt(b)) * (1 + loss.item())
        drift = sum((g.abs() * self.budget[n]).sum().item() for n, g in grads.items())
        return loss.item(), rounding + drift, grads

    def step(self, x, y):
        """One Adam step: (loss, its budget); the parameters' budgets grow by the step's (4.)."""
        loss, loss_budget, grads = self.loss(x, y)
        eta = self.eta_gradients(self.classes)
        for n, p in self.params.items():
            p.grad = grads[n]
        self.opt.step()
        with torch.no_grad():
            for n, p in self.params.items():
                t = int(self.opt.state[p]["step"])
                self.grad_errors[n].append(eta[n] * grads[n].abs().max().item())
                sqrt_vhat = (self.opt.state[p]["exp_avg_sq"] / (1 - self.betas[1] ** t)).sqrt()
                self.budget[n] += adam_tolerance(t, self.grad_errors[n], sqrt_vhat, self.lr, self.betas, self.eps)
                self.budget[n] += EPS32 * p.abs()  # rounding of θ - lr·u
        return loss, loss_budget

    @torch.no_grad()
    def logits(self, x):
        """Logits, and the budget of float32 logits computed from the same parameters (2.)."""
        z = self.model(x.double())
        return z, self.eta_forward() * z.abs().max().item()


def float64_training(cfg, data, tf32_conv=False, tf32_matmul=False):
    """train()'s steps for ``cfg`` in float64 -- same initialisation, shuffling and batches -- and the budgets."""
    torch.manual_seed(cfg.seed)
    init = build_model(cfg.dataset, cfg.init).state_dict()
    exact = Float64Reference(cfg.dataset, init, cfg.learning_rate, cfg.betas, cfg.eps, tf32_conv, tf32_matmul)
    shuffle = torch.Generator().manual_seed(cfg.seed)
    x, y = torch.from_numpy(data["x_train"]), torch.from_numpy(data["y_train"])
    x_val, y_val = torch.from_numpy(data["x_val"]).float() / 255, torch.from_numpy(data["y_val"])
    history = dict(train_loss=[], val_loss=[])
    budgets = dict(train_loss=[], val_loss=[])
    for _ in range(cfg.epochs):
        order = torch.randperm(len(x), generator=shuffle)
        batches = [order[i : i + cfg.batch_size] for i in range(0, len(x), cfg.batch_size)]
        losses, loss_budgets = zip(*(exact.step(x[i].float() / 255, y[i]) for i in batches))
        history["train_loss"].append(np.mean(losses))  # the epoch's mean batch loss (+ the mean's rounding)
        budgets["train_loss"].append(np.mean(loss_budgets) + LAMBDA * EPS32 * math.sqrt(len(losses)) * np.mean(losses))
        loss, budget, _ = exact.loss(x_val, y_val)
        history["val_loss"].append(loss)
        budgets["val_loss"].append(budget)
    return SimpleNamespace(exact=exact, history=history, budgets={k: np.array(v) for k, v in budgets.items()})


def _float64(values):
    if isinstance(values, torch.Tensor):
        return values.detach().cpu().double()
    return torch.tensor(np.array(values, dtype=np.float64))


def assert_within(got, want, budget, what):
    """|got - want| ≤ budget, elementwise (budget: a number or of want's shape)."""
    got, want = _float64(got), _float64(want)
    budget = torch.broadcast_to(_float64(budget), want.shape)
    diff = (got - want).abs()
    ratio = torch.where(diff == 0, 0.0, diff / budget)
    if ratio.max() > 1:
        i = int(ratio.argmax())
        where = tuple(int(j) for j in np.unravel_index(i, tuple(want.shape)))
        raise AssertionError(
            f"{what}: {int((ratio > 1).sum())} of {want.numel()} values outside the float32 budget; the worst at "
            f"{where}: {got.flatten()[i]:.9g} vs {want.flatten()[i]:.9g}, difference {diff.flatten()[i]:.3g} = "
            f"{ratio.flatten()[i]:.3g} × the budget {budget.flatten()[i]:.3g}"
        )


def check_training(what, history, state, want_history, want_state, run, scale=1):
    """A train() run's losses and parameters against ``want`` within ``scale`` × the budget of float64 ``run``."""
    for key in ("train_loss", "val_loss"):
        assert_within(history[key], want_history[key], scale * run.budgets[key], f"{what}: {key}")
    for name, budget in run.exact.budget.items():
        assert_within(state[name], want_state[name], scale * budget, f"{what}: {name}")


def check_seeds_together_equal_alone(tmp_path, dataset, device="cpu"):
    """Three seeds trained together for two epochs on ``device``, and each alone: each within its float32 budget of
    the float64 steps (4., 5.), so within twice it of each other."""
    from helpers.training import splits, train
    from trustcal.training.checkpoints import checkpoint_path, load_checkpoint
    from trustcal.training.config import TrainConfig
    from trustcal.training.loop import train_seeds

    data = splits(dataset, n_train=128, n_val=32)
    seeds = [0, 1, 2]
    cfgs = [TrainConfig(dataset, seed=s, epochs=2, device=device) for s in seeds]
    together = train_seeds(cfgs, data, [tmp_path / f"together{s}" for s in seeds])
    for s, hist in zip(seeds, together):
        alone = train(TrainConfig(dataset, seed=s, epochs=2, device=device), data, tmp_path / f"alone{s}")
        run = float64_training(TrainConfig(dataset, seed=s, epochs=2), data)
        a = load_checkpoint(checkpoint_path(tmp_path / f"together{s}", 2))
        b = load_checkpoint(checkpoint_path(tmp_path / f"alone{s}", 2))
        check_training(f"seed {s} together vs float64", hist, a["model"], run.history, run.exact.params, run)
        check_training(f"seed {s} alone vs float64", alone, b["model"], run.history, run.exact.params, run)
        check_training(f"seed {s} together vs alone", hist, a["model"], alone, b["model"], run, scale=2)
        assert a["fingerprint"]["seed_group"] == seeds and b["fingerprint"]["seed_group"] == []
