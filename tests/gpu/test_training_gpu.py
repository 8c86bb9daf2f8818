"""Training and logits on a CUDA GPU (issue: training at the speed of the node it lands on).

Collected everywhere, run only where PyTorch sees a CUDA GPU (``benchmarks/gpu_check.sh`` runs them on a GPU
node); elsewhere each is skipped with the reason. Tolerances are derived as in tests/helpers/budgets.py: a float32
run against the same steps in float64, within the budget of float32's roundings; two float32 runs (CPU and GPU)
within the sum of their budgets. Where no budget is written out (the residual networks' logits), the GPU's
distance from float64 is held to 4× the CPU's, measured on the same inputs: both are float32 evaluations of one
function, whose rounding error the CPU's distance measures, and the bound of a sum's error does not depend on
its order (tests/helpers/budgets.py, 1.: λ·√K·ε whatever the blocking), so 4× leaves the order's factor and
TF32 (10 bits) would exceed it by ~2¹³. Every run uses ``deterministic: true`` (the configuration's default):
deterministic algorithms, no TF32.
"""

import math

import numpy as np
import pytest
import torch
from helpers.budgets import assert_within, check_seeds_together_equal_alone, check_training, float64_training
from helpers.training import EPS32, image_splits, splits, train

import trustcal.training.engine as engine
from trustcal import registry
from trustcal.training.checkpoints import checkpoint_path, load_checkpoint
from trustcal.training.config import TrainConfig, complete_config, setup_config
from trustcal.training.loop import compute_logits, train_seeds
from trustcal.training.plain import plain_model

NO_GPU = (
    f"no CUDA GPU: PyTorch {torch.__version__} sees none here (CUDA build: {torch.version.cuda}); "
    "benchmarks/gpu_check.sh runs these on a GPU node"
)
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason=NO_GPU)]

# every registered network with the recipe the study trains it with: the paper's two in the stacked engine,
# the others in the plain loop (Nesterov SGD, cosine schedule, crops and flips, standardised inputs)
NETWORK_RECIPES = {"paper_mlp": "paper", "paper_cnn": "paper", "lenet5": "sgd", "resnet20": "sgd", "wrn16_4": "sgd"}


def network_config(network, seed, epochs, device="cuda", deterministic=True):
    setup = registry.Setup(
        f"gpu_{network}", registry.DATASETS["cifar10"], network, (), registry.RECIPES[NETWORK_RECIPES[network]]
    )
    return setup_config(setup, seed, epochs, device=device, deterministic=deterministic)


def states_equal(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_the_registry_lists_no_network_these_tests_leave_out():
    assert set(NETWORK_RECIPES) == set(registry.NETWORKS)


@pytest.mark.parametrize("network", NETWORK_RECIPES)
def test_every_network_trains_two_epochs_on_the_gpu_and_its_logits_equal_the_cpus(tmp_path, network):
    """Two epochs on the GPU, a checkpoint per epoch that loads on a machine without one, and the logits of the
    GPU's forward pass within float32 rounding of the CPU's for the same checkpoint."""
    data = image_splits((3, 32, 32), n_train=256, n_val=64, n_test=64)
    cfg = network_config(network, 0, 2)
    [history] = train_seeds([cfg], data, [tmp_path])
    assert history["epoch"].tolist() == [1, 2]
    assert np.isfinite(history[["train_loss", "val_loss"]].to_numpy()).all()
    state = load_checkpoint(checkpoint_path(tmp_path, 2))  # map_location="cpu": readable without a GPU
    assert all(v.device.type == "cpu" for v in state["model"].values())

    ckpt, done = checkpoint_path(tmp_path, 2), complete_config(cfg, data)
    gpu = compute_logits(ckpt, done, data, device="cuda")["test_logits"]
    cpu = compute_logits(ckpt, done, data, device="cpu")["test_logits"]
    model = plain_model(done).double()  # float64: the exact forward pass of the same parameters
    model.load_state_dict({k: v.double() if v.is_floating_point() else v for k, v in state["model"].items()})
    model.eval()
    with torch.no_grad():
        exact = model(torch.from_numpy(data["x_test"]).double() / 255).numpy()
    cpu_error = np.abs(cpu - exact).max()
    floor = EPS32 * np.abs(exact).max()  # a forward pass with no rounding at all on the CPU (not expected)
    assert np.abs(gpu - exact).max() <= 4 * max(cpu_error, floor), (
        f"{network}: the GPU's logits lie {np.abs(gpu - exact).max():.3g} from float64, the CPU's {cpu_error:.3g}"
    )


@pytest.mark.parametrize("dataset", ["mnist", "cifar10"])
def test_one_epoch_on_the_gpu_matches_the_cpu(tmp_path, dataset):
    """The paper's network from the same weights on the CPU and on the GPU: each within its float32 budget of the
    float64 steps, so within the sum of both of each other."""
    data = splits(dataset)
    cfg = lambda device: TrainConfig(dataset, seed=0, epochs=1, device=device)  # noqa: E731
    cpu = train(cfg("cpu"), data, tmp_path / "cpu")
    gpu = train(cfg("cuda"), data, tmp_path / "gpu")
    assert not torch.backends.cudnn.allow_tf32 and not torch.backends.cuda.matmul.allow_tf32  # deterministic
    run = float64_training(cfg("cpu"), data)
    for key in ("train_loss", "val_loss"):
        assert_within(cpu[key], run.history[key], run.budgets[key], f"cpu vs float64: {key}")
        assert_within(gpu[key], run.history[key], run.budgets[key], f"gpu vs float64: {key}")
        assert_within(gpu[key], cpu[key], 2 * run.budgets[key], f"gpu vs cpu: {key}")
    a = load_checkpoint(checkpoint_path(tmp_path / "cpu", 1))["model"]
    b = load_checkpoint(checkpoint_path(tmp_path / "gpu", 1))["model"]
    for name, budget in run.exact.budget.items():
        assert_within(b[name], a[name], 2 * budget, f"gpu vs cpu: {name}")


@pytest.mark.parametrize("dataset", ["mnist", "cifar10"])
def test_seeds_trained_together_on_the_gpu_equal_each_seed_alone(tmp_path, dataset):
    check_seeds_together_equal_alone(tmp_path, dataset, "cuda")


@pytest.mark.parametrize("network", ["paper_mlp", "paper_cnn", "resnet20"])
def test_a_killed_and_resumed_run_on_the_gpu_equals_an_uninterrupted_one_bit_for_bit(tmp_path, network):
    """In deterministic mode: three epochs at once, and one epoch, then a new process's worth of state (the
    checkpoint) resumed to three: the same parameters, optimiser state and validation logits, to the bit."""
    data = image_splits((3, 32, 32), n_train=256, n_val=64, n_test=64)
    seeds = [0, 1] if network != "resnet20" else [0]  # the paper's networks: two seeds stacked
    train_seeds([network_config(network, s, 3) for s in seeds], data, [tmp_path / f"a{s}" for s in seeds])
    train_seeds([network_config(network, s, 1) for s in seeds], data, [tmp_path / f"b{s}" for s in seeds])
    train_seeds([network_config(network, s, 3) for s in seeds], data, [tmp_path / f"b{s}" for s in seeds])
    for s in seeds:
        a = load_checkpoint(checkpoint_path(tmp_path / f"a{s}", 3))
        b = load_checkpoint(checkpoint_path(tmp_path / f"b{s}", 3))
        assert states_equal(a["model"], b["model"]), f"{network} seed {s}: parameters differ after the resume"
        assert torch.equal(a["val_logits"], b["val_logits"])


def test_the_fast_mode_trains_and_says_so_in_pytorchs_flags(tmp_path):
    """``deterministic: false``: cuDNN benchmarks its algorithms and TF32 is allowed; the run trains all the same
    (its losses within TF32's rounding of a deterministic run's: 2⁻¹⁰ relative per product, a few products deep)."""
    data = image_splits((3, 32, 32), n_train=256, n_val=64, n_test=64)
    [fast] = train_seeds([network_config("resnet20", 0, 1, deterministic=False)], data, [tmp_path / "fast"])
    assert torch.backends.cudnn.benchmark and torch.backends.cudnn.allow_tf32
    assert not torch.are_deterministic_algorithms_enabled()
    [exact] = train_seeds([network_config("resnet20", 0, 1)], data, [tmp_path / "exact"])
    assert torch.are_deterministic_algorithms_enabled() and not torch.backends.cudnn.benchmark
    assert math.isfinite(fast["train_loss"][0])
    assert abs(fast["train_loss"][0] - exact["train_loss"][0]) <= 0.05 * exact["train_loss"][0]


@pytest.mark.parametrize("dataset", ["mnist", "cifar10"])
def test_steps_replayed_from_a_cuda_graph_equal_eager_steps(tmp_path, monkeypatch, dataset):
    """The stacked engine's step from a CUDA graph (trustcal.training.graphs) against the same steps run one
    kernel after the other: each within its float32 budget of the float64 steps; and the graph was replayed."""
    data = splits(dataset, n_train=250, n_val=32)  # 250 = 7 batches of 32 and one of 26 (eager in both)
    cfg = TrainConfig(dataset, seed=0, epochs=2, device="cuda")
    made = []
    init = engine.GraphedStep.__init__
    monkeypatch.setattr(engine.GraphedStep, "__init__", lambda self, *a: (made.append(self), init(self, *a))[1])
    graphed = train(cfg, data, tmp_path / "graphed")
    assert len(made) == 1 and made[0].graph is not None and made[0].replays == 2 * 7
    monkeypatch.setattr(engine.GraphedStep, "__call__", lambda self, x, y: self.step(x, y))
    eager = train(cfg, data, tmp_path / "eager")
    run = float64_training(cfg, data)
    a = load_checkpoint(checkpoint_path(tmp_path / "graphed", 2))["model"]
    b = load_checkpoint(checkpoint_path(tmp_path / "eager", 2))["model"]
    check_training("graphed vs float64", graphed, a, run.history, run.exact.params, run)
    check_training("graphed vs eager", graphed, a, eager, b, run, scale=2)
