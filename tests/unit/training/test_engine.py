"""The fast training engine against the plain PyTorch reference (docs/method.md §1).

Tolerances: every float32 run is compared with the same steps in float64 within an error budget derived from
float32's machine epsilon, the sizes of the network's sums, Adam's settings and the number of steps, never from
what one CPU happened to give; tests/helpers/budgets.py writes out the derivation (1.–5. below refer to it).
"""

import functools
import platform
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from helpers.budgets import (
    ADAM_EPS,
    BETAS,
    LR,
    Float64Reference,
    adam_update_bound,
    assert_within,
    check_seeds_together_equal_alone,
)
from helpers.training import EPS32, splits, train
from torch import nn

import trustcal.training.engine as engine
from trustcal.training.checkpoints import checkpoint_path, load_checkpoint
from trustcal.training.config import TrainConfig
from trustcal.training.engine import FlatAdam, StackedParameters, StackedTrainer
from trustcal.training.loop import compute_logits, train_seeds
from trustcal.training.models import ARCHITECTURES, build_model


def reference_steps(dataset, init, batches):
    """nn.Module + autograd + torch.optim.Adam (Keras defaults): the textbook loop."""
    model = build_model(dataset)
    model.load_state_dict(init)
    opt = torch.optim.Adam(model.parameters(), lr=LR, betas=BETAS, eps=ADAM_EPS)
    losses = []
    for x, y in batches:
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return model.state_dict(), losses


@functools.cache
def five_steps(dataset):
    """Five batches of random images, initial parameters (seed 7), and the float64 steps on them with budgets."""
    shape = (1, 28, 28) if dataset == "mnist" else (3, 32, 32)
    gen = torch.Generator().manual_seed(0)
    batches = [(torch.rand(32, *shape, generator=gen), torch.randint(0, 10, (32,), generator=gen)) for _ in range(5)]
    torch.manual_seed(7)
    init = build_model(dataset).state_dict()
    exact = Float64Reference(dataset, init)
    losses, loss_budgets = zip(*(exact.step(x, y) for x, y in batches))
    return SimpleNamespace(batches=batches, init=init, exact=exact, losses=losses, loss_budgets=np.array(loss_budgets))


def check_steps(what, losses, state, want_losses, want_state, case, scale=1):
    """Losses and final parameters against ``want`` within ``scale`` × the float32 budget of case's steps."""
    assert_within(losses, want_losses, scale * case.loss_budgets, f"{what}: losses")
    for name, budget in case.exact.budget.items():
        assert_within(state[name], want_state[name], scale * budget, f"{what}: {name}")


@pytest.mark.parametrize("dataset", ["mnist", "cifar10"])
def test_engine_steps_equal_the_reference_steps(dataset):
    """StackedTrainer.step on one seed equals the plain loop (reference_steps: model(x), F.cross_entropy,
    loss.backward(), torch.optim.Adam's step) over five steps, within the float32 budgets."""
    case = five_steps(dataset)
    want, want_losses = reference_steps(dataset, case.init, case.batches)
    trainer = StackedTrainer(dataset, [case.init], torch.device("cpu"), LR, BETAS, ADAM_EPS)
    losses = [trainer.step(x[None], y[None])[0].item() for x, y in case.batches]
    got, _ = trainer.seed_checkpoint(0)
    # each float32 run within its budget of the float64 steps (4., 5.), so within twice it of each other
    check_steps("reference vs float64", want_losses, want, case.losses, case.exact.params, case)
    check_steps("engine vs float64", losses, got, case.losses, case.exact.params, case)
    check_steps("engine vs reference", losses, got, want_losses, want, case, scale=2)


SMALL_NETWORKS = {
    # StackedMLP's form with other sizes, and a network StackedCNN has not met: padding, stride, no final ReLU
    "mlp": (lambda: nn.Sequential(nn.Flatten(), nn.Linear(48, 7), nn.ReLU(), nn.Linear(7, 5)), (3, 4, 4)),
    "cnn": (
        lambda: nn.Sequential(
            nn.Conv2d(2, 4, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(4, 3, 3, stride=2),
            nn.Flatten(),
            nn.Linear(3, 6),
            nn.ReLU(),
            nn.Linear(6, 5),
        ),
        (2, 8, 8),
    ),
}


@pytest.mark.parametrize("kind", SMALL_NETWORKS)
def test_stacked_forms_follow_the_network_they_are_given(kind):
    """The stacked form runs the layers of the network it is given, found from its modules: for two seeds,
    the logits, losses and gradients of one step equal the nn.Module's (float64, autograd) within the
    float32 budgets (2., 3.)."""
    make, shape = SMALL_NETWORKS[kind]
    states = []
    for s in range(2):
        torch.manual_seed(s)
        states.append(make().state_dict())
    template = make()
    stacked_form = {"mlp": engine.StackedMLP, "cnn": engine.StackedCNN}[kind]
    model = stacked_form(template, StackedParameters(template, states, torch.device("cpu")))
    gen = torch.Generator().manual_seed(0)
    x, y = torch.rand(2, 16, *shape, generator=gen), torch.randint(0, 5, (2, 16), generator=gen)
    loss, logits = model.loss_and_gradients(x, y)
    grads = model.params.views(model.params.flat.grad)
    for s in range(2):
        exact = Float64Reference(None, states[s], model=make())
        want_logits, logits_budget = exact.logits(x[s])
        want_loss, loss_budget, want_grads = exact.loss(x[s], y[s])
        assert_within(logits[s], want_logits, logits_budget, f"{kind} seed {s}: logits")
        assert_within(loss[s], want_loss, loss_budget, f"{kind} seed {s}: loss")
        for name, eta in exact.eta_gradients(exact.classes).items():
            g = want_grads[name]
            assert_within(grads[name][s], g, eta * g.abs().max(), f"{kind} seed {s}: gradient of {name}")


def test_every_architecture_has_a_stacked_form():
    for dataset, network in ARCHITECTURES.items():
        model = engine.stacked_model(dataset, [build_model(dataset).state_dict()], torch.device("cpu"))
        assert type(model) is engine.STACKED[network]


def test_stacked_forms_refuse_a_network_they_cannot_run(monkeypatch):
    template = nn.Sequential(nn.Flatten(), nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2))
    params = StackedParameters(template, [template.state_dict()], torch.device("cpu"))
    with pytest.raises(ValueError, match="StackedMLP has no stacked form of Tanh"):
        engine.StackedMLP(template, params)
    with pytest.raises(ValueError, match="StackedCNN has no stacked form of Tanh"):
        engine.StackedCNN(template, params)

    class Other(nn.Sequential):
        def __init__(self):
            super().__init__(nn.Flatten(), nn.Linear(4, 2))

    monkeypatch.setitem(ARCHITECTURES, "other", Other)
    with pytest.raises(ValueError, match="Other: no stacked form in trustcal.training.engine.STACKED"):
        engine.stacked_model("other", [Other().state_dict()], torch.device("cpu"))


def adam_runs(optimizer_of, steps=5, n=1000):
    """(parameters, exp_avg, exp_avg_sq) after each of ``steps`` updates with the same random gradients."""
    gen = torch.Generator().manual_seed(0)
    param = torch.randn(n, generator=gen).requires_grad_(True)
    grads = [torch.randn(n, generator=gen) * 10.0 ** torch.randint(-6, 1, (n,), generator=gen) for _ in range(steps)]
    opt = optimizer_of(param)
    trace = []
    for g in grads:
        opt.zero_grad()
        param.grad = g.clone()
        opt.step()
        state = opt.state_dict() if isinstance(opt, FlatAdam) else opt.state[param]
        trace.append([param.detach().clone(), state["exp_avg"].clone(), state["exp_avg_sq"].clone()])
    return trace


@pytest.mark.skipif(not engine.has_fused_adam(), reason="this PyTorch has no fused Adam kernel")
def test_flat_adam_is_torch_adam_fused_bit_for_bit():
    """FlatAdam calls the kernel of torch.optim.Adam(fused=True) directly: the same numbers, bit for bit."""
    flat = adam_runs(lambda p: FlatAdam(p, LR, BETAS, ADAM_EPS))
    public = adam_runs(lambda p: torch.optim.Adam([p], lr=LR, betas=BETAS, eps=ADAM_EPS, fused=True))
    for t, (a, b) in enumerate(zip(flat, public), 1):
        assert all(torch.equal(u, v) for u, v in zip(a, b)), f"step {t}"


def test_flat_adam_without_the_private_kernel_is_torch_adam(monkeypatch):
    """Where PyTorch lacks torch._fused_adam_, FlatAdam steps a torch.optim.Adam over the same tensor and state:
    its default implementation's numbers bit for bit, and the fused kernel's within Adam's float32
    rounding (4.: lr·ρ_t·(12 + 2t)·ε a step, plus ε·|θ| for θ - lr·u, the gradients being the same)."""
    fused = adam_runs(lambda p: FlatAdam(p, LR, BETAS, ADAM_EPS)) if engine.has_fused_adam() else None
    monkeypatch.setattr(engine, "has_fused_adam", lambda: False)
    fallback = adam_runs(lambda p: FlatAdam(p, LR, BETAS, ADAM_EPS))
    public = adam_runs(lambda p: torch.optim.Adam([p], lr=LR, betas=BETAS, eps=ADAM_EPS, foreach=False))
    for t, (a, b) in enumerate(zip(fallback, public), 1):
        assert all(torch.equal(u, v) for u, v in zip(a, b)), f"step {t}"
    if fused is not None:
        budget = torch.zeros(())
        for t, (a, b) in enumerate(zip(fallback, fused), 1):
            budget = budget + LR * adam_update_bound(t) * (12 + 2 * t) * EPS32 + EPS32 * a[0].abs()
            assert_within(a[0], b[0], budget, f"step {t}: fallback vs fused kernel")


def wrong_steps(dataset, init, batches, mistake):
    """reference_steps with one deliberate mistake."""
    model = build_model(dataset)
    model.load_state_dict(init)
    params = [p for n, p in model.named_parameters() if mistake != "biases not updated" or not n.endswith("bias")]
    lr = 1.01 * LR if mistake == "learning rate 1 % high" else LR
    opt = torch.optim.Adam(params, lr=lr, betas=BETAS, eps=ADAM_EPS)
    if mistake == "batches 4 and 5 swapped":
        batches = [*batches[:3], batches[4], batches[3]]
    losses = []
    for i, (x, y) in enumerate(batches):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        if mistake != "last update skipped" or i < len(batches) - 1:
            opt.step()
        losses.append(loss.item())
    return model.state_dict(), losses


@pytest.mark.parametrize(
    "mistake", ["learning rate 1 % high", "biases not updated", "batches 4 and 5 swapped", "last update skipped"]
)
@pytest.mark.parametrize("dataset", ["mnist", "cifar10"])
def test_a_wrong_step_exceeds_the_budget(dataset, mistake):
    """The budgets are not so loose that they let a real mistake through."""
    case = five_steps(dataset)
    state, losses = wrong_steps(dataset, case.init, case.batches, mistake)
    with pytest.raises(AssertionError, match="outside the float32 budget"):
        check_steps(mistake, losses, state, case.losses, case.exact.params, case)


@pytest.mark.parametrize("dataset", ["mnist", "cifar10"])
def test_seeds_trained_together_equal_each_seed_alone(tmp_path, dataset):
    check_seeds_together_equal_alone(tmp_path, dataset)


def test_seed_group_resume_is_bit_for_bit(tmp_path):
    data = splits("mnist")
    cfg = lambda s, e: TrainConfig("mnist", seed=s, epochs=e)  # noqa: E731
    train_seeds([cfg(0, 3), cfg(1, 3)], data, [tmp_path / "a0", tmp_path / "a1"])
    train_seeds([cfg(0, 1), cfg(1, 1)], data, [tmp_path / "b0", tmp_path / "b1"])
    train_seeds([cfg(0, 3), cfg(1, 3)], data, [tmp_path / "b0", tmp_path / "b1"])
    for s in (0, 1):
        a = load_checkpoint(checkpoint_path(tmp_path / f"a{s}", 3))
        b = load_checkpoint(checkpoint_path(tmp_path / f"b{s}", 3))
        assert all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])
        assert torch.equal(a["optimizer"]["exp_avg_sq"], b["optimizer"]["exp_avg_sq"])


@pytest.mark.parametrize("dataset", ["mnist", "cifar10"])
def test_logits_files_equal_the_nn_module_forward(tmp_path, dataset):
    data = splits(dataset, n_train=64)
    train(TrainConfig(dataset, seed=0, epochs=1), data, tmp_path)
    logits = compute_logits(checkpoint_path(tmp_path, 1), dataset, data)
    state = load_checkpoint(checkpoint_path(tmp_path, 1))["model"]
    model = build_model(dataset)
    model.load_state_dict(state)
    x = torch.from_numpy(data["x_test"]).float() / 255
    with torch.no_grad():
        want = model(x)
    exact, budget = Float64Reference(dataset, state).logits(x)  # the same parameters: forward rounding only (2.)
    assert_within(logits["test_logits"], exact, budget, "compute_logits vs float64")
    assert_within(want, exact, budget, "nn.Module vs float64")
    assert_within(logits["test_logits"], want, 2 * budget, "compute_logits vs nn.Module")
    assert logits["test_labels"].tolist() == data["y_test"].tolist()


FAULTS_SCRIPT = """
import ctypes, ctypes.util, resource, sys, torch
from trustcal.training.engine import StackedTrainer, keep_freed_memory_in_process
from trustcal.training.models import build_model
if sys.argv[1] == "keep":
    assert keep_freed_memory_in_process()
else:  # a fixed 128 KiB mmap threshold: every large block a fresh mapping, as glibc's default gives until it adapts
    assert ctypes.CDLL(ctypes.util.find_library("c")).mallopt(-3, 128 * 1024)
torch.set_num_threads(2)
trainer = StackedTrainer("cifar10", [build_model("cifar10").state_dict()], torch.device("cpu"), 1e-3, (0.9, 0.999), 1e-7)
x, y = torch.rand(1, 32, 3, 32, 32), torch.randint(0, 10, (1, 32))
for _ in range(5):
    trainer.step(x, y)
faults = []
for _ in range(11):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    trainer.step(x, y)
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(sorted(faults)[5])
"""


@pytest.mark.slow  # counts page faults over many steps; the unit tier leaves it out
@pytest.mark.skipif(not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc", reason="glibc only")
def test_kept_freed_memory_spares_the_page_faults_of_every_step():
    """A CNN step frees and reallocates MBs of activations. Served by fresh mappings, they come back as new
    pages (a page fault each, ~1000 a step); with the training process's setting, from the heap.

    The control fixes glibc's mmap threshold at its 128 KiB default instead of leaving it to adapt:
    how many blocks glibc's dynamic threshold still maps afresh depends on the order of frees across
    threads, and was 6 faults a step in one run and ~1000 in another on the same machine.
    """

    def faults_per_step(mode):  # the median step of 11: the claim is about every step, not an arena's first growth
        run = subprocess.run([sys.executable, "-c", FAULTS_SCRIPT, mode], capture_output=True, text=True, check=True)
        return float(run.stdout.split()[-1])

    assert faults_per_step("mmap") > 200
    assert faults_per_step("keep") < 50
