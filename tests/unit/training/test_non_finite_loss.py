"""A loss that becomes NaN or infinite stops the seed with the fix: the learning rate to lower, by the key that
sets the run's (both engines)."""

import pytest
import yaml
from helpers.training import forget_user_package, splits, train, write_user_module

from trustcal.errors import TrustcalError
from trustcal.training.checkpoints import checkpoint_path
from trustcal.training.config import TrainConfig
from trustcal.training.plain import non_finite_loss

NAN_NET = """
from torch import nn

class Net(nn.Module):
    def __init__(self, in_shape, num_classes):
        super().__init__()
        self.fc = nn.Linear(in_shape[0] * in_shape[1] * in_shape[2], num_classes)

    def forward(self, x):
        return self.fc(x.flatten(1)) * float("nan")  # logits of the right shape, every one NaN
"""


def test_a_diverging_paper_network_names_the_top_level_learning_rate(tmp_path):
    """The stacked engine (the paper's MLP and recipe): a rate of 1e30 overflows in the first epoch."""
    data = splits("mnist", n_train=64, n_val=16, n_test=16)
    with pytest.raises(TrustcalError) as err:
        train(TrainConfig("mnist", seed=0, epochs=2, learning_rate=1e30, batch_size=16, device="cpu"), data, tmp_path)
    assert str(err.value) == (
        "mnist seed 0: the training loss became nan at epoch 1, at learning rate 1e+30. Fix: lower the learning "
        "rate, e.g. learning_rate: 1.0e+29 in the configuration, and run again"
    )
    assert not checkpoint_path(tmp_path, 1).exists()  # nothing of the diverged epoch is kept


def test_a_users_network_with_nan_logits_names_the_setups_rate_and_its_forward_pass(tmp_path, monkeypatch):
    """The plain engine (any other network)."""
    forget_user_package()
    monkeypatch.syspath_prepend(str(tmp_path))
    network = write_user_module(tmp_path, "nan", NAN_NET) + ":Net"
    data = splits("mnist", n_train=64, n_val=16, n_test=16)
    cfg = TrainConfig("mine", seed=0, epochs=1, network=network, learning_rate=0.05, batch_size=16, device="cpu")
    try:
        with pytest.raises(TrustcalError) as err:
            train(cfg, data, tmp_path / "run")
    finally:
        forget_user_package()
    assert str(err.value) == (
        "mine seed 0: the training loss became nan at epoch 1, at learning rate 0.05. Fix: lower the learning rate, "
        "e.g. setups: mine: recipe: {learning_rate: 0.005} (beside the recipe's other fields; a recipe given by "
        "name becomes {preset: <name>, learning_rate: 0.005}), and run again; if it persists, look in the forward "
        "pass of mynets.nan:Net for a log, a division or a square root that can reach 0"
    )


def test_the_rate_advised_is_a_number_to_yaml_and_the_loss_named_is_the_one_that_diverged():
    cfg = TrainConfig("cifar10", seed=3, epochs=5, learning_rate=1e-4)
    message = str(non_finite_loss(cfg, 4, 1.25, float("inf")))
    assert message == (
        "cifar10 seed 3: the validation loss became inf at epoch 4, at learning rate 0.0001. Fix: lower the learning "
        "rate, e.g. learning_rate: 1.0e-05 in the configuration, and run again"
    )
    assert yaml.safe_load("learning_rate: 1.0e-05") == {"learning_rate": 1e-05}  # 1e-05 would be a string
