"""Setups (trustcal.registry.Setup) in training: which engine runs them, the plain loop's recipes (optimizer,
schedule, augmentation, normalisation), its checkpoints and resume, the stages with a user's network, and the
fingerprints of the paper's runs (unchanged, so the study's checkpoints resume)."""

import dataclasses
import json
import logging
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from helpers.training import forget_user_package, image_splits, splits, write_user_module

from trustcal import registry
from trustcal.files import write_npz
from trustcal.stages import logits_stage, train_stage
from trustcal.training.checkpoints import checkpoint_path, load_checkpoint
from trustcal.training.config import TrainConfig, complete_config, data_digest, setup_config
from trustcal.training.loop import compute_logits, train_seeds
from trustcal.training.networks import Standardise
from trustcal.training.plain import augment_batch, draw_augmentation, make_optimizer, make_schedule, plain_model

HERE = Path(__file__).parent
# a small network with BatchNorm and dropout (WRN-10-1, dropout 0.3): the plain loop's eval/train modes and the
# random numbers of dropout are part of every run
SMALL_WRN = (("depth", 10), ("dropout", 0.3), ("width", 1))
SGD = registry.RECIPES["sgd"]
# the fingerprint's keys, in the order the code before setups wrote them
PAPER_KEYS = ["dataset", "seed", "batch_size", "learning_rate", "betas", "eps", "init", "seed_group", "data", "engine"]


def setup(network="lenet5", recipe=SGD, dataset="cifar10", kwargs=(), name=None):
    return registry.Setup(name or f"{dataset}_{network}", registry.DATASETS[dataset], network, kwargs, recipe)


def plain_cfg(seed=0, epochs=2, **changes):
    s = setup(**changes)
    return dataclasses.replace(setup_config(s, seed, epochs, device="cpu"), batch_size=16)


def states_equal(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def nested_equal(a, b):
    """Checkpoint contents equal: tensors bit for bit, everything else by ==."""
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(nested_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(nested_equal(x, y) for x, y in zip(a, b))
    return a == b


# --- which engine, and the fingerprints ------------------------------------------------------------


def test_the_papers_fingerprints_are_those_of_the_code_before_setups():
    """paper_fingerprints.json was written by the code before setups (commit 95f898d) for the tiny data of
    helpers.training.splits: the paper's setups, by name or resolved, give the same dicts, so the study's
    checkpoints still resume."""
    want = json.loads((HERE / "paper_fingerprints.json").read_text())
    for dataset in ("mnist", "cifar10"):
        data = splits(dataset)
        old_style = TrainConfig(dataset, seed=0, epochs=3, data=data_digest(data))
        resolved = complete_config(
            dataclasses.replace(setup_config(registry.resolve_setup(dataset), 0, 3), data=data_digest(data)), data
        )
        for cfg in (old_style, resolved):
            assert cfg.stacked
            assert json.loads(json.dumps(cfg.fingerprint())) == want[dataset]
            assert list(cfg.fingerprint()) == PAPER_KEYS  # their order too: the checkpoint's bytes hold it
            grouped = dataclasses.replace(cfg, seed_group=(0, 1)).fingerprint()
            assert json.loads(json.dumps(grouped)) == want[f"{dataset} seeds 0,1"]


def test_other_setups_add_what_differs_from_the_papers():
    data = image_splits((3, 32, 32))
    cfg = complete_config(plain_cfg(network="resnet20"), data)
    fp = cfg.fingerprint()
    assert not cfg.stacked and fp["engine"] == "plain-1"
    assert {k: fp[k] for k in ("network", "optimizer", "nesterov", "weight_decay", "schedule", "augment")} == dict(
        network="resnet20",
        optimizer="sgd",
        nesterov=True,
        weight_decay=5e-4,
        schedule="cosine",
        augment=["crop", "flip"],
    )
    assert fp["normalise"] is True and fp["schedule_epochs"] == 2 and fp["learning_rate"] == 0.1
    assert "momentum" not in fp  # the paper's recipe's 0.9
    # a run other than the paper's own names its shape and classes (for "cifar10" they are left out)
    assert fp["in_shape"] == [3, 32, 32] and fp["num_classes"] == 10 and list(fp)[: len(PAPER_KEYS)] == PAPER_KEYS
    # the paper's network on another dataset, under the paper's recipe: the stacked engine, any classes
    c100 = complete_config(setup_config(setup("paper_cnn", registry.Recipe(), "cifar100", name="cifar100"), 0, 1), data)
    assert c100.stacked and c100.num_classes == 100
    assert {"network": "paper_cnn", "num_classes": 100}.items() <= c100.fingerprint().items()
    assert c100.fingerprint()["engine"] == "stacked-1"


def test_the_papers_network_with_another_number_of_classes_trains_stacked(tmp_path):
    """CIFAR-100's 100 classes (labels 0 … 9 here) in the paper's CNN, two seeds together."""
    data = image_splits((3, 32, 32), n_train=32, n_val=16, n_test=16)
    cfgs = [setup_config(setup("paper_cnn", registry.Recipe(), "cifar100", name="c100"), s, 1) for s in (0, 1)]
    train_seeds(cfgs, data, [tmp_path / "s0", tmp_path / "s1"])
    state = load_checkpoint(checkpoint_path(tmp_path / "s0", 1))
    assert state["fingerprint"]["seed_group"] == [0, 1] and state["model"]["11.weight"].shape == (100, 64)
    assert compute_logits(checkpoint_path(tmp_path / "s1", 1), cfgs[0], data)["test_logits"].shape == (16, 100)


# --- the recipes -------------------------------------------------------------------------------------


def test_sgd_with_a_cosine_schedule_ends_at_zero():
    param = torch.nn.Parameter(torch.zeros(3))
    opt = make_optimizer([param], "sgd", 0.1, momentum=0.9, nesterov=True, weight_decay=5e-4)
    schedule = make_schedule(opt, "cosine", 0.1, total_steps=10)
    lrs = []
    for _ in range(10):
        param.grad = torch.ones(3)
        opt.step()
        schedule.step()
        lrs.append(opt.param_groups[0]["lr"])
    assert lrs[4] == pytest.approx(0.05) and lrs[-1] == pytest.approx(0, abs=1e-12)
    assert all(a > b for a, b in zip(lrs, lrs[1:]))
    opt = make_optimizer([param], "adam", 0.01)
    one = make_schedule(opt, "onecycle", 0.01, total_steps=100)
    peak = []
    for _ in range(100):
        opt.step()
        one.step()
        peak.append(opt.param_groups[0]["lr"])
    assert max(peak) == pytest.approx(0.01) and peak.index(max(peak)) == 28  # warm-up: 0.3·T - 1 = 29 steps


def test_a_cosine_run_ends_at_learning_rate_zero(tmp_path):
    data = image_splits((1, 28, 28), n_train=40, n_val=8, n_test=8)
    cfg = plain_cfg(epochs=2, dataset="mnist")
    train_seeds([cfg], data, [tmp_path])
    state = load_checkpoint(checkpoint_path(tmp_path, 2))
    assert state["scheduler"]["last_epoch"] == 2 * math.ceil(40 / 16)
    assert state["optimizer"]["param_groups"][0]["lr"] == pytest.approx(0, abs=1e-12)
    mid = load_checkpoint(checkpoint_path(tmp_path, 1))["optimizer"]["param_groups"][0]["lr"]
    assert mid == pytest.approx(0.05)  # half way: lr / 2


def test_a_papers_network_under_another_recipe_trains_in_the_plain_loop(tmp_path, caplog):
    """The paper's MLP with Adam and a one-cycle schedule: the plain loop; its checkpoint (the scheduler's
    state included) holds tensors and plain data only; the paper's recipe on the same folder trains afresh."""
    from trustcal.training.checkpoints import checkpoint_problem

    data = splits("mnist", n_train=48, n_val=16, n_test=16)
    recipe = registry.Recipe(schedule="onecycle", learning_rate=0.01)
    cfg = setup_config(setup("paper_mlp", recipe, "mnist", name="mnist"), 0, 1, device="cpu")
    assert not complete_config(cfg, data).stacked
    train_seeds([cfg], data, [tmp_path])
    path = checkpoint_path(tmp_path, 1)
    assert checkpoint_problem(path) is None
    state = torch.load(path, weights_only=True)  # no allowance needed
    assert state["fingerprint"]["schedule"] == "onecycle" and state["scheduler"]["_anneal_func_type"] == "cos"
    assert list(state["model"]) == ["1.weight", "1.bias", "3.weight", "3.bias"]  # the paper's names
    assert compute_logits(path, cfg, data)["test_logits"].shape == (16, 10)
    with caplog.at_level(logging.WARNING, logger="trustcal.training"):
        train_seeds([TrainConfig("mnist", seed=0, epochs=1)], data, [tmp_path])
    assert "schedule 'onecycle' → None" in caplog.text and "engine 'plain-1' → 'stacked-1'" in caplog.text
    assert load_checkpoint(path)["fingerprint"]["engine"] == "stacked-1"


def test_augmentation_is_drawn_from_the_seeds_generator():
    """The same seed draws the same crops and flips; another seed, or the next epoch, others."""

    def epoch_draws(seed, epochs=2):
        gen = torch.Generator().manual_seed(seed)
        return [draw_augmentation(500, (32, 32), ("crop", "flip"), gen) for _ in range(epochs)]

    a, b, other = epoch_draws(0), epoch_draws(0), epoch_draws(1)
    for key in ("offsets", "flips"):
        assert torch.equal(a[0][key], b[0][key]) and torch.equal(a[1][key], b[1][key])
        assert not torch.equal(a[0][key], a[1][key]) and not torch.equal(a[0][key], other[0][key])
    assert a[0]["offsets"].min() == 0 and a[0]["offsets"].max() == 8  # pad 32 // 8 = 4 on each side
    assert 200 < int(a[0]["flips"].sum()) < 300
    assert draw_augmentation(5, (32, 32), (), torch.Generator()) == {}


def test_crop_and_flip_keep_shapes_and_move_pixels():
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(6, 3, 28, 28, generator=gen)
    draws = draw_augmentation(6, (28, 28), ("crop", "flip"), gen)
    out = augment_batch(x, draws)
    assert out.shape == x.shape
    # each sample: its image padded by reflection (3 = 28 // 8) and cropped at its offsets, mirrored if drawn
    padded = np.pad(x.numpy(), ((0, 0), (0, 0), (3, 3), (3, 3)), mode="reflect")
    for i, ((r, c), f) in enumerate(zip(draws["offsets"].tolist(), draws["flips"].tolist())):
        want = padded[i, :, r : r + 28, c : c + 28]
        np.testing.assert_array_equal(out[i].numpy(), want[:, :, ::-1] if f else want)
    centre = {"offsets": torch.full((6, 2), 3), "flips": torch.zeros(6, dtype=torch.bool)}
    assert torch.equal(augment_batch(x, centre), x)


def test_normalisation_is_the_models_first_module(tmp_path):
    """The training split's per-channel mean and sd, as buffers of the model's first module (in the checkpoint)."""
    data = image_splits((3, 32, 32), n_train=48)
    cfg = complete_config(plain_cfg(), data)
    model = plain_model(cfg, data["x_train"])
    assert isinstance(model[0], Standardise)
    x = data["x_train"].astype(np.float64) / 255
    np.testing.assert_allclose(model[0].mean.flatten().numpy(), x.mean(axis=(0, 2, 3)), rtol=1e-6)
    np.testing.assert_allclose(model[0].sd.flatten().numpy(), x.std(axis=(0, 2, 3)), rtol=1e-6)
    train_seeds([cfg], data, [tmp_path])
    state = load_checkpoint(checkpoint_path(tmp_path, 1))["model"]
    assert torch.equal(state["standardise.mean"], model[0].mean) and "network.0.weight" in state


# --- the plain loop ----------------------------------------------------------------------------------


def test_plain_loop_resumes_bit_for_bit(tmp_path, caplog):
    """3 epochs straight, and 2 epochs + 1 resumed, give equal checkpoints, tensor for tensor and byte for
    byte: a network with BatchNorm and dropout, SGD with Nesterov momentum and weight decay, a cosine
    schedule, crops, flips and normalisation (a run that lost its third epoch, resumed); and a constant
    schedule raised from 2 to 3 epochs. A cosine run's number of epochs is its schedule's: raised, it
    trains afresh."""
    data = image_splits((3, 32, 32), n_train=40, n_val=16, n_test=16)
    cfg = lambda epochs, **kw: plain_cfg(epochs=epochs, network="wrn16_4", kwargs=SMALL_WRN, name="c10", **kw)  # noqa: E731
    straight = train_seeds([cfg(3)], data, [tmp_path / "straight"])[0]
    assert set(load_checkpoint(checkpoint_path(tmp_path / "straight", 1))) == {
        "epoch", "model", "optimizer", "scheduler", "shuffle_rng", "augment_rng", "history", "fingerprint",
        "torch_version", "val_logits",
    }  # fmt: skip
    train_seeds([cfg(3)], data, [tmp_path / "resumed"])
    checkpoint_path(tmp_path / "resumed", 3).unlink()  # killed during its third epoch
    with caplog.at_level(logging.INFO, logger="trustcal.training"):
        resumed = train_seeds([cfg(3)], data, [tmp_path / "resumed"])[0]
    assert "seed 0: resuming from" in caplog.text and "epoch002.pt" in caplog.text
    # a constant schedule: a longer run continues from the shorter one's last checkpoint
    const = lambda epochs: dataclasses.replace(cfg(epochs), schedule="constant")  # noqa: E731
    train_seeds([const(3)], data, [tmp_path / "const_straight"])
    train_seeds([const(2)], data, [tmp_path / "const_resumed"])
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="trustcal.training"):
        h = train_seeds([const(3)], data, [tmp_path / "const_resumed"])[0]
    assert "seed 0: resuming from" in caplog.text and list(h["epoch"]) == [1, 2, 3]
    for a, b in (("straight", "resumed"), ("const_straight", "const_resumed")):
        for e in (1, 2, 3):
            pa, pb = checkpoint_path(tmp_path / a, e), checkpoint_path(tmp_path / b, e)
            assert nested_equal(load_checkpoint(pa), load_checkpoint(pb)), (a, e)
            assert pa.read_bytes() == pb.read_bytes(), (a, e)
    columns = ["epoch", "train_loss", "train_accuracy", "val_loss", "val_accuracy"]
    pd.testing.assert_frame_equal(straight[columns], resumed[columns])
    # cosine over 2 epochs, then 3: another schedule, trained afresh
    train_seeds([cfg(2)], data, [tmp_path / "raised"])
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="trustcal.training"):
        train_seeds([cfg(3)], data, [tmp_path / "raised"])
    assert "trained under another configuration (schedule_epochs 2 → 3)" in caplog.text
    assert "resuming from" not in caplog.text
    for e in (1, 2, 3):
        assert (
            checkpoint_path(tmp_path / "raised", e).read_bytes()
            == checkpoint_path(tmp_path / "straight", e).read_bytes()
        )


def test_plain_loop_validates_in_evaluation_mode_and_logits_are_the_same_function(tmp_path):
    """The validation logits of the history (and the checkpoint) are BatchNorm's evaluation-mode ones, the
    function compute_logits runs: recomputed for a checkpoint without them, they are equal."""
    data = image_splits((3, 32, 32), n_train=32, n_val=16, n_test=16)
    cfg = plain_cfg(epochs=1, network="wrn16_4", kwargs=SMALL_WRN, name="c10")
    h = train_seeds([cfg], data, [tmp_path])[0]
    ckpt = checkpoint_path(tmp_path, 1)
    logits = compute_logits(ckpt, cfg, data)
    state = load_checkpoint(ckpt)
    del state["val_logits"]
    torch.save(state, tmp_path / "old.pt")
    recomputed = compute_logits(tmp_path / "old.pt", cfg, data)
    np.testing.assert_array_equal(logits["val_logits"], recomputed["val_logits"])
    val_loss = torch.nn.functional.cross_entropy(
        torch.from_numpy(logits["val_logits"]), torch.from_numpy(data["y_val"])
    )
    assert val_loss.item() == pytest.approx(h["val_loss"].iloc[0], rel=1e-6)
    model = plain_model(complete_config(cfg, data))
    model.load_state_dict(state["model"])
    model.eval()
    with torch.no_grad():
        want = model(torch.from_numpy(data["x_test"]).float() / 255).numpy()
    np.testing.assert_allclose(logits["test_logits"], want, rtol=1e-5, atol=1e-5)  # NCHW here, channels-last there
    model.train()
    with torch.no_grad():
        train_mode = model(torch.from_numpy(data["x_test"]).float() / 255).numpy()
    assert not np.allclose(train_mode, want, atol=1e-3)  # BatchNorm's batch statistics: another function


def test_seeds_of_a_plain_job_train_one_after_the_other_as_alone(tmp_path):
    data = image_splits((1, 28, 28), n_train=32, n_val=8, n_test=8)
    cfgs = [plain_cfg(seed=s, epochs=1, dataset="mnist") for s in (0, 1)]
    train_seeds(cfgs, data, [tmp_path / "a0", tmp_path / "a1"])
    train_seeds(cfgs[1:], data, [tmp_path / "b1"])
    assert checkpoint_path(tmp_path / "a1", 1).read_bytes() == checkpoint_path(tmp_path / "b1", 1).read_bytes()
    assert load_checkpoint(checkpoint_path(tmp_path / "a1", 1))["fingerprint"]["seed_group"] == []
    a0, a1 = (load_checkpoint(checkpoint_path(tmp_path / f"a{s}", 1))["model"] for s in (0, 1))
    assert not states_equal(a0, a1)


# --- the stages ----------------------------------------------------------------------------------


USER_NET = """
from torch import nn

class Net(nn.Module):
    def __init__(self, in_shape, num_classes, width=4):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(in_shape[0], width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
                                      nn.MaxPool2d(4), nn.Flatten())
        self.head = nn.Linear(width * (in_shape[1] // 4) * (in_shape[2] // 4), num_classes)

    def forward(self, x):
        return self.head(self.features(x))
"""


def test_a_users_network_trains_through_the_stages_by_its_import_path(tmp_path, monkeypatch):
    """tmp_path/mynets/net.py's Net, named mynets.net:Net in a setup, trains through train_stage (two seeds,
    one after the other) and gives logits through logits_stage."""
    forget_user_package()
    monkeypatch.syspath_prepend(str(tmp_path))
    module = write_user_module(tmp_path, "net", USER_NET)
    setups = {"mine": {"dataset": "mnist", "network": f"{module}:Net", "network_kwargs": {"width": 3},
                       "recipe": {"preset": "sgd", "batch_size": 16, "learning_rate": 0.05}}}  # fmt: skip
    mine = registry.resolve_setup("mine", setups)
    prepared = tmp_path / "splits.npz"
    write_npz(prepared, **image_splits((1, 28, 28), n_train=48, n_val=16, n_test=24))
    cfg = dict(epochs=2, init="glorot", device="cpu")
    dirs, histories = [tmp_path / "s0", tmp_path / "s1"], [tmp_path / "h0.csv", tmp_path / "h1.csv"]
    try:
        train_stage(mine, [0, 1], cfg, prepared, dirs, histories)
        outputs = [str(tmp_path / "logits" / f"epoch00{e}.npz") for e in (1, 2)]
        logits_stage(mine, prepared, dirs[1], outputs)
    finally:
        forget_user_package()
    h = pd.read_csv(histories[0])
    assert list(h["epoch"]) == [1, 2] and h["val_accuracy"].between(0, 1).all()
    fp = load_checkpoint(checkpoint_path(dirs[0], 2))["fingerprint"]
    assert fp["network"] == "mynets.net:Net" and fp["network_kwargs"] == {"width": 3} and fp["engine"] == "plain-1"
    out = np.load(outputs[1])
    assert out["test_logits"].shape == (24, 10) and out["val_logits"].shape == (16, 10)
    assert np.isfinite(out["test_logits"]).all()


def test_stages_still_take_a_registered_datasets_name(tmp_path):
    """The callers before setups: train_stage("mnist", …) with the configuration's batch size and rate."""
    prepared = tmp_path / "splits.npz"
    write_npz(prepared, **splits("mnist", n_train=64, n_val=16, n_test=16))
    cfg = dict(epochs=1, batch_size=16, learning_rate=2e-3, init="glorot", device="cpu")
    train_stage("mnist", [0], cfg, prepared, [tmp_path / "s0"], [tmp_path / "h.csv"])
    fp = load_checkpoint(checkpoint_path(tmp_path / "s0", 1))["fingerprint"]
    assert fp["batch_size"] == 16 and fp["learning_rate"] == 2e-3 and fp["engine"] == "stacked-1"
    assert "network" not in fp
    logits_stage("mnist", prepared, tmp_path / "s0", [str(tmp_path / "epoch001.npz")])
    assert np.load(tmp_path / "epoch001.npz")["test_logits"].shape == (16, 10)


def test_a_users_dataset_has_the_classes_its_prepared_file_names(tmp_path):
    """A user's dataset (classes unknown to the registry) has the classes splits.npz names, even when its labels
    leave the last one out: 4 logits, not 3."""
    user = registry.resolve_setup(
        "leaves", {"leaves": {"dataset": {"kind": "npz", "path": "x.npz"}, "network": "lenet5"}}
    )
    assert user.dataset.num_classes is None
    prepared = tmp_path / "splits.npz"
    arrays = image_splits((1, 28, 28), n_train=32, n_val=8, n_test=8, classes=3)
    write_npz(prepared, **arrays, classes=np.array(["oak", "ash", "elm", "yew"]))
    cfg = dict(epochs=1, init="glorot", device="cpu")
    train_stage(user, [0], cfg, prepared, [tmp_path / "s0"], [tmp_path / "h.csv"])
    assert load_checkpoint(checkpoint_path(tmp_path / "s0", 1))["fingerprint"]["num_classes"] == 4
    logits_stage(user, prepared, tmp_path / "s0", [str(tmp_path / "epoch001.npz")])
    assert np.load(tmp_path / "epoch001.npz")["test_logits"].shape == (8, 4)
