"""A user's table (trustcal.data.tabular; docs/usage.md, "A dataset of your own"): an .npz whose x arrays are
(N, F) features, standardised by the training split's statistics when prepared, and what is refused, when
the file is read or before any job, in one line naming the file, the array or key, and the fix."""

import numpy as np
import pytest
import yaml
from helpers.workflow import REPO

from trustcal.config import ConfigError, validate_config
from trustcal.data import splits, tabular
from trustcal.errors import TrustcalError
from trustcal.registry import DatasetSpec


def table_spec(path, **fields):
    return DatasetSpec("table", "Table", "npz", path=str(path), **fields)


def write_table(path, n_train=20, n_test=8, features=3, compressed=False, **changes):
    """A valid table: ``features`` float features, 2 classes in both splits; ``changes`` replace arrays."""
    rng = np.random.default_rng(0)
    arrays = {
        "x_train": rng.normal(5.0, 2.0, (n_train, features)),
        "y_train": np.arange(n_train) % 2,
        "x_test": rng.normal(5.0, 2.0, (n_test, features)),
        "y_test": np.arange(n_test) % 2,
        **changes,
    }
    (np.savez_compressed if compressed else np.savez)(path, **arrays)
    return path


def prepared(spec, tmp_path, validation_split=0.1):
    out = tmp_path / "splits.npz"
    splits.prepare(spec, tmp_path / "unused", out, validation_split=validation_split)
    with np.load(out, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def refusal(spec, tmp_path):
    """The one line ``prepare`` refuses ``spec`` with; nothing written."""
    out = tmp_path / "results"
    out.mkdir(exist_ok=True)
    with pytest.raises(TrustcalError) as err:
        splits.prepare(spec, tmp_path / "unused", out / "splits.npz")
    assert list(out.iterdir()) == [], "nothing written"
    message = str(err.value)
    assert "\n" not in message and message.count("Fix: ") == 1, message
    return message


# --- standardisation ---------------------------------------------------------------------------------------


def test_the_statistics_are_the_mean_and_population_sd_and_a_constant_feature_keeps_scale_1():
    x = np.array([[1.0, 10.0, 0.1], [3.0, 10.0, 0.1], [5.0, 10.0, 0.1], [7.0, 10.0, 0.1]])
    mean, scale = tabular.feature_statistics(x)
    # column 0: mean 4, population variance ((9 + 1 + 1 + 9) / 4) = 5
    assert mean.tolist() == [4.0, 10.0, 0.1] and scale.tolist() == [np.sqrt(5.0), 1.0, 1.0]
    arrays = {"x_train": x, "x_val": x[:1] + 2, "x_test": np.array([[9.0, 12.0, 0.3]])}
    out = tabular.standardise_splits(table_spec("t.npz"), arrays)
    assert out["x_train"].dtype == np.float32
    # a constant feature is centred to exactly 0, even where its mean would not be exactly its value
    np.testing.assert_array_equal(out["x_train"][:, 1:], 0)
    np.testing.assert_allclose(out["x_train"][:, 0], (x[:, 0] - 4) / np.sqrt(5), rtol=1e-7)
    # the other splits: the training split's transform, whatever their own values
    np.testing.assert_allclose(out["x_val"], [[(3 - 4) / np.sqrt(5), 2.0, 2.0]], rtol=1e-6)
    np.testing.assert_allclose(out["x_test"], [[5 / np.sqrt(5), 2.0, 0.2]], rtol=1e-6)
    assert out["feature_mean"].tolist() == [4.0, 10.0, 0.1]


def test_prepare_standardises_every_split_by_the_training_split_alone(tmp_path):
    """The validation tail (the last 10 % of x_train) and the test split do not move the statistics."""
    x = np.arange(40, dtype=np.float64).reshape(20, 2) * [1.0, -3.0]
    x[18:] = 1e6  # the validation tail: far from the rest
    xt = np.full((8, 2), -1e6)
    path = write_table(tmp_path / "t.npz", features=2, x_train=x, x_test=xt)
    data = prepared(table_spec(path), tmp_path)
    train = x[:18]
    mean, sd = train.mean(axis=0), train.std(axis=0)
    assert data["x_train"].shape == (18, 2) and data["x_val"].shape == (2, 2) and data["x_test"].shape == (8, 2)
    assert all(data[k].dtype == np.float32 for k in ("x_train", "x_val", "x_test"))
    np.testing.assert_allclose(data["feature_mean"], mean, rtol=1e-12)
    np.testing.assert_allclose(data["feature_scale"], sd, rtol=1e-12)
    np.testing.assert_allclose(data["x_train"].mean(axis=0), 0, atol=1e-6)
    np.testing.assert_allclose(data["x_train"].std(axis=0), 1, rtol=1e-6)
    np.testing.assert_allclose(data["x_val"], ((x[18:] - mean) / sd).astype(np.float32), rtol=1e-6)
    np.testing.assert_allclose(data["x_test"], ((xt - mean) / sd).astype(np.float32), rtol=1e-6)
    assert data["classes"].tolist() == ["0", "1"] and data["y_val"].tolist() == [0, 1]
    assert splits.load_prepared(tmp_path / "splits.npz")["x_train"].shape == (18, 2)


def test_integer_features_of_any_range_are_read(tmp_path):
    x = np.arange(-20, 20, dtype=np.int64).reshape(20, 2) * 1000
    path = write_table(tmp_path / "int.npz", features=2, x_train=x, x_test=x[:8].astype(np.int16))
    data = prepared(table_spec(path), tmp_path)
    np.testing.assert_allclose(data["feature_mean"], x[:18].mean(axis=0))
    assert data["x_test"].dtype == np.float32


def test_images_are_still_stored_as_uint8_without_statistics(tmp_path):
    from trustcal.data.synthetic import class_images

    x, y = class_images(12, (3, 5, 5), 0, classes=3)
    xt, yt = class_images(6, (3, 5, 5), 1, classes=3)
    np.savez(tmp_path / "images.npz", x_train=x, y_train=y, x_test=xt, y_test=yt)
    data = prepared(table_spec(tmp_path / "images.npz"), tmp_path)
    assert data["x_train"].dtype == np.uint8 and not set(tabular.STATISTICS) & set(data)
    np.testing.assert_array_equal(np.concatenate([data["x_train"], data["x_val"]]), x)


# --- refused when the file is read ---------------------------------------------------------------------------


def test_nan_and_infinite_features_are_counted_and_placed(tmp_path):
    x = np.ones((20, 3))
    x[4, 2] = np.nan
    x[7, 0] = np.inf
    path = write_table(tmp_path / "nan.npz", x_train=x)
    assert refusal(table_spec(path), tmp_path) == (
        f"table: {path}: array x_train holds 1 NaN and 1 infinite values (of 60; the first in sample 4, feature 2), "
        "not features. Fix: replace them (e.g. by the feature's mean in x_train), or drop those samples and their "
        "labels, and save x_train again."
    )
    xt = np.ones((8, 3), dtype=np.float32)
    xt[5, 1] = -np.inf
    path = write_table(tmp_path / "inf.npz", x_test=xt)
    assert "array x_test holds 1 infinite value (of 24; the first in sample 5, feature 1)" in refusal(
        table_spec(path), tmp_path
    )


@pytest.mark.parametrize(
    ("changes", "line"),
    [
        (
            {"x_test": np.ones((8, 4))},
            "array x_test has shape (8, 4), but x_train's (20, 3) is a table of 3 features (two axes: samples × "
            "features). Fix: save x_test as (N, 3), one row of x_train's features per sample, or save both as "
            "images (N, C, H, W).",
        ),
        ({"x_test": np.ones((8, 3, 1))}, "array x_test has shape (8, 3, 1), but x_train's (20, 3) is a table"),
        (
            {"x_train": np.ones(20)},
            "array x_train has shape (20,), one value per sample, neither a table (N, F) nor images. Fix: save "
            "x_train as (N, F), one row of features per sample (x.reshape(-1, 1) for one feature), or as images "
            "(N, C, H, W).",
        ),
        (
            {"x_test": np.ones(8), "x_train": np.ones((20, 1))},
            "array x_test has shape (8,), one value per sample, but x_train's (20, 1) is a table of 1 feature "
            "(two axes: samples × features). Fix: save x_test as (N, 1), one row of x_train's features per "
            "sample (x.reshape(-1, 1)), or save both as images (N, C, H, W).",
        ),
        (
            {"x_train": np.full((20, 3), "a")},
            "array x_train is <U1, not numbers. Fix: save x_train as floats or integers",
        ),
        ({"x_train": np.ones((20, 0))}, "array x_train has shape (20, 0): no feature. Fix: save the features"),
    ],
)
def test_a_table_of_the_wrong_shape_or_type_is_refused(tmp_path, changes, line):
    path = write_table(tmp_path / "t.npz", **changes)
    message = refusal(table_spec(path), tmp_path)
    assert message.startswith(f"table: {path}: ") and line in message, message


def test_features_beyond_float32_once_standardised_are_refused(tmp_path):
    x = np.ones((20, 2))
    x[:, 1] = np.arange(20) * 1e-30
    path = write_table(tmp_path / "t.npz", features=2, x_train=x, x_test=np.full((8, 2), 1e10))
    assert "feature 1 of x_test standardised by the training split's mean" in refusal(table_spec(path), tmp_path)


def test_the_header_tells_a_table_without_reading_the_arrays(tmp_path):
    assert tabular.npz_shape(write_table(tmp_path / "a.npz", n_train=7, features=5)) == (7, 5)
    assert tabular.npz_shape(write_table(tmp_path / "b.npz", compressed=True, n_train=7, features=5)) == (7, 5)
    assert tabular.table_shape(table_spec(tmp_path / "b.npz")) == (7, 5)
    (tmp_path / "c.npz").write_text("not a zip")
    assert tabular.npz_shape(tmp_path / "c.npz") is None and tabular.npz_shape(tmp_path / "none.npz") is None
    assert tabular.table_shape(DatasetSpec("d", "D", "imagefolder", path=str(tmp_path))) is None


# --- refused before any job: the configuration check -----------------------------------------------------------


@pytest.fixture
def config(tmp_path):
    path = write_table(tmp_path / "bc.npz", n_train=20, features=3)
    paper = yaml.safe_load((REPO / "config.yaml").read_text())

    def make(setup=None, **more):
        entry = {"dataset": {"kind": "npz", "path": str(path)}, "network": "paper_mlp", **(setup or {})}
        entry = {k: v for k, v in entry.items() if v is not None}  # network None: the default
        return {**paper, "datasets": ["bc"], "setups": {"bc": entry}, **more}

    make.path = path
    return make


def config_refusal(config) -> str:
    with pytest.raises(ConfigError) as err:
        validate_config(config)
    lines = str(err.value).splitlines()[1:]
    assert len(lines) == 1 and lines[0].count("Fix: ") == 1, str(err.value)
    return lines[0].strip()


def test_an_mlp_or_a_network_of_ones_own_trains_a_table(config):
    for setup in ({}, {"network_kwargs": {"hidden": [64, 32]}}, {"network": "trustcal.training.models:MNISTMLP"}):
        validate_config(config(setup, shift={"corruptions": ["all"]}))


@pytest.mark.parametrize(
    ("setup", "words"),
    [
        ({"network": None}, "which network paper_cnn (the default for a dataset of your own) cannot read"),
        ({"network": "resnet20"}, "which network resnet20 cannot read: it is made for images. Fix: set network: "),
        ({"network": "torchvision:resnet18"}, "which network torchvision:resnet18 cannot read"),
        ({"recipe": "sgd"}, "recipe augment: [crop, flip] crops or flips images. Fix: set recipe: {augment: []}"),
        ({"recipe": {"normalise": True}}, "Fix: set recipe: {normalise: false} in setups: bc"),
    ],
)
def test_a_network_or_recipe_made_for_images_is_refused_on_a_table(config, setup, words):
    line = config_refusal(config(setup))
    where = f"setups: bc: dataset {config.path} (x_train of shape (20, 3): 20 samples of 3 features) holds a table"
    assert where in line and words in line, line
    if "network" in setup:
        assert "Fix: set network: paper_mlp in setups: bc (hidden widths by network_kwargs: {hidden: [128]})" in line


@pytest.mark.parametrize(
    ("shift", "words"),
    [
        ({"corruptions": ["gaussian_noise"]}, "shift.corruptions: run bc reads a table, dataset "),
        ({"ood": ["noise_uniform"]}, "shift.ood: run bc reads a table, dataset "),
    ],
)
def test_a_shifted_set_is_refused_on_a_table(config, shift, words):
    line = config_refusal(config(shift=shift))
    assert words in line and f"{config.path} (x_train of shape (20, 3)" in line and "Fix: leave shift." in line, line
