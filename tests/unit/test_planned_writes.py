"""The files a run is about to write, from its rules' patterns and its configuration (trustcal.files.planned):
what the workflow's onstart checks can be written, without Snakemake's job graph."""

from trustcal.files.planned import planned_writes, wildcards

TRAIN = (
    ["results/{dataset}/seed{seed}/history.csv"],
    [
        "results/{dataset}/seed{seed}/history.csv",
        "results/logs/train/{dataset}/seed{seed}.log",
        "results/benchmarks/train/{dataset}/seed{seed}.tsv",
    ],
)
PREPARE = (
    ["results/data/{dataset}/splits.npz"],
    ["results/data/{dataset}/splits.npz", "results/logs/prepare/{dataset}.log"],
)
SEEDS = {"mnist": ["0", "1"], "cifar10": ["0"]}
RUNS = {"dataset": ["mnist", "cifar10"], "seed": lambda job: SEEDS[job["dataset"]]}


def test_wildcards_in_order_once_each():
    assert wildcards("results/{dataset}/seed{seed}/{dataset}.csv") == ["dataset", "seed"]
    assert wildcards("results/reproduction.md") == []


def test_the_jobs_with_a_missing_output_write_their_outputs_logs_and_benchmarks():
    done = {"results/data/mnist/splits.npz", "results/mnist/seed0/history.csv"}
    planned = planned_writes(
        [(*PREPARE, {"dataset": ["mnist", "cifar10"]}), (*TRAIN, RUNS)],
        exists=done.__contains__,
    )
    assert planned == [
        "results/data/cifar10/splits.npz",
        "results/logs/prepare/cifar10.log",
        "results/mnist/seed1/history.csv",  # each run's own seeds, in the rules' order
        "results/logs/train/mnist/seed1.log",
        "results/benchmarks/train/mnist/seed1.tsv",
        "results/cifar10/seed0/history.csv",
        "results/logs/train/cifar10/seed0.log",
        "results/benchmarks/train/cifar10/seed0.tsv",
    ]


def test_a_rule_without_outputs_or_values_has_no_job():
    rules = [([], ["results/logs/all.log"], {}), (*TRAIN, {"dataset": ["mnist"]})]  # no seeds: no job
    assert planned_writes(rules, exists=lambda path: False) == []
    assert planned_writes([(["a.txt"], ["a.txt", "a.log"], {})], exists=lambda path: False) == ["a.txt", "a.log"]
