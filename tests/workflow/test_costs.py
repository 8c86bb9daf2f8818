"""What every job of a run cost (issue 23): a `benchmark:` on every rule, and the cost tables
(trustcal.study.read_costs, cost_summary, write_costs; workflow/scripts/study_report.py --costs-only)."""

import re
import subprocess
import sys

import pandas as pd
import pytest
from helpers.workflow import REPO, make_workdir, planned_jobs, snakemake

from trustcal.errors import TrustcalError
from trustcal.study import TOTAL, cost_lines, cost_summary, read_costs, write_costs

HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time"
MIB = 1024**2 / 1e6  # MB per MiB: Snakemake's max_rss is bytes / 1024²


def rules_and_paths() -> dict[str, tuple[str, str]]:
    """rule → (log path, benchmark path) as written in workflow/rules/*.smk."""
    out = {}
    for smk in sorted((REPO / "workflow" / "rules").glob("*.smk")):
        for block in re.split(r"^rule ", smk.read_text(), flags=re.M)[1:]:
            name = block.split(":", 1)[0]

            def path(directive, block=block):
                m = re.search(rf"^    {directive}:\n\s+(.+)\n", block, flags=re.M)
                return m and m.group(1).strip().rstrip(",")

            out[name] = (path("log"), path("benchmark"))
    return out


def test_every_rule_has_a_benchmark_beside_its_log():
    paths = rules_and_paths()
    assert len(paths) >= 12, paths  # download … external: every rule file was read
    for rule, (log, bench) in paths.items():
        assert log and bench, f"rule {rule}: log {log!r}, benchmark {bench!r}"
        assert bench == log.replace("results/logs/", "results/benchmarks/").replace(".log", ".tsv"), rule


def write_tsv(root, rel, *rows):
    path = root / "results" / "benchmarks" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [HEADER] + [f"{s}\t0:00:00\t{rss}\t0\t0\t0\t0\t0\t0\t{cpu}" for s, rss, cpu in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def hand_run(tmp_path):
    """Benchmark files of every path layout of the workflow, with values whose sums are known."""
    write_tsv(tmp_path, "train/mnist/seeds.tsv", (100.00, 1000.00, 180.00))  # seeds trained together
    write_tsv(tmp_path, "train/cifar10/seed1.tsv", (300.50, 2000.00, 590.25))
    write_tsv(tmp_path, "calibrate/mnist/seed0/temperature.tsv", (2.50, 300.00, 2.00))
    write_tsv(tmp_path, "calibrate/mnist/seed0/vector.tsv", (4.00, 310.00, 3.00), (6.00, 320.00, 5.00))  # repeat(…, 2)
    write_tsv(tmp_path, "download/mnist.tsv", (1.00, "NA", "NA"))  # Snakemake sampled nothing
    write_tsv(tmp_path, "verdict/verdict.tsv", (7.00, 500.00, 6.50))  # one job for the run
    write_tsv(tmp_path, "external/resnet.tsv", (11.00, 400.00, 10.00))
    return tmp_path


def test_costs_read_from_hand_written_benchmarks(hand_run):
    costs = read_costs(hand_run / "results")

    def given(v):  # a wildcard the job has, None where it has none
        return None if pd.isna(v) else v

    keys = {
        (r.rule, given(r.dataset), given(r.seed), given(r.calibrator)): (r.wall_s, r.cpu_s, r.max_rss_mb)
        for r in costs.itertuples()
    }
    nan = float("nan")
    expected = {
        ("train", "mnist", None, None): (100.0, 180.0, 1000 * MIB),
        ("train", "cifar10", 1, None): (300.5, 590.25, 2000 * MIB),
        ("calibrate", "mnist", 0, "temperature"): (2.5, 2.0, 300 * MIB),
        ("calibrate", "mnist", 0, "vector"): (5.0, 4.0, 320 * MIB),  # mean time, largest peak of the repeats
        ("download", "mnist", None, None): (1.0, nan, nan),
        ("verdict", None, None, None): (7.0, 6.5, 500 * MIB),
        ("external", "resnet", None, None): (11.0, 10.0, 400 * MIB),
    }
    assert keys.keys() == expected.keys()
    for k, values in expected.items():
        assert keys[k] == pytest.approx(values, rel=1e-15, nan_ok=True), k
    assert costs["file"].str.startswith("benchmarks/").all()


def test_cost_summary_sums_and_maxima(hand_run):
    summary = cost_summary(read_costs(hand_run / "results")).set_index(["rule", "dataset"])
    cols = ["jobs", "wall_s_sum", "wall_s_max", "cpu_s_sum", "cpu_s_max", "max_rss_mb_max"]
    # float64 sums of a few two-decimal numbers: exact to a few ulps
    approx = lambda *v: pytest.approx(v, rel=1e-14, nan_ok=True)  # noqa: E731
    assert tuple(summary.loc[("train", TOTAL), cols]) == approx(2, 400.5, 300.5, 770.25, 590.25, 2000 * MIB)
    assert tuple(summary.loc[("calibrate", "mnist"), cols]) == approx(2, 7.5, 5.0, 6.0, 4.0, 320 * MIB)
    # a job with nothing sampled counts its wall time; its CPU and memory are left out
    assert tuple(summary.loc[(TOTAL, "mnist"), cols]) == approx(4, 108.5, 100.0, 186.0, 180.0, 1000 * MIB)
    assert tuple(summary.loc[(TOTAL, "cifar10"), cols]) == approx(1, 300.5, 300.5, 590.25, 590.25, 2000 * MIB)
    assert tuple(summary.loc[(TOTAL, "resnet"), cols]) == approx(1, 11.0, 11.0, 10.0, 10.0, 400 * MIB)
    # the verdict has no dataset: in its rule's rows and the run's, in no dataset's
    assert summary.loc[("verdict", TOTAL), "jobs"] == 1
    datasets = summary.xs(TOTAL, level="rule").drop(index=TOTAL)
    assert sorted(datasets.index) == ["cifar10", "mnist", "resnet"] and datasets["jobs"].sum() == 6
    assert tuple(summary.loc[(TOTAL, TOTAL), cols]) == approx(7, 427.0, 300.5, 792.75, 590.25, 2000 * MIB)
    # per rule, the per-dataset rows add up to the rule's total
    per = summary.drop(index=TOTAL, level="rule").drop(index=TOTAL, level="dataset")
    assert per.groupby(level="rule")["wall_s_sum"].sum().to_dict() == pytest.approx(
        summary.xs(TOTAL, level="dataset").drop(index=TOTAL)["wall_s_sum"].to_dict(), rel=1e-14
    )


def test_cost_lines_rank_rules_and_compare_training(hand_run):
    lines = cost_lines(cost_summary(read_costs(hand_run / "results")))
    rows = [line for line in lines if line.startswith("| `")]
    assert [r.split("|")[1].strip() for r in rows] == [
        "`train`",
        "`external`",
        "`calibrate`",
        "`verdict`",
        "`download`",
    ]  # by wall time, largest first
    assert rows[0].split("|")[2:8] == [
        " 2 ",
        " 6 min 40 s ",
        " 5 min 00 s ",
        " 12 min 50 s ",
        " 9 min 50 s ",
        " 2,097 MB ",
    ]
    assert rows[-1].split("|")[4:8] == [" 1.0 s ", " – ", " – ", " – "]
    assert (
        lines[-1]
        == "Job wall time of training (`train`): 6 min 40 s; of every other rule: 26.5 s (0.07 × the training)."
    )
    # the train jobs' 400 s against epochs that took 800 s (≤ 2×): the jobs trained, the same line
    assert cost_lines(cost_summary(read_costs(hand_run / "results")), 800.0)[-1] == lines[-1]


def test_cost_lines_compare_with_the_epochs_when_training_resumed(hand_run):
    """A run continued by a later invocation: its train jobs resumed from checkpoints (400 s of job wall time
    against 4,000 s of epochs in the histories), so the rest (26.5 s) is compared with the epochs' seconds."""
    line = cost_lines(cost_summary(read_costs(hand_run / "results")), 4000.0)[-1]
    assert line == (
        "Job wall time of training (`train`): 6 min 40 s in the last invocation, whose train jobs resumed from "
        "checkpoints that earlier invocations wrote; the epochs' own seconds in every seed's history.csv: "
        "1 h 07 min. Job wall time of every other rule: 26.5 s (0.01 × the epochs' training time)."
    )


@pytest.mark.parametrize(
    ("rel", "content", "expected"),
    [
        ("calibrate/mnist/seed0/vector.tsv", "s\tmax_rss\n1.0\t2.0\n", "missing column(s) ['cpu_time']"),
        ("calibrate/mnist/seed0/vector.tsv", HEADER + "\n", "(no row)"),
        ("calibrate/mnist/seed0/vector.tsv", "", "unreadable benchmark file"),
        ("calibrate/mnist/seed0/vector/extra.tsv", HEADER + "\n1\t0\t1\t0\t0\t0\t0\t0\t0\t1\n", "not a benchmark path"),
    ],
)
def test_a_damaged_benchmark_file_is_named_with_the_fix(tmp_path, rel, content, expected):
    path = tmp_path / "results" / "benchmarks" / rel
    path.parent.mkdir(parents=True)
    path.write_text(content)
    with pytest.raises(TrustcalError) as info:
        read_costs(tmp_path / "results")
    message = str(info.value)
    assert expected in message and "\n" not in message
    assert rel.split("/")[-1] in message and ("delete it" in message)


def test_no_benchmarks_says_so(tmp_path):
    (tmp_path / "results").mkdir()
    with pytest.raises(TrustcalError, match=r"results/benchmarks: no benchmark files .*run the workflow"):
        read_costs(tmp_path / "results")


def study_report(*args):
    cmd = [sys.executable, str(REPO / "workflow" / "scripts" / "study_report.py"), *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_study_report_costs_only_writes_into_the_run(hand_run, tmp_path):
    proc = study_report(hand_run, "--costs-only")
    assert proc.returncode == 0, proc.stderr
    out = hand_run / "results" / "study"
    costs = pd.read_csv(out / "costs.csv")
    assert len(costs) == 7 and list(costs.columns[:4]) == ["rule", "dataset", "seed", "calibrator"]
    summary = pd.read_csv(out / "costs_summary.csv", keep_default_na=False)
    assert summary.loc[(summary["rule"] == TOTAL) & (summary["dataset"] == TOTAL), "jobs"].item() == 7
    assert (out / "costs.md").read_text().splitlines()[-1].startswith("Job wall time of training")
    empty = tmp_path / "empty"
    (empty / "results").mkdir(parents=True)
    proc = study_report(empty, "--costs-only")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()] and "no benchmark files" in proc.stderr


@pytest.mark.parametrize(
    "args, says",
    [
        ((), "give RUN_DIR, or --keep-paper with --beyond"),
        (("run", "--keep-paper", "--beyond", "other"), "give RUN_DIR, or --keep-paper with --beyond"),
        (("--keep-paper",), "--keep-paper reads only --beyond runs"),
    ],
)
def test_study_report_says_which_runs_it_needs_before_reading_any(args, says, tmp_path):
    """Neither a run nor --keep-paper, both, or --keep-paper with no run beyond the paper's to read: argparse's
    usage and one line saying what to give, exit 2, nothing written."""
    proc = study_report(*args)
    assert proc.returncode == 2 and says in proc.stderr.splitlines()[-1] and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_every_job_of_the_tiny_run_has_its_cost(finished, tmp_path):
    costs = read_costs(finished / "results")
    jobs = planned_jobs(finished, "--forceall")  # what the run executed
    jobs.pop("all")
    assert costs.groupby("rule").size().to_dict() == jobs
    assert costs["wall_s"].gt(0).all() and costs["max_rss_mb"].gt(0).all() and costs["cpu_s"].ge(0).all()
    datasets = {"mnist", "cifar10"}
    calibrate = costs[costs["rule"] == "calibrate"]
    assert set(zip(calibrate["dataset"], calibrate["seed"], calibrate["calibrator"])) == {
        (ds, 0, "temperature") for ds in datasets
    }
    for rule in ("train", "logits", "trust", "scores", "trust_bootstrap", "calibration_table"):
        rows = costs[costs["rule"] == rule]
        assert set(zip(rows["dataset"], rows["seed"])) == {(ds, 0) for ds in datasets}, rule
    assert costs.loc[costs["rule"] == "verdict", "dataset"].isna().all()
    written, summary, _ = write_costs(finished / "results", tmp_path)
    assert summary.set_index(["rule", "dataset"]).loc[(TOTAL, TOTAL), "jobs"] == len(costs) == len(written)
    assert pd.read_csv(tmp_path / "costs.csv")["wall_s"].sum() == pytest.approx(costs["wall_s"].sum(), rel=1e-5)


def slurm_requests(workdir, epochs, methods) -> dict[str, tuple[int, int]]:
    """rule → (mem_mb, runtime) of the dry run's first job of each rule, submitted with profiles/slurm."""
    calibration = f"calibration={{methods: [{', '.join(methods)}]}}"
    proc = snakemake(
        workdir,
        "--dry-run",
        "--workflow-profile",
        str(REPO / "profiles" / "slurm"),
        "--config",
        f"epochs={epochs}",
        calibration,
    )
    out = proc.stdout + proc.stderr
    found = {}
    for rule, res in re.findall(r"^ *rule (\w+):.*?^ *resources: ([^\n]*)", out, flags=re.S | re.M):
        mem, runtime = re.search(r"mem_mb=(\d+)", res), re.search(r"runtime=(\d+)", res)
        found.setdefault(rule, (int(mem.group(1)), int(runtime.group(1))))
    return found


@pytest.mark.cluster
def test_slurm_requests_grow_with_epochs_and_calibrators_as_recorded(tmp_path):
    """The rules' requests reach the submission (the profile does not replace them) and grow as the
    recorded costs do: linearly in epochs, and in calibration states where a job holds every state."""
    workdir = make_workdir(tmp_path / "work", datasets=["mnist"])
    paper = ["temperature"]  # 2 states: the raw model and temperature scaling
    every = ["temperature", "vector", "matrix", "dirichlet", "histogram", "isotonic"]  # 7 states
    short, long, wide = (
        slurm_requests(workdir, 3, paper),
        slurm_requests(workdir, 100, paper),
        slurm_requests(workdir, 100, every),
    )
    for rule in ("logits", "calibrate", "trust", "scores", "trust_bootstrap", "train"):
        assert long[rule][1] > short[rule][1], rule  # runtime grows with the epochs
    for rule in ("calibrate", "trust", "scores", "trust_bootstrap"):
        assert long[rule][0] > short[rule][0], rule  # so does the memory of the jobs that hold every epoch
    # per epoch and calibration state: 97 more epochs × 2 states, then 100 epochs × 5 more states;
    # each request is rounded up to a whole MB, so each difference is off by less than 2 MB
    for rule in ("trust", "scores"):
        assert (wide[rule][0] - long[rule][0]) * 97 * 2 == pytest.approx(
            (long[rule][0] - short[rule][0]) * 100 * 5, abs=2 * (97 * 2 + 100 * 5)
        ), rule
    assert wide["trust_bootstrap"] == long["trust_bootstrap"]  # the raw model and temperature scaling only
    assert wide["prepare"] == long["prepare"] == short["prepare"]
