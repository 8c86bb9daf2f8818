"""Training on a user's table (trustcal.data.tabular): the stored batch made the network's input by one helper
(images exactly as before, a table's float32 features as they are), the MLP's hidden widths, the checks of
complete_config, and a table trained by both engines with its logits."""

import numpy as np
import pytest
import torch
from helpers.training import image_splits, train

from trustcal.errors import TrustcalError
from trustcal.registry import resolve_setup
from trustcal.training.config import TrainConfig, complete_config, setup_config
from trustcal.training.engine import network_input
from trustcal.training.loop import compute_logits
from trustcal.training.models import MNISTMLP, build_model
from trustcal.training.networks import NetworkError, build_network
from trustcal.training.plain import memory_format, plain_logits


def table_splits(n_train=60, n_val=20, n_test=30, features=5, seed=0):
    """Standardised float32 features of two classes, as splits.npz stores a table."""
    rng = np.random.default_rng(seed)
    n = n_train + n_val + n_test
    y = np.arange(n) % 2
    x = (rng.normal(0, 1, (n, features)) + 2 * y[:, None]).astype(np.float32)
    cut, end = n_train, n_train + n_val
    return dict(x_train=x[:cut], y_train=y[:cut], x_val=x[cut:end], y_val=y[cut:end], x_test=x[end:], y_test=y[end:])


def test_images_become_the_network_input_exactly_as_before():
    x = torch.from_numpy(np.arange(256, dtype=np.uint8).repeat(3).reshape(2, 3, 8, 16))
    out = network_input(x)
    before = x.float().div_(255)  # what every engine computed before the helper
    assert out.dtype == torch.float32 and torch.equal(out, before)
    assert out.view(torch.int32).equal(before.view(torch.int32)), "the same bits"
    assert torch.equal(x, torch.from_numpy(np.arange(256, dtype=np.uint8).repeat(3).reshape(2, 3, 8, 16)))


def test_a_tables_features_are_the_network_input_as_they_are_in_a_copy():
    x = torch.tensor([[-1.5, 0.25, 3e5]], dtype=torch.float32)
    out = network_input(x)
    assert out.dtype == torch.float32 and torch.equal(out, x)
    out += 1  # a network that writes into its input does not change the stored data
    assert x.tolist() == [[-1.5, 0.25, 3e5]]


def test_the_logits_of_images_are_the_network_of_x_over_255():
    data = image_splits((1, 28, 28), n_test=40, classes=3)
    torch.manual_seed(0)
    model = build_network("lenet5", {}, (1, 28, 28), 3).eval()
    x = torch.from_numpy(data["x_test"])
    with torch.no_grad():
        expected = model(x.float() / 255)
    assert torch.equal(plain_logits(model, x, batch_size=1000), expected)


def test_the_mlp_takes_hidden_widths_and_its_default_is_the_papers_modules():
    default, paper = MNISTMLP(), build_model("mnist", init="torch")
    assert [(k, v.shape) for k, v in default.state_dict().items()] == [
        (k, v.shape) for k, v in paper.state_dict().items()
    ]
    deep = build_network("paper_mlp", {"hidden": [16, 8]}, (30,), 2)
    assert [tuple(v.shape) for v in deep.state_dict().values()] == [(16, 30), (16,), (8, 16), (8,), (2, 8), (2,)]
    assert [tuple(v.shape) for v in build_network("paper_mlp", {"hidden": 4}, (30,), 2).state_dict().values()][0] == (
        4,
        30,
    )
    for bad in ([], [8, 0], True, "8"):
        with pytest.raises(NetworkError, match=r"hidden .*: a positive width, or a list of them"):
            build_network("paper_mlp", {"hidden": bad}, (30,), 2)


def test_complete_config_reads_a_tables_shape_and_refuses_what_reads_images():
    data = table_splits()
    cfg = complete_config(TrainConfig(dataset="bc", seed=0, epochs=1, network="paper_mlp"), data)
    assert cfg.in_shape == (5,) and cfg.num_classes == 2 and cfg.stacked
    assert memory_format(cfg) == torch.contiguous_format
    for changes, words in [
        (
            {"network": "paper_cnn"},
            "which network paper_cnn cannot read: it is made for images. Fix: set network: paper_mlp",
        ),
        ({"network": "paper_mlp", "augment": ("flip",)}, "recipe augment: [flip] crops or flips images"),
        ({"network": "paper_mlp", "normalise": True}, "Fix: set recipe: {normalise: false} in setups: bc"),
    ]:
        with pytest.raises(TrustcalError) as err:
            complete_config(TrainConfig(dataset="bc", seed=0, epochs=1, **changes), data)
        assert str(err.value).startswith("bc: the prepared x_train of shape (60, 5) holds a table") and words in str(
            err.value
        )
    with pytest.raises(TrustcalError, match=r"neither images \(N, C, H, W\) nor a table \(N, F\)"):
        complete_config(TrainConfig(dataset="bc", seed=0, epochs=1, network="paper_mlp"), {"x_train": np.ones(3)})


@pytest.mark.parametrize(
    "entry",
    [
        {"network": "paper_mlp"},  # the paper's recipe: the stacked engine
        {  # hidden widths and SGD: the plain loop
            "network": "paper_mlp",
            "network_kwargs": {"hidden": [16, 8]},
            "recipe": {"optimizer": "sgd", "learning_rate": 0.1},
        },
    ],
)
def test_a_table_trains_in_either_engine_and_gives_its_logits(tmp_path, entry):
    data = table_splits()
    setup = resolve_setup("bc", {"bc": {"dataset": {"kind": "npz", "path": "bc.npz"}, **entry}})
    cfg = setup_config(setup, seed=0, epochs=3, device="cpu")
    assert complete_config(cfg, data).stacked == ("network_kwargs" not in entry)
    history = train(cfg, data, tmp_path)
    assert list(history["epoch"]) == [1, 2, 3] and history["val_accuracy"].iloc[-1] > 0.7
    out = compute_logits(tmp_path / "epoch003.pt", setup, data)
    assert out["val_logits"].shape == (20, 2) and out["test_logits"].shape == (30, 2)
    assert np.isfinite(out["test_logits"]).all()
