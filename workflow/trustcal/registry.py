"""Every per-dataset and per-network fact in one place: the registry the schema check, the rules, the
training, the figures, the study report and the verdict read (docs/usage.md, "Any dataset, any network").

A *run* of the workflow (the ``{dataset}`` of ``results/{dataset}/seed{seed}/``) is a :class:`Setup`: a
dataset, a network and a training recipe. Each registered dataset name is a setup of its own (its
default network, the paper's recipe); ``setups:`` in the configuration names more, e.g. CIFAR-10 with a
ResNet-20 and SGD, or a user's own images::

    datasets: [cifar10, cifar10_resnet20, leaves]
    setups:
      cifar10_resnet20: {dataset: cifar10, network: resnet20, recipe: sgd}
      leaves: {dataset: {kind: imagefolder, path: data/leaves, size: 32}, network: lenet5}

A network is a registered name (:data:`NETWORKS`), ``torchvision:NAME`` (any classification network of
torchvision, randomly initialised: nothing is downloaded) or the import path of a user's ``nn.Module``
class (``package.module:Class``), built as ``Class(in_shape=(C, H, W), num_classes=K, **kwargs)``.

Nothing here imports torch or torchvision: the figures and the report read it too.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Mapping
from typing import Any

from trustcal.errors import TrustcalError

# --- datasets ------------------------------------------------------------------------------------

DIGITS = tuple(str(d) for d in range(10))
CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
FASHION_CLASSES = (
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
)
KMNIST_CLASSES = ("o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo")
# CIFAR-100's fine labels in the order of its meta file's fine_label_names (label i is the i-th)
CIFAR100_CLASSES = tuple(
    """apple aquarium_fish baby bear beaver bed bee beetle bicycle bottle bowl boy bridge bus butterfly camel
    can castle caterpillar cattle chair chimpanzee clock cloud cockroach couch crab crocodile cup dinosaur
    dolphin elephant flatfish forest fox girl hamster house kangaroo keyboard lamp lawn_mower leopard lion
    lizard lobster man maple_tree motorcycle mountain mouse mushroom oak_tree orange orchid otter palm_tree
    pear pickup_truck pine_tree plain plate poppy porcupine possum rabbit raccoon ray road rocket rose sea
    seal shark shrew skunk skyscraper snail snake spider squirrel streetcar sunflower sweet_pepper table
    tank telephone television tiger tractor train trout tulip turtle wardrobe whale willow_tree wolf woman
    worm""".split()
)

# The md5s of MNIST's uncompressed IDX files (torchvision knows its archives' only), so that files staged
# uncompressed can be checked too
MNIST_CONTENT_MD5 = (
    ("train-images-idx3-ubyte", "6bbc9ace898e44ae57da46a324031adb"),
    ("train-labels-idx1-ubyte", "a25bea736e30d166cdddb491f175f624"),
    ("t10k-images-idx3-ubyte", "2646ac647ad5339dbf082846283269ea"),
    ("t10k-labels-idx1-ubyte", "27ae3e4e09519cfbb04c329615203637"),
)

# How a dataset's files are laid out and read (trustcal.data.staging reads each kind):
IDX = "idx"  # torchvision's MNIST family: four IDX files (or their .gz archives) in <Class>/raw/
CIFAR = "cifar"  # torchvision's CIFAR-10 / CIFAR-100: pickled batches extracted from a .tar.gz
SVHN = "svhn"  # torchvision's SVHN: train_32x32.mat and test_32x32.mat (MATLAB v5 files)
IMAGEFOLDER = "imagefolder"  # a user's images: <path>/train/<class>/*.png|jpg and <path>/test/<class>/…
NPZ = "npz"  # a user's arrays: x_train, y_train, x_test, y_test in one .npz (no pickled objects)
DATASET_KINDS = (IDX, CIFAR, SVHN, IMAGEFOLDER, NPZ)
USER_KINDS = (IMAGEFOLDER, NPZ)


@dataclasses.dataclass(frozen=True)
class PaperFacts:
    """A dataset of the paper: the figure of its trust opinions, the panel of Figure 3 with its losses, and
    the folder of the author's published predictions of it (``reference/author-predictions/``)."""

    trust: str
    panel: str
    author_predictions: str


@dataclasses.dataclass(frozen=True)
class DatasetSpec:
    """One dataset.

    Attributes:
        name: Its key (configuration, paths, tables).
        title: How figures and reports name it.
        kind: How its files are laid out and read (:data:`DATASET_KINDS`).
        shape: (channels, height, width) of its images; None for a user's, read from the files.
        classes: Class names, in label order; () for a user's (read from the files or ``classes:``).
        torchvision: The ``torchvision.datasets`` class whose file names, URLs and md5s it uses.
        network: The network it is trained with unless a setup says otherwise.
        paper: The paper's figures of it (None: not in the paper).
        path: A user's dataset: the folder or file it is read from.
        size: A user's image folder: the side its images are resized to (None: as they are).
        content_md5: The md5s of its uncompressed files, where known beyond the archive md5s of its
            torchvision class (MNIST's IDX files); a file staged uncompressed is checked against them.
    """

    name: str
    title: str
    kind: str
    shape: tuple[int, int, int] | None = None
    classes: tuple[str, ...] = ()
    torchvision: str | None = None
    network: str = "paper_cnn"
    paper: PaperFacts | None = None
    path: str | None = None
    size: int | None = None
    content_md5: tuple[tuple[str, str], ...] = ()

    @property
    def num_classes(self) -> int | None:
        return len(self.classes) or None


DATASETS: dict[str, DatasetSpec] = {
    spec.name: spec
    for spec in (
        DatasetSpec(
            "mnist",
            "MNIST",
            IDX,
            (1, 28, 28),
            DIGITS,
            "MNIST",
            "paper_mlp",
            PaperFacts("1", "a", "MNIST_PRED"),
            content_md5=MNIST_CONTENT_MD5,
        ),
        DatasetSpec("fashion_mnist", "Fashion-MNIST", IDX, (1, 28, 28), FASHION_CLASSES, "FashionMNIST", "paper_mlp"),
        DatasetSpec("kmnist", "KMNIST", IDX, (1, 28, 28), KMNIST_CLASSES, "KMNIST", "paper_mlp"),
        DatasetSpec(
            "cifar10",
            "CIFAR-10",
            CIFAR,
            (3, 32, 32),
            CIFAR10_CLASSES,
            "CIFAR10",
            "paper_cnn",
            PaperFacts("2", "b", "CIFAR_PRED"),
        ),
        DatasetSpec("cifar100", "CIFAR-100", CIFAR, (3, 32, 32), CIFAR100_CLASSES, "CIFAR100", "paper_cnn"),
        DatasetSpec("svhn", "SVHN", SVHN, (3, 32, 32), DIGITS, "SVHN", "paper_cnn"),
    )
}
"""The registered datasets, each read from torchvision's own layout under ``data_dir``."""

PAPER_DATASETS = tuple(name for name, spec in DATASETS.items() if spec.paper is not None)
MNIST, CIFAR10 = DATASETS["mnist"], DATASETS["cifar10"]  # the paper's two, for code written for their files


# --- networks ------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class NetworkSpec:
    """One registered network.

    Attributes:
        name: Its key.
        title: How figures and reports name it.
        factory: The import path of its ``nn.Module`` class (``module:Class``), built as
            ``Class(in_shape=(C, H, W), num_classes=K, **kwargs)`` (``in_shape=(F,)`` for a user's table).
        minutes_per_epoch: CPU minutes an epoch of 45,000 images takes (the train rule's runtime request,
            scaled by the training set's size; measured by benchmarks/bench_training.py --networks, with a
            margin: an upper bound of an epoch's wall time on an idle node with 1 or 2 threads).
        paper: One of the paper's two networks (trained by the multi-seed engine, Adam as Keras has it).
        tables: It reads a user's table (N, F) as well as images (an MLP: ``in_shape=(F,)``); the others are
            convolutional (trustcal.data.tabular refuses them on a table).
    """

    name: str
    title: str
    factory: str
    minutes_per_epoch: float
    paper: bool = False
    tables: bool = False


NETWORKS: dict[str, NetworkSpec] = {
    spec.name: spec
    for spec in (
        # minutes_per_epoch: the slowest epoch of each network on one thread on any machine measured
        # (benchmarks/bench_training.py --networks, benchmarks/README.md "Seconds per epoch of every network":
        # 2026-11-29 on a 2-core AMD EPYC, benchmarks/records/networks-amd/: 4.3 s, 48 s, 15 s, 364 s, 2,386 s;
        # 2-3x the Intel Xeon's of 2026-11-25), doubled and rounded up
        NetworkSpec("paper_mlp", "MLP", "trustcal.training.models:MNISTMLP", 0.15, paper=True, tables=True),
        NetworkSpec("paper_cnn", "CNN", "trustcal.training.models:CIFARCNN", 2.0, paper=True),
        NetworkSpec("lenet5", "LeNet-5", "trustcal.training.networks:LeNet5", 0.5),
        NetworkSpec("resnet20", "ResNet-20", "trustcal.training.networks:ResNet20", 12.5),
        NetworkSpec("wrn16_4", "WRN-16-4", "trustcal.training.networks:WideResNet", 80.0),
    )
}
"""The registered networks; besides these, ``torchvision:NAME`` and ``package.module:Class``."""

TORCHVISION_PREFIX = "torchvision:"
IMPORT_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
# an unregistered network's runtime request: minutes an epoch of 45,000 images (the SLURM request only)
UNKNOWN_NETWORK_MINUTES = 60.0


def network_title(network: str) -> str:
    """How figures name ``network``: its registered title, else the name it was given."""
    spec = NETWORKS.get(network)
    if spec is not None:
        return spec.title
    return network.removeprefix(TORCHVISION_PREFIX).rsplit(":", 1)[-1]


def network_problem(network: str) -> str | None:
    """Why ``network`` names no network (None when it names one); what is checked without importing it."""
    if network in NETWORKS or (network.startswith(TORCHVISION_PREFIX) and network[len(TORCHVISION_PREFIX) :]):
        return None
    if IMPORT_PATH.match(network):
        return None
    return (
        f"unknown network {network!r}; use one of {', '.join(NETWORKS)}, torchvision:NAME (e.g. torchvision:resnet18) "
        "or the import path of your nn.Module class, package.module:Class"
    )


# --- training recipes ----------------------------------------------------------------------------

OPTIMIZERS = ("adam", "sgd")
SCHEDULES = ("constant", "cosine", "onecycle")
AUGMENTATIONS = ("crop", "flip")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Recipe:
    """How a network is trained.

    Attributes:
        optimizer: ``adam`` (Keras' defaults: betas (0.9, 0.999), eps 1e-7; the paper) or ``sgd``.
        learning_rate: The (peak) learning rate.
        batch_size: Samples a step; the last, smaller batch is kept (Keras).
        momentum, nesterov: SGD's.
        weight_decay: L2 penalty (SGD's coupled weight decay, or Adam's).
        schedule: ``constant``, ``cosine`` (to 0 over the epochs, per step) or ``onecycle``.
        augment: ``crop`` (pad by 1/8 of the side, reflect, random crop back) and ``flip`` (horizontal),
            drawn per sample and epoch from the seed's own generator.
        normalise: Standardise each channel by the training split's mean and sd (the paper: x / 255 only).

    Its fields are keywords only: :class:`trustcal.training.config.TrainConfig`, how one seed is trained,
    extends it with the rest of a run.
    """

    optimizer: str = "adam"
    learning_rate: float = 1e-3
    batch_size: int = 32
    momentum: float = 0.9
    nesterov: bool = False
    weight_decay: float = 0.0
    schedule: str = "constant"
    augment: tuple[str, ...] = ()
    normalise: bool = False

    def problems(self) -> list[str]:
        out = []
        if self.optimizer not in OPTIMIZERS:
            out.append(f"optimizer {self.optimizer!r}: use one of {', '.join(OPTIMIZERS)}")
        if self.schedule not in SCHEDULES:
            out.append(f"schedule {self.schedule!r}: use one of {', '.join(SCHEDULES)}")
        out += [f"augment {a!r}: use any of {', '.join(AUGMENTATIONS)}" for a in self.augment if a not in AUGMENTATIONS]
        if not self.learning_rate > 0:
            out.append(f"learning_rate {self.learning_rate}: must be > 0")
        if not 0 <= self.momentum < 1:
            out.append(f"momentum {self.momentum}: must be in [0, 1)")
        if self.weight_decay < 0:
            out.append(f"weight_decay {self.weight_decay}: must be ≥ 0")
        if not isinstance(self.batch_size, int) or self.batch_size < 1:
            out.append(f"batch_size {self.batch_size}: must be a positive integer")
        return out

    @property
    def is_paper(self) -> bool:
        """The paper's recipe (Adam, constant rate, no augmentation or normalisation), at any rate and batch."""
        return (
            self.optimizer == "adam"
            and self.schedule == "constant"
            and not self.augment
            and not self.normalise
            and self.weight_decay == 0
        )


RECIPES: dict[str, Recipe] = {
    "paper": Recipe(),
    # the usual CIFAR recipe of residual networks (He et al. 2016, with a cosine schedule)
    "sgd": Recipe(
        optimizer="sgd",
        learning_rate=0.1,
        batch_size=128,
        momentum=0.9,
        nesterov=True,
        weight_decay=5e-4,
        schedule="cosine",
        augment=("crop", "flip"),
        normalise=True,
    ),
}
"""Named recipes; a setup's ``recipe:`` is a name, or a mapping of fields with an optional ``preset:``."""


# --- setups: what one run trains ------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Setup:
    """One run: a dataset, a network (with its keyword arguments) and a recipe."""

    name: str
    dataset: DatasetSpec
    network: str
    network_kwargs: tuple[tuple[str, Any], ...] = ()
    recipe: Recipe = Recipe()

    @property
    def title(self) -> str:
        """``MNIST (MLP)``: the dataset and the network, as figure titles name a run."""
        return f"{self.dataset.title} ({network_title(self.network)})"

    @property
    def is_paper(self) -> bool:
        """The paper's own setup: its dataset, its network, its recipe (the paper's claims apply)."""
        spec = NETWORKS.get(self.network)
        return (
            self.dataset.paper is not None
            and self.network == self.dataset.network
            and spec is not None
            and spec.paper
            and not self.network_kwargs
            and self.recipe.is_paper
        )


class RegistryError(TrustcalError):
    """A dataset, network or recipe the registry does not know, or a setup that does not fit together."""


def did_you_mean(word: str, choices) -> str:
    """`` (did you mean 'x'?)``, naming the one of ``choices`` closest to ``word``; "" when none is close
    (difflib's similarity of at least 0.6). What a message about an unknown name adds after that name."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _recipe(value, base: Recipe, where: str) -> Recipe:
    if value is None:
        return base
    if isinstance(value, str):
        if value not in RECIPES:
            raise RegistryError(f"{where}: unknown recipe {value!r}; use one of {', '.join(RECIPES)} or a mapping")
        return RECIPES[value] if value != "paper" else base
    if not isinstance(value, Mapping):
        raise RegistryError(f"{where}: a recipe is a name ({', '.join(RECIPES)}) or a mapping of its fields")
    fields = dict(value)
    preset = fields.pop("preset", None)
    start = base if preset in (None, "paper") else _recipe(preset, base, where)
    known = {f.name for f in dataclasses.fields(Recipe)}
    unknown = sorted(set(fields) - known)
    if unknown:
        raise RegistryError(f"{where}: unknown recipe field(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    if "augment" in fields:
        fields["augment"] = tuple(fields["augment"] or ())
    recipe = dataclasses.replace(start, **fields)
    problems = recipe.problems()
    if problems:
        raise RegistryError(f"{where}: " + "; ".join(problems))
    return recipe


def _user_dataset(name: str, value: Mapping, where: str) -> DatasetSpec:
    fields = dict(value)
    kind = fields.pop("kind", None)
    if kind not in USER_KINDS:
        raise RegistryError(
            f"{where}: a dataset of your own needs kind: {' or '.join(USER_KINDS)} (got {kind!r}); "
            f"or name a registered one: {', '.join(DATASETS)}"
        )
    path = fields.pop("path", None)
    if not isinstance(path, str) or not path:
        raise RegistryError(
            f"{where}: a dataset of kind {kind} needs path: (the {'folder' if kind == IMAGEFOLDER else '.npz file'})"
        )
    classes = tuple(str(c) for c in fields.pop("classes", ()) or ())
    size = fields.pop("size", None)
    if size is not None and (kind != IMAGEFOLDER or not isinstance(size, int) or size < 1):
        raise RegistryError(f"{where}: size: is a positive integer, for kind imagefolder only")
    title = str(fields.pop("title", name))
    if fields:
        raise RegistryError(
            f"{where}: unknown field(s) {', '.join(sorted(fields))}; a dataset of your own has kind, path, "
            "classes, size, title"
        )
    return DatasetSpec(name, title, kind, classes=classes, path=path, size=size, network="paper_cnn")


def resolve_setup(name: str, setups: Mapping | None = None, base: Recipe | None = None) -> Setup:
    """The run called ``name``: a registered dataset with its defaults, or ``setups[name]``.

    ``base`` is the recipe the configuration's top-level ``batch_size`` and ``learning_rate`` make of the
    paper's (the recipe of a setup that names none). Raises :class:`RegistryError` with the fix.
    """
    base = base or Recipe()
    setups = setups or {}
    if name in setups:
        where = f"setups: {name}"
        if name in DATASETS:
            raise RegistryError(
                f"{where}: {name} is a registered dataset's name, the run the paper's claims about it are judged on; "
                f"give this setup a name of its own (e.g. {name}_mine)"
            )
        entry = setups[name]
        if not isinstance(entry, Mapping):
            raise RegistryError(f"{where}: a setup is a mapping of dataset, network, network_kwargs, recipe")
        unknown = sorted(set(entry) - {"dataset", "network", "network_kwargs", "recipe"})
        if unknown:
            raise RegistryError(
                f"{where}: unknown field(s) {', '.join(unknown)}; a setup has dataset, network, network_kwargs, recipe"
            )
        ds = entry.get("dataset", name)
        if isinstance(ds, Mapping):
            dataset = _user_dataset(name, ds, f"{where}: dataset")
        elif ds in DATASETS:
            dataset = DATASETS[ds]
        else:
            raise RegistryError(
                f"{where}: unknown dataset {ds!r}; use one of {', '.join(DATASETS)}, or a mapping with "
                f"kind: {' or '.join(USER_KINDS)} and path:"
            )
        network = entry.get("network") or dataset.network
        kwargs = entry.get("network_kwargs") or {}
        if not isinstance(network, str) or (problem := network_problem(network)):
            raise RegistryError(f"{where}: {problem if isinstance(network, str) else 'network: is a name'}")
        if not isinstance(kwargs, Mapping):
            raise RegistryError(f"{where}: network_kwargs: is a mapping of the network's keyword arguments")
        return Setup(name, dataset, network, tuple(sorted(kwargs.items())), _recipe(entry.get("recipe"), base, where))
    if name in DATASETS:
        return Setup(name, DATASETS[name], DATASETS[name].network, (), base)
    raise RegistryError(
        f"datasets: {name!r}{did_you_mean(name, [*DATASETS, *setups])} is neither a registered dataset "
        f"({', '.join(DATASETS)}) nor a name under setups:; fix the name, or define the run under setups:, e.g. "
        f"setups: {{{name}: {{dataset: cifar10, network: resnet20}}}}"
    )


def base_recipe(config: Mapping) -> Recipe:
    """The recipe of a run whose setup names none: the paper's, at the configuration's top-level
    ``batch_size`` and ``learning_rate``."""
    return Recipe(batch_size=config.get("batch_size", 32), learning_rate=config.get("learning_rate", 1e-3))


def setup_of(params: Mapping) -> Setup:
    """The setup a job's ``setup`` param describes (:func:`setup_params`)."""
    entry = params.get("entry")
    return resolve_setup(params["name"], {params["name"]: entry} if entry else {}, Recipe(**params["base"]))


def setup_params(config: Mapping, name: str) -> dict:
    """A run's ``setup`` param: what resolves it (its name, its ``setups:`` entry, the top-level recipe), plain
    data, so that a change of any reruns the jobs that read it."""
    base = base_recipe(config)
    return dict(
        name=name,
        entry=(config.get("setups") or {}).get(name),
        base=dict(batch_size=base.batch_size, learning_rate=base.learning_rate),
    )


def dataset_spec(name: str, entry: str | Mapping | None = None) -> DatasetSpec:
    """The dataset a job reads: the registered ``entry`` (or ``name``), or a user's, described by the mapping
    ``entry`` (a setup's ``dataset:``) and named ``name``."""
    if isinstance(entry, Mapping):
        return _user_dataset(name, entry, f"setups: {name}: dataset")
    key = entry or name
    if key not in DATASETS:
        raise RegistryError(f"unknown dataset {key!r}; use one of {', '.join(DATASETS)}")
    return DATASETS[key]


def dataset_title(name: str, setups: Mapping | None = None) -> str:
    """How figures and reports name the run ``name`` (the name itself when the registry cannot resolve it)."""
    try:
        return resolve_setup(name, setups).title
    except RegistryError:
        return name


def class_names(name: str, setups: Mapping | None = None) -> tuple[str, ...]:
    """The class names of the run ``name``'s dataset, () when unknown."""
    try:
        return resolve_setup(name, setups).dataset.classes
    except RegistryError:
        return ()
