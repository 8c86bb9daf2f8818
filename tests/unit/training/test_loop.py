"""Training loop (trustcal.training.loop): paper architectures, checkpoints, resume bit for bit (docs/method.md §1)."""

import logging
import math
import os
import pickle
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch
from helpers.payload import Payload
from helpers.training import EPS32, LAMBDA, overwrite_member_start, overwrite_values, splits, train

from trustcal.errors import TrustcalError
from trustcal.files import seal_zip, verify_zip
from trustcal.training.checkpoints import checkpoint_path, load_checkpoint
from trustcal.training.config import TrainConfig, configure_device, resolve_device
from trustcal.training.loop import compute_logits
from trustcal.training.models import build_model, count_parameters


def forward_error_bound(dataset: str, logits: np.ndarray) -> float:
    """How far two float32 forward passes of one model may differ (summation order only):
    λ·ε·Σ_layers √(fan-in + 1) times the largest logit (tests/unit/training/test_engine.py, 2.)."""
    fan_ins = [
        m.in_features if isinstance(m, torch.nn.Linear) else m.in_channels * math.prod(m.kernel_size)
        for m in build_model(dataset).modules()
        if isinstance(m, (torch.nn.Linear, torch.nn.Conv2d))
    ]
    return LAMBDA * EPS32 * sum(math.sqrt(k + 1) for k in fan_ins) * float(np.abs(logits).max())


def states_equal(a, b):
    return all(torch.equal(a[k], b[k]) for k in a)


def test_paper_architectures():
    assert count_parameters(build_model("cifar10")) == 122_570
    assert count_parameters(build_model("mnist")) == 784 * 128 + 128 + 128 * 10 + 10
    assert build_model("cifar10")(torch.zeros(2, 3, 32, 32)).shape == (2, 10)
    assert build_model("mnist")(torch.zeros(2, 1, 28, 28)).shape == (2, 10)


def test_glorot_init_zero_bias_and_bounds():
    torch.manual_seed(0)
    model = build_model("mnist", init="glorot")
    w = model[1].weight
    limit = np.sqrt(6 / (784 + 128))
    assert w.abs().max() <= limit and w.abs().max() > 0.9 * limit
    assert torch.count_nonzero(model[1].bias) == 0
    torch.manual_seed(0)
    assert torch.count_nonzero(build_model("mnist", init="torch")[1].bias) > 0


@pytest.mark.parametrize("dataset", ["mnist", "cifar10"])
def test_learns_and_writes_a_checkpoint_per_epoch(tmp_path, dataset):
    history = train(TrainConfig(dataset, seed=0, epochs=3), splits(dataset), tmp_path)
    assert list(history["epoch"]) == [1, 2, 3]
    assert history["train_loss"].iloc[-1] < history["train_loss"].iloc[0]
    assert history["val_accuracy"].between(0, 1).all()
    for e in (1, 2, 3):
        state = load_checkpoint(checkpoint_path(tmp_path, e))
        assert state["epoch"] == e and {"model", "optimizer", "shuffle_rng", "history"} <= set(state)
    if dataset == "mnist":
        assert history["val_accuracy"].iloc[-1] > 0.5


def test_same_seed_same_checkpoints_and_resume_is_bit_for_bit(tmp_path):
    data = splits("mnist")
    train(TrainConfig("mnist", seed=3, epochs=4), data, tmp_path / "straight")
    train(TrainConfig("mnist", seed=3, epochs=2), data, tmp_path / "resumed")
    h = train(TrainConfig("mnist", seed=3, epochs=4), data, tmp_path / "resumed")
    assert list(h["epoch"]) == [1, 2, 3, 4]
    for e in range(1, 5):
        a = load_checkpoint(checkpoint_path(tmp_path / "straight", e))
        b = load_checkpoint(checkpoint_path(tmp_path / "resumed", e))
        assert states_equal(a["model"], b["model"]), f"epoch {e} differs"
        assert a["history"][-1]["train_loss"] == b["history"][-1]["train_loss"]
    la = compute_logits(checkpoint_path(tmp_path / "straight", 4), "mnist", data)
    lb = compute_logits(checkpoint_path(tmp_path / "resumed", 4), "mnist", data)
    assert np.array_equal(la["test_logits"], lb["test_logits"])
    train(TrainConfig("mnist", seed=4, epochs=1), data, tmp_path / "other")
    assert not states_equal(
        load_checkpoint(checkpoint_path(tmp_path / "other", 1))["model"],
        load_checkpoint(checkpoint_path(tmp_path / "straight", 1))["model"],
    )


def test_raising_epochs_trains_only_the_new_ones(tmp_path, caplog):
    data = splits("mnist")
    train(TrainConfig("mnist", seed=0, epochs=2), data, tmp_path)
    before = {e: checkpoint_path(tmp_path, e).stat().st_mtime_ns for e in (1, 2)}
    with caplog.at_level(logging.INFO, logger="trustcal.training"):
        train(TrainConfig("mnist", seed=0, epochs=3), data, tmp_path)
    trained = [r.message for r in caplog.records if r.message.startswith("epoch")]
    assert len(trained) == 1 and trained[0].startswith("epoch   3/3")
    assert {e: checkpoint_path(tmp_path, e).stat().st_mtime_ns for e in (1, 2)} == before
    # Lowering epochs trains nothing and returns the shorter history.
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="trustcal.training"):
        h = train(TrainConfig("mnist", seed=0, epochs=2), data, tmp_path)
    assert list(h["epoch"]) == [1, 2] and not [r for r in caplog.records if r.message.startswith("epoch")]


def test_progress_bar_over_epochs_only_when_asked(tmp_path, capsys):
    """A terminal gets a bar counting epochs from the resume point; a log (progress off) gets none."""
    from trustcal.training.loop import train_seeds

    data = splits("mnist")
    train_seeds([TrainConfig("mnist", seed=0, epochs=1)], data, [tmp_path])
    assert capsys.readouterr().err == ""
    train_seeds([TrainConfig("mnist", seed=0, epochs=3)], data, [tmp_path], progress=True)
    bar = capsys.readouterr().err.replace("\r", "\n").splitlines()
    assert any(line.startswith("mnist seed 0:") and "3/3" in line and "val_acc=" in line for line in bar), bar
    assert not any("0/3" in line for line in bar), bar  # resumed at epoch 1: the bar starts at 1/3


def test_checkpoints_of_another_configuration_are_not_reused(tmp_path, caplog):
    data = splits("mnist")
    train(TrainConfig("mnist", seed=0, epochs=2), data, tmp_path)
    with caplog.at_level(logging.WARNING, logger="trustcal.training"):
        h = train(TrainConfig("mnist", seed=0, epochs=2, learning_rate=1e-2), data, tmp_path)
    assert "training afresh" in caplog.text
    assert load_checkpoint(checkpoint_path(tmp_path, 2))["fingerprint"]["learning_rate"] == 1e-2
    assert list(h["epoch"]) == [1, 2]


def test_checkpoints_trained_on_other_data_are_not_reused(tmp_path, caplog):
    """Synthetic files replaced by the real archives (or another validation split): train again."""
    synthetic, real = splits("mnist"), splits("mnist")
    real["x_train"] = 255 - real["x_train"]
    train(TrainConfig("mnist", seed=0, epochs=2), synthetic, tmp_path / "run")
    with caplog.at_level(logging.WARNING, logger="trustcal.training"):
        h = train(TrainConfig("mnist", seed=0, epochs=2), real, tmp_path / "run")
    assert "training afresh" in caplog.text and "data '" in caplog.text
    assert list(h["epoch"]) == [1, 2]
    train(TrainConfig("mnist", seed=0, epochs=2), real, tmp_path / "straight")
    assert states_equal(
        load_checkpoint(checkpoint_path(tmp_path / "run", 2))["model"],
        load_checkpoint(checkpoint_path(tmp_path / "straight", 2))["model"],
    )


@pytest.mark.parametrize("seeds", [[0], [0, 1]])
def test_validation_logits_are_those_training_computed(tmp_path, monkeypatch, seeds):
    """Training saves each epoch's validation logits; the logits stage reuses them (one forward pass fewer)."""
    import trustcal.training.loop as train_module

    data = splits("cifar10", n_train=64)
    train_module.train_seeds(
        [TrainConfig("cifar10", seed=s, epochs=1) for s in seeds], data, [tmp_path / f"seed{s}" for s in seeds]
    )
    calls = []
    real_forward = train_module.stacked_logits
    monkeypatch.setattr(train_module, "stacked_logits", lambda *a, **k: calls.append(a) or real_forward(*a, **k))
    for s in seeds:
        ckpt = checkpoint_path(tmp_path / f"seed{s}", 1)
        logits = compute_logits(ckpt, "cifar10", data)
        assert len(calls) == 1  # the test set only
        calls.clear()
        state = load_checkpoint(ckpt)
        val_nll = torch.nn.functional.cross_entropy(
            torch.from_numpy(logits["val_logits"]), torch.from_numpy(data["y_val"])
        )
        # the same logits; the mean of n float32 log-probabilities in another order: λ·(√n + √K)·ε
        n, k = logits["val_logits"].shape
        assert val_nll.item() == pytest.approx(state["history"][-1]["val_loss"], rel=LAMBDA * (n**0.5 + k**0.5) * EPS32)
        # equal, to float tolerance, to a fresh forward pass of this seed alone
        del state["val_logits"]
        torch.save(state, tmp_path / "old.pt")  # a checkpoint without them: computed
        recomputed = compute_logits(tmp_path / "old.pt", "cifar10", data)
        assert len(calls) == 2
        calls.clear()
        bound = forward_error_bound("cifar10", recomputed["val_logits"])  # other batch sizes, other blocking
        np.testing.assert_allclose(logits["val_logits"], recomputed["val_logits"], rtol=0, atol=bound)
        if len(seeds) == 1:
            assert np.array_equal(logits["val_logits"], recomputed["val_logits"])


def test_truncated_checkpoint_is_reported_with_the_fix(tmp_path):
    data = splits("mnist")
    train(TrainConfig("mnist", seed=0, epochs=1), data, tmp_path)
    path = checkpoint_path(tmp_path, 1)
    whole = path.read_bytes()
    path.write_bytes(whole[:1000])
    with pytest.raises(TrustcalError, match=r"epoch001\.pt: checkpoint unreadable or truncated.*rule 'train'") as err:
        compute_logits(path, "mnist", data)
    assert err.value.rerun == "train"  # the workflow's jobs add the command (workflow/scripts/_common.py)
    train(TrainConfig("mnist", seed=0, epochs=1), data, tmp_path)  # the fix: rerun training
    assert path.read_bytes() == whole


def test_checkpoint_files_are_byte_reproducible_and_sealed(tmp_path):
    """Two identical trainings write identical files (no temporary name recorded in the archive),
    each carrying its content digest."""
    data = splits("mnist", n_train=64)
    for run in ("a", "b"):
        train(TrainConfig("mnist", seed=0, epochs=2), data, tmp_path / run)
    for e in (1, 2):
        a, b = checkpoint_path(tmp_path / "a", e), checkpoint_path(tmp_path / "b", e)
        assert a.read_bytes() == b.read_bytes(), f"epoch {e}"
        assert verify_zip(a) is True


def test_same_size_corruption_of_the_last_checkpoint_is_not_resumed_from(tmp_path, caplog):
    """Issue 20, case 2: 1,000 weights of the last checkpoint overwritten (same size), then one more
    epoch: training resumes from the epoch before it, and every file equals an uninterrupted run's."""
    data = splits("mnist", n_train=64)
    train(TrainConfig("mnist", seed=0, epochs=3), data, tmp_path / "straight")
    train(TrainConfig("mnist", seed=0, epochs=2), data, tmp_path / "run")
    overwrite_values(checkpoint_path(tmp_path / "run", 2))
    with pytest.raises(TrustcalError, match=r"epoch002\.pt: checkpoint altered since it was written.*rule 'train'"):
        load_checkpoint(checkpoint_path(tmp_path / "run", 2))
    with caplog.at_level(logging.INFO, logger="trustcal.training"):
        h = train(TrainConfig("mnist", seed=0, epochs=3), data, tmp_path / "run")
    warned = [r.message for r in caplog.records if "epoch002.pt: checkpoint altered" in r.message]
    assert len(warned) == 1 and "resumes from epoch 1, rewriting it" in warned[0] and "delete" not in warned[0]
    assert [r.message[:11] for r in caplog.records if r.message.startswith("epoch ")] == ["epoch   2/3", "epoch   3/3"]
    assert list(h["epoch"]) == [1, 2, 3] and h["seconds"].notna().all()  # epoch 1's from checkpoints/seconds.csv
    for e in (1, 2, 3):
        assert (
            checkpoint_path(tmp_path / "run", e).read_bytes() == checkpoint_path(tmp_path / "straight", e).read_bytes()
        )


@pytest.mark.parametrize("damage", ["overwritten", "truncated", "missing"])
def test_a_damaged_middle_checkpoint_is_rebuilt_by_the_advice(tmp_path, damage):
    """Issue 20, case 3: the logits stage names the damaged middle checkpoint; doing what it says (rerun
    training) rebuilds it and the later ones, byte for byte, instead of resuming after it."""
    data = splits("mnist", n_train=64)
    train(TrainConfig("mnist", seed=0, epochs=3), data, tmp_path)
    whole = {e: checkpoint_path(tmp_path, e).read_bytes() for e in (1, 2, 3)}
    middle = checkpoint_path(tmp_path, 2)
    if damage == "overwritten":
        overwrite_values(middle)
    elif damage == "truncated":
        middle.write_bytes(whole[2][: len(whole[2]) // 2])
    else:
        middle.unlink()
    with pytest.raises(TrustcalError, match=r"epoch002\.pt: checkpoint .*; rerun training \(rule 'train'\)") as err:
        compute_logits(middle, "mnist", data)
    assert "delete" not in str(err.value)
    train(TrainConfig("mnist", seed=0, epochs=3), data, tmp_path)
    assert {e: checkpoint_path(tmp_path, e).read_bytes() for e in (1, 2, 3)} == whole
    compute_logits(middle, "mnist", data)


# The networks as the training code before the stacked models (commit 58e9225) built them: nn.Sequential layers
# by position, so a checkpoint's state_dict keys are "1.weight", "1.bias", … and Adam's moments are vectors in
# that order. Checkpoints that code wrote must keep loading and resuming.
EARLIER_NETWORKS = {
    "mnist": lambda: torch.nn.Sequential(
        torch.nn.Flatten(), torch.nn.Linear(784, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)
    ),
    "cifar10": lambda: torch.nn.Sequential(
        torch.nn.Conv2d(3, 32, 3),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 3),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(64, 64, 3),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(1024, 64),
        torch.nn.ReLU(),
        torch.nn.Linear(64, 10),
    ),
}


@pytest.mark.parametrize("dataset", ["mnist", "cifar10"])
def test_checkpoints_of_the_earlier_code_load_and_resume(tmp_path, dataset):
    """A checkpoint in the earlier code's format (its network's state_dict, saved by torch.save) is resumed
    from bit for bit, and its logits are those of the earlier network."""
    data = splits(dataset, n_train=64)
    train(TrainConfig(dataset, seed=0, epochs=2), data, tmp_path / "straight")
    state = load_checkpoint(checkpoint_path(tmp_path / "straight", 1))
    earlier = EARLIER_NETWORKS[dataset]()
    assert list(state["model"]) == list(earlier.state_dict())  # the same keys, in the same order
    earlier.load_state_dict(state["model"])  # strict: and the same shapes
    state["model"] = earlier.state_dict()
    n_params = count_parameters(earlier)
    assert state["optimizer"]["exp_avg"].shape == state["optimizer"]["exp_avg_sq"].shape == (n_params,)
    (tmp_path / "earlier").mkdir()
    torch.save(state, checkpoint_path(tmp_path / "earlier", 1))
    logits = compute_logits(checkpoint_path(tmp_path / "earlier", 1), dataset, data)
    with torch.no_grad():
        want = earlier(torch.from_numpy(data["x_test"]).float() / 255).numpy()
    np.testing.assert_allclose(logits["test_logits"], want, rtol=0, atol=forward_error_bound(dataset, want))
    h = train(TrainConfig(dataset, seed=0, epochs=2), data, tmp_path / "earlier")
    assert list(h["epoch"]) == [1, 2]
    earlier_2, straight_2 = (checkpoint_path(tmp_path / d, 2).read_bytes() for d in ("earlier", "straight"))
    assert earlier_2 == straight_2


def test_checkpoints_written_before_digests_still_load_with_one_warning(tmp_path, caplog):
    """A checkpoint without a digest (torch.save to a path, as before) is used, with one warning per directory."""
    data = splits("mnist", n_train=64)
    train(TrainConfig("mnist", seed=0, epochs=3), data, tmp_path / "straight")
    old = tmp_path / "old"
    old.mkdir()
    for e in (1, 2):
        state = load_checkpoint(checkpoint_path(tmp_path / "straight", e))
        state["history"] = [{**row, "seconds": 1.5} for row in state["history"]]  # as they were then
        torch.save(state, checkpoint_path(old, e))
    with caplog.at_level(logging.INFO, logger="trustcal"):
        h = train(TrainConfig("mnist", seed=0, epochs=3), data, old)
        compute_logits(checkpoint_path(old, 1), "mnist", data)
    unverified = [r.message for r in caplog.records if "cannot be verified" in r.message]
    assert len(unverified) == 1 and str(old) in unverified[0]
    assert verify_zip(checkpoint_path(old, 2)) is False and verify_zip(checkpoint_path(old, 3)) is True
    assert list(h["seconds"][:2]) == [1.5, 1.5]  # from the old checkpoints' history
    assert [r.message[:11] for r in caplog.records if r.message.startswith("epoch ")] == ["epoch   3/3"]
    assert checkpoint_path(old, 3).read_bytes() == checkpoint_path(tmp_path / "straight", 3).read_bytes()


def test_an_unreadable_middle_checkpoint_written_before_digests_is_rebuilt(tmp_path):
    """Without a digest, a checkpoint is checked by reading it: an unreadable middle one is named, and
    rerunning training, as the message says, rebuilds it and the later ones."""
    data = splits("mnist", n_train=64)
    train(TrainConfig("mnist", seed=0, epochs=3), data, tmp_path / "straight")
    old = tmp_path / "old"
    old.mkdir()
    for e in (1, 2, 3):
        torch.save(load_checkpoint(checkpoint_path(tmp_path / "straight", e)), checkpoint_path(old, e))
    overwrite_member_start(checkpoint_path(old, 2), "data.pkl")  # the pickle no longer reads; same size
    with pytest.raises(TrustcalError, match=r"epoch002\.pt: checkpoint unreadable \(.*rule 'train'"):
        compute_logits(checkpoint_path(old, 2), "mnist", data)
    train(TrainConfig("mnist", seed=0, epochs=3), data, old)
    for e in (2, 3):
        assert checkpoint_path(old, e).read_bytes() == checkpoint_path(tmp_path / "straight", e).read_bytes()


KILL_SCRIPT = """
import sys, numpy as np, logging
logging.basicConfig(level=logging.INFO)
from trustcal.training.config import TrainConfig
from trustcal.training.loop import train_seeds
d = dict(np.load(sys.argv[1]))
train_seeds([TrainConfig("mnist", seed=1, epochs=int(sys.argv[3]))], d, [sys.argv[2]])
"""


def test_killed_mid_epoch_loses_at_most_that_epoch(tmp_path):
    data = splits("mnist", n_train=12000)  # ~375 steps per epoch, well under a second
    np.savez(tmp_path / "data.npz", **data)
    ckpt = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-c", KILL_SCRIPT, str(tmp_path / "data.npz"), str(ckpt), "50"])
    deadline = time.time() + 120
    while not checkpoint_path(ckpt, 2).exists() and time.time() < deadline:
        time.sleep(0.01)
    time.sleep(0.15)  # inside a later epoch
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done = sorted(p.name for p in ckpt.glob("epoch*.pt"))
    assert "epoch002.pt" in done and len(done) < 50
    for name in done:  # every file with a checkpoint's name is whole
        assert load_checkpoint(ckpt / name)["epoch"] == int(name[5:8])
    # A kill during torch.save may leave a temporary file (never under a checkpoint's name);
    # fake one for certain, and the resumed run must sweep it away.
    (ckpt / f".epoch{len(done) + 1:03d}.pt.abc123.tmp").write_bytes(b"half")
    last = len(done)
    h = train(TrainConfig("mnist", seed=1, epochs=last + 1), data, ckpt)
    assert len(h) == last + 1
    assert not list(ckpt.glob(".*tmp")), "no half-written checkpoint left behind after the resume"
    train(TrainConfig("mnist", seed=1, epochs=last + 1), data, tmp_path / "straight")
    assert states_equal(
        load_checkpoint(checkpoint_path(ckpt, last + 1))["model"],
        load_checkpoint(checkpoint_path(tmp_path / "straight", last + 1))["model"],
    )


def test_device_resolution(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto").type == "cpu"
    with pytest.raises(TrustcalError, match="no CUDA GPU"):
        resolve_device("cuda")


def write_payload_checkpoint(path, marker, form):
    """Replace the checkpoint ``path`` by a pickle that runs ``touch marker`` when loaded: a zip as torch.save
    writes it (``plain``), the same sealed with its content digest (``sealed``: the digest is unkeyed, so it
    verifies), or a bare pickle (``bare``)."""
    if form == "bare":
        path.write_bytes(pickle.dumps(Payload(marker), protocol=2))
        return
    with open(path, "wb") as fh:
        torch.save({"epoch": 2, "model": Payload(marker)}, fh)
    if form == "sealed":
        seal_zip(path)
        assert verify_zip(path) is True


@pytest.mark.parametrize("form", ["plain", "sealed", "bare"])
def test_a_checkpoint_replaced_by_a_pickle_payload_is_refused_and_never_run(tmp_path, caplog, form):
    """Issue 27: no checkpoint reader executes the file's pickle. A payload in place of the last checkpoint
    is refused with a line naming the file and the fix; rerunning training, as it says, rewrites it."""
    data = splits("mnist", n_train=64)
    train(TrainConfig("mnist", seed=0, epochs=2), data, tmp_path / "straight")
    run = tmp_path / "run"
    train(TrainConfig("mnist", seed=0, epochs=2), data, run)
    marker = tmp_path / "ran"
    write_payload_checkpoint(checkpoint_path(run, 2), marker, form)
    if form != "bare":  # the payload is live: an unrestricted load runs it
        torch.load(checkpoint_path(run, 2), weights_only=False)
        assert marker.exists()
        marker.unlink()
    for load in (load_checkpoint, lambda p: compute_logits(p, "mnist", data)):
        with pytest.raises(TrustcalError, match=r"epoch002\.pt: checkpoint .*; rerun training") as err:
            load(checkpoint_path(run, 2))
        assert "\n" not in str(err.value) and "weights_only" not in str(err.value)
        if form != "bare":
            assert "system" in str(err.value)  # what it names: posix.system
    assert not marker.exists(), "the checkpoint's pickle must not run"
    with caplog.at_level(logging.INFO, logger="trustcal.training"):
        train(TrainConfig("mnist", seed=0, epochs=2), data, run)
    assert any("epoch002.pt: checkpoint" in r.message and "rewriting it" in r.message for r in caplog.records)
    assert not marker.exists(), "the checkpoint's pickle must not run"
    assert checkpoint_path(run, 2).read_bytes() == checkpoint_path(tmp_path / "straight", 2).read_bytes()


def test_checkpoints_hold_tensors_and_plain_data_only(tmp_path):
    """What training writes reads with torch.load(weights_only=True) and no allowance: the PyTorch version
    is a plain str, not torch's TorchVersion."""
    train(TrainConfig("mnist", seed=0, epochs=1), splits("mnist", n_train=64), tmp_path)
    state = torch.load(checkpoint_path(tmp_path, 1), weights_only=True)
    assert type(state["torch_version"]) is str and state["torch_version"] == str(torch.__version__)
    assert state["epoch"] == 1 and torch.equal(
        state["model"]["1.weight"], load_checkpoint(checkpoint_path(tmp_path, 1))["model"]["1.weight"]
    )


def test_checkpoints_with_a_torch_version_object_load_and_resume_bit_for_bit(tmp_path, caplog):
    """Checkpoints of the code before issue 27 carry torch.__version__ itself (a TorchVersion, which
    torch.load(weights_only=True) refuses by default): they are read without running code (that one
    class admitted), and training resumes from them bit for bit."""
    from trustcal.training.checkpoints import checkpoint_problem, save_checkpoint

    data = splits("mnist", n_train=64)
    train(TrainConfig("mnist", seed=0, epochs=3), data, tmp_path / "straight")
    old = tmp_path / "old"
    old.mkdir()
    for e in (1, 2):
        state = load_checkpoint(checkpoint_path(tmp_path / "straight", e))
        save_checkpoint(checkpoint_path(old, e), {**state, "torch_version": torch.__version__})
    with pytest.raises(pickle.UnpicklingError, match="TorchVersion"):
        torch.load(checkpoint_path(old, 2), weights_only=True)
    assert load_checkpoint(checkpoint_path(old, 2))["torch_version"] == torch.__version__
    assert checkpoint_problem(checkpoint_path(old, 2)) is None
    with caplog.at_level(logging.INFO, logger="trustcal.training"):
        h = train(TrainConfig("mnist", seed=0, epochs=3), data, old)
    assert list(h["epoch"]) == [1, 2, 3]
    assert [r.message[:11] for r in caplog.records if r.message.startswith("epoch ")] == ["epoch   3/3"]
    assert checkpoint_path(old, 3).read_bytes() == checkpoint_path(tmp_path / "straight", 3).read_bytes()


def pytorch_compute_flags():
    return (
        torch.are_deterministic_algorithms_enabled(),
        torch.backends.cudnn.deterministic,
        torch.backends.cudnn.benchmark,
        torch.backends.cudnn.allow_tf32,
        torch.backends.cuda.matmul.allow_tf32,
        os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
    )


def test_the_deterministic_setting_changes_nothing_on_the_cpu_and_retrains_nothing(tmp_path):
    """`deterministic` acts on a GPU only (tests/gpu check what it does there): on the CPU PyTorch's flags stay as
    they were, and the checkpoints of a run with the other setting are resumed, not retrained."""
    before = pytorch_compute_flags()
    for deterministic in (False, True):
        configure_device(torch.device("cpu"), deterministic)
        assert pytorch_compute_flags() == before
    cfg = TrainConfig("mnist", seed=0, epochs=1, device="cpu")
    other = TrainConfig("mnist", seed=0, epochs=2, device="cpu", deterministic=False)
    assert cfg.fingerprint() == TrainConfig("mnist", seed=0, epochs=1, deterministic=False).fingerprint()
    data = splits("mnist", n_train=64, n_val=32)
    train(cfg, data, tmp_path)
    first = checkpoint_path(tmp_path, 1).read_bytes()
    history = train(other, data, tmp_path)
    assert history["epoch"].tolist() == [1, 2] and checkpoint_path(tmp_path, 1).read_bytes() == first
