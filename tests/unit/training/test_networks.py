"""The networks a setup can name (trustcal.training.networks): the registered ones, torchvision's, a user's
``package.module:Class``, and the one-line errors of a name that leads to no network."""

import pytest
import torch
from helpers.training import forget_user_package, write_user_module
from torch import nn

from trustcal.errors import TrustcalError
from trustcal.registry import NETWORKS
from trustcal.training.models import CIFARCNN, MNISTMLP, build_model, count_parameters
from trustcal.training.networks import FACTORIES, NetworkError, build_network, network_class

SHAPES = [((1, 28, 28), 10), ((3, 32, 32), 10), ((3, 32, 32), 100)]

# Parameters (weights + biases, BatchNorm's γ and β; not its running statistics), counted from the architectures:
#
# paper_mlp: Linear(C·H·W, 128) + Linear(128, K) = 129·128 … : (C·H·W + 1)·128 + 129·K
#   1×28×28: 785·128 + 1290 = 101,770; 3×32×32: 3073·128 + 1290 = 394,634; K = 100: 3073·128 + 12,900 = 406,244.
# paper_cnn: conv 3×3 C→32 (9C·32 + 32), 32→64 (18,496), 64→64 (36,928), Linear(64·s², 64), Linear(64, K),
#   s = the side after conv, pool, conv, pool, conv (32: 30, 15, 13, 6, 4; 28: 26, 13, 11, 5, 3):
#   1×28×28: 320 + 18,496 + 36,928 + (576 + 1)·64 + 65·10 = 93,322; 3×32×32: 896 + 18,496 + 36,928 + 1025·64
#   + 650 = 122,570 (the paper's); K = 100: + 90·65 = 128,420.
# lenet5: conv 5×5 C→6 (25C·6 + 6), 6→16 (2,416), Linear(400, 120) (48,120), Linear(120, 84) (10,164),
#   Linear(84, K) (85K): 1×28×28 (padded 2): 156 + 2416 + 48,120 + 10,164 + 850 = 61,706; 3×32×32: 456 + … =
#   62,006; K = 100: 62,006 - 850 + 8,500 = 69,656.
# resnet20 (option A shortcuts: no parameters): conv 3×3 C→16 (144C), BN 16 (32); stage 1: 3 blocks of two
#   16→16 convs (2,304 each) and two BN (64): 3·4,672 = 14,016; stage 2: 16→32 (4,608) + 32→32 (9,216) + BN
#   (128) = 13,952, then 2·(2·9,216 + 128) = 37,120; stage 3: 32→64 (18,432) + 64→64 (36,864) + BN (256) =
#   55,552, then 2·(2·36,864 + 256) = 147,968; Linear(64, K): 65K.
#   3×32×32, K = 10: 432 + 32 + 14,016 + 51,072 + 203,520 + 650 = 269,722 (He et al.'s 0.27 M);
#   1×28×28: 269,722 - 288 = 269,434; K = 100: 269,722 + 90·65 = 275,572.
# wrn16_4 (n = 2 blocks a group, widths 64, 128, 256): conv 3×3 C→16 (144C); group 1: BN 16 (32) + 16→64
#   (9,216) + BN 64 (128) + 64→64 (36,864) + 1×1 shortcut 16→64 (1,024) = 47,264, then BN 128 + 36,864 +
#   BN 128 + 36,864 = 73,984; group 2: 128 + 73,728 + 256 + 147,456 + 8,192 = 229,760, then 2·256 +
#   2·147,456 = 295,424; group 3: 256 + 294,912 + 512 + 589,824 + 32,768 = 918,272, then 2·512 + 2·589,824 =
#   1,180,672; final BN 256 (512); Linear(256, K): 257K.
#   3×32×32, K = 10: 432 + 121,248 + 525,184 + 2,098,944 + 512 + 2,570 = 2,748,890 (Zagoruyko & Komodakis'
#   2.7 M); 1×28×28: 2,748,890 - 288 = 2,748,602; K = 100: 2,748,890 + 90·257 = 2,772,020.
PARAMETERS = {
    "paper_mlp": (101_770, 394_634, 406_244),
    "paper_cnn": (93_322, 122_570, 128_420),
    "lenet5": (61_706, 62_006, 69_656),
    "resnet20": (269_434, 269_722, 275_572),
    "wrn16_4": (2_748_602, 2_748_890, 2_772_020),
}


@pytest.fixture
def user_modules(tmp_path, monkeypatch):
    """``write(module, source)``: tmp_path/mynets/<module>.py, importable as mynets.<module> for this test."""
    forget_user_package()
    monkeypatch.syspath_prepend(str(tmp_path))
    yield lambda module, source: write_user_module(tmp_path, module, source)
    forget_user_package()


def test_every_registered_network_has_its_counts_here():
    assert set(PARAMETERS) == set(NETWORKS)


@pytest.mark.parametrize("network", NETWORKS)
def test_registered_networks_build_for_every_shape_with_known_parameter_counts(network):
    """Each registered network builds for 1×28×28 / 10, 3×32×32 / 10 and 3×32×32 / 100 classes, returns (N, K)
    logits, and has the parameter count its architecture gives (PARAMETERS, derived above)."""
    for (shape, classes), want in zip(SHAPES, PARAMETERS[network]):
        torch.manual_seed(0)
        model = build_network(network, {}, shape, classes)
        assert count_parameters(model) == want, (network, shape, classes)
        model.eval()
        with torch.no_grad():
            assert model(torch.rand(3, *shape)).shape == (3, classes)


def test_registered_factories_are_resolved_without_importlib():
    """Every registered factory is in FACTORIES (the stage digest sees the code training runs)."""
    for spec in NETWORKS.values():
        assert spec.factory in FACTORIES, spec.factory
        module, name = spec.factory.split(":")
        assert FACTORIES[spec.factory].__module__ == module and FACTORIES[spec.factory].__name__ == name
        assert network_class(spec.name) is FACTORIES[spec.factory]


@pytest.mark.parametrize(("network", "dataset"), [("paper_mlp", "mnist"), ("paper_cnn", "cifar10")])
@pytest.mark.parametrize("init", ["glorot", "torch"])
def test_paper_networks_by_default_are_the_papers_modules(network, dataset, init):
    """At the paper's shape and classes the paper's networks are today's modules, drawn from the same random
    numbers: parameter names, order, shapes and values equal build_model's (the check on a dummy batch draws
    none); the paper's runs and checkpoints are unchanged."""
    torch.manual_seed(3)
    want = build_model(dataset, init).state_dict()
    after_want = torch.rand(3)
    torch.manual_seed(3)
    got = build_network(network, (), (1, 28, 28) if dataset == "mnist" else (3, 32, 32), 10, init).state_dict()
    assert torch.equal(torch.rand(3), after_want)
    assert [(k, v.shape) for k, v in got.items()] == [(k, v.shape) for k, v in want.items()]
    assert all(torch.equal(got[k], want[k]) for k in want)
    assert type(build_network(network)) is {"paper_mlp": MNISTMLP, "paper_cnn": CIFARCNN}[network]


def test_init_applies_to_the_papers_networks_only():
    """glorot (zero biases) for the paper's networks; the others keep their own initialisation."""
    assert torch.count_nonzero(build_network("paper_cnn", (), (3, 32, 32), 10, "glorot")[0].bias) == 0
    assert torch.count_nonzero(build_network("paper_cnn", (), (3, 32, 32), 10, "torch")[0].bias) > 0
    torch.manual_seed(0)
    a = build_network("lenet5", (), (1, 28, 28), 10, "glorot").state_dict()
    torch.manual_seed(0)
    b = build_network("lenet5", (), (1, 28, 28), 10, "torch").state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_resnet_and_wide_resnet_options():
    """Option B shortcuts add the 1×1 projections and their BatchNorm (16·32 + 64 + 32·64 + 128 = 2,752
    parameters); a WRN's depth, width and dropout are keyword arguments."""
    a = count_parameters(build_network("resnet20", {"shortcut": "A"}))
    assert count_parameters(build_network("resnet20", {"shortcut": "B"})) == a + 2_752
    wrn = build_network("wrn16_4", {"depth": 10, "width": 1, "dropout": 0.3}, (3, 32, 32), 10)
    assert sum(isinstance(m, nn.Dropout) for m in wrn.modules()) == 3
    with pytest.raises(NetworkError, match=r"network 'resnet20': ResNet20\(.*depth=21\) failed .*6n \+ 2"):
        build_network("resnet20", {"depth": 21})


def test_torchvision_networks_build_randomly_initialised_without_a_download(monkeypatch):
    """torchvision:resnet18 with weights=None: nothing fetched (any attempt would fail here); 1-channel images
    are repeated on 3 channels by a first module without parameters."""

    def no_download(*args, **kwargs):
        raise AssertionError("a download was attempted")

    monkeypatch.setattr(torch.hub, "load_state_dict_from_url", no_download)
    monkeypatch.setattr(torch.hub, "download_url_to_file", no_download)
    for shape, classes in [((3, 32, 32), 10), ((1, 28, 28), 7)]:
        model = build_network("torchvision:resnet18", {}, shape, classes)
        model.eval()
        with torch.no_grad():
            assert model(torch.rand(2, *shape)).shape == (2, classes)
        assert count_parameters(model) == 11_176_512 + 513 * classes  # resnet18: 11,181,642 at K = 10
    with pytest.raises(NetworkError, match=r"'torchvision:resnet18': torchvision's networks read 3-channel"):
        build_network("torchvision:resnet18", {}, (2, 32, 32), 10)
    with pytest.raises(
        NetworkError,
        match=r"torchvision .* has no classification network 'resnet19' \(did you mean 'resnet18'\?\)\. Fix: name one of",
    ):
        build_network("torchvision:resnet19", {}, (3, 32, 32), 10)


NET = """
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self, in_shape, num_classes, hidden=16):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(in_shape[0], 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                                  nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Linear(16, hidden), nn.ReLU(),
                                  nn.Linear(hidden, num_classes))

    def forward(self, x):
        return self.body(x)
"""


def test_a_users_network_builds_by_its_import_path(user_modules):
    module = user_modules("net", NET)
    model = build_network(f"{module}:Net", {"hidden": 8}, (3, 32, 32), 5)
    assert type(model).__name__ == "Net" and model.training  # the check on a dummy batch leaves it in train mode
    assert count_parameters(model) == (27 * 4 + 4) + 8 + (16 * 8 + 8) + (8 * 5 + 5)


# (what the module holds, the network, what the one-line message must say)
FAILURES = {
    "missing module": (None, "mynets.nowhere:Net", r"no module mynets(\.nowhere)? on Python's path; put the folder"),
    "missing package": (None, "nosuchpackage.net:Net", r"no module nosuchpackage on Python's path; .*PYTHONPATH"),
    "missing dependency": (
        "import nosuchdependency\n",
        "mynets.broken:Net",
        r"importing mynets.broken failed \(ModuleNotFoundError: No module named 'nosuchdependency'\); install",
    ),
    "error in the module": ("raise RuntimeError('boom')\n", "mynets.broken:Net", r"failed \(RuntimeError: boom\)"),
    "missing class": (
        "from torch import nn\nclass Other(nn.Module):\n    pass\n",
        "mynets.broken:Net",
        r"module mynets.broken \(.*broken.py\) has no Net \(its nn.Module classes: Other\); fix the import path",
    ),
    "not a module class": (
        "def Net(in_shape, num_classes):\n    return None\n",
        "mynets.broken:Net",
        r"Net in mynets.broken is a function, not an nn.Module class; name a subclass of torch.nn.Module",
    ),
    "constructor refuses": (
        "from torch import nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n",
        "mynets.broken:Net",
        r"Net\(in_shape=\(1, 28, 28\), num_classes=10\) failed \(TypeError: .*\); its constructor must accept",
    ),
    "wrong output": (
        "from torch import nn\nclass Net(nn.Sequential):\n    def __init__(self, in_shape, num_classes):\n"
        "        super().__init__(nn.Flatten(), nn.Linear(784, num_classes + 1))\n",
        "mynets.broken:Net",
        r"gives a tensor of shape \(2, 11\); it must return logits of shape \(N, num_classes\) = \(2, 10\)",
    ),
    "wrong input shape": (
        "from torch import nn\nclass Net(nn.Sequential):\n    def __init__(self, in_shape, num_classes):\n"
        "        super().__init__(nn.Flatten(), nn.Linear(3072, num_classes))\n",
        "mynets.broken:Net",
        r"a batch of shape \(2, 1, 28, 28\) \(N, C, H, W\) fails in its forward pass \(RuntimeError: .*\); it must "
        r"take images of this dataset's shape \(1, 28, 28\)",
    ),
    "not a name": (None, "my nets", r"unknown network 'my nets'; use one of paper_mlp, .*package.module:Class"),
}


@pytest.mark.parametrize("case", FAILURES)
def test_an_import_path_that_leads_to_no_network_says_so_in_one_line(user_modules, case):
    source, network, message = FAILURES[case]
    if source is not None:
        user_modules("broken", source)
    with pytest.raises(TrustcalError, match=message) as err:
        build_network(network, {}, (1, 28, 28), 10)
    text = str(err.value)
    assert isinstance(err.value, NetworkError) and "\n" not in text and repr(network) in text
