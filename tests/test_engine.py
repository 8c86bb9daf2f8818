"""The fast training engine against the plain PyTorch reference (SPEC §1)."""

import platform
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from test_train import splits
from trustcal.engine import StackedTrainer
from trustcal.models import build_model
from trustcal.train import TrainConfig, checkpoint_path, compute_logits, load_checkpoint, train, train_seeds


def reference_steps(dataset, seed, batches):
    """nn.Module + autograd + torch.optim.Adam (Keras defaults): the textbook loop."""
    torch.manual_seed(seed)
    model = build_model(dataset)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-7)
    losses = []
    for x, y in batches:
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return model.state_dict(), losses


@pytest.mark.parametrize("dataset", ["mnist", "cifar10"])
def test_engine_steps_equal_the_reference_steps(dataset):
    shape = (1, 28, 28) if dataset == "mnist" else (3, 32, 32)
    gen = torch.Generator().manual_seed(0)
    batches = [(torch.rand(32, *shape, generator=gen), torch.randint(0, 10, (32,), generator=gen)) for _ in range(5)]
    want, want_losses = reference_steps(dataset, 7, batches)
    torch.manual_seed(7)
    trainer = StackedTrainer(dataset, [build_model(dataset).state_dict()], torch.device("cpu"), 1e-3, (0.9, 0.999), 1e-7)
    losses = [trainer.step(x[None], y[None])[0].item() for x, y in batches]
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    got, _ = trainer.seed_checkpoint(0)
    for name, value in want.items():
        torch.testing.assert_close(got[name], value, rtol=1e-4, atol=2e-5)  # Adam normalises tiny gradients


@pytest.mark.parametrize("dataset", ["mnist", "cifar10"])
def test_seeds_trained_together_equal_each_seed_alone(tmp_path, dataset):
    data = splits(dataset, n_train=128, n_val=32)
    seeds = [0, 1, 2]
    cfgs = [TrainConfig(dataset, seed=s, epochs=2) for s in seeds]
    together = train_seeds(cfgs, data, [tmp_path / f"together{s}" for s in seeds])
    for s, hist in zip(seeds, together):
        alone = train(TrainConfig(dataset, seed=s, epochs=2), data, tmp_path / f"alone{s}")
        np.testing.assert_allclose(hist["train_loss"], alone["train_loss"], rtol=1e-5)
        np.testing.assert_allclose(hist["val_loss"], alone["val_loss"], rtol=1e-5)
        a = load_checkpoint(checkpoint_path(tmp_path / f"together{s}", 2))
        b = load_checkpoint(checkpoint_path(tmp_path / f"alone{s}", 2))
        for name in b["model"]:
            torch.testing.assert_close(a["model"][name], b["model"][name], rtol=1e-4, atol=1e-5)
        assert a["fingerprint"]["seed_group"] == seeds and b["fingerprint"]["seed_group"] == []


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


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU on this machine")
@pytest.mark.parametrize("dataset", ["mnist", "cifar10"])
def test_one_epoch_on_the_gpu_matches_the_cpu(tmp_path, dataset):
    data = splits(dataset)
    cpu = train(TrainConfig(dataset, seed=0, epochs=1, device="cpu"), data, tmp_path / "cpu")
    gpu = train(TrainConfig(dataset, seed=0, epochs=1, device="cuda"), data, tmp_path / "gpu")
    np.testing.assert_allclose(gpu["train_loss"], cpu["train_loss"], rtol=1e-3)
    np.testing.assert_allclose(gpu["val_loss"], cpu["val_loss"], rtol=1e-3)


@pytest.mark.parametrize("dataset", ["mnist", "cifar10"])
def test_logits_files_equal_the_nn_module_forward(tmp_path, dataset):
    data = splits(dataset, n_train=64)
    train(TrainConfig(dataset, seed=0, epochs=1), data, tmp_path)
    logits = compute_logits(checkpoint_path(tmp_path, 1), dataset, data)
    model = build_model(dataset)
    model.load_state_dict(load_checkpoint(checkpoint_path(tmp_path, 1))["model"])
    with torch.no_grad():
        want = model(torch.from_numpy(data["x_test"]).float() / 255).numpy()
    np.testing.assert_allclose(logits["test_logits"], want, rtol=1e-4, atol=1e-5)
    assert logits["test_labels"].tolist() == data["y_test"].tolist()


FAULTS_SCRIPT = """
import resource, sys, torch
from trustcal.engine import StackedTrainer, keep_freed_memory_in_process
from trustcal.models import build_model
if sys.argv[1] == "keep":
    assert keep_freed_memory_in_process()
torch.set_num_threads(2)
trainer = StackedTrainer("cifar10", [build_model("cifar10").state_dict()], torch.device("cpu"), 1e-3, (0.9, 0.999), 1e-7)
x, y = torch.rand(1, 32, 3, 32, 32), torch.randint(0, 10, (1, 32))
for _ in range(5):
    trainer.step(x, y)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):
    trainer.step(x, y)
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 10)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc", reason="glibc only")
def test_kept_freed_memory_spares_the_page_faults_of_every_step():
    """A CNN step frees and reallocates MBs of activations; with glibc's defaults they come back as fresh
    pages (a page fault each, ~1000 a step), with the training process's setting from the heap."""

    def faults_per_step(mode):
        proc = subprocess.run([sys.executable, "-c", FAULTS_SCRIPT, mode], capture_output=True, text=True, check=True)
        return float(proc.stdout.split()[-1])

    assert faults_per_step("default") > 200
    assert faults_per_step("keep") < 50
