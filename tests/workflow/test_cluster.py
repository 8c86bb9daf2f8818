"""The SLURM profile (profiles/slurm): what it would submit, and a real run through slurmctld.

The dry runs need only the executor plugin (the `test` extra). The live test
needs the single-node test SLURM of tests/cluster/start_slurm.sh (as root:
`tests/cluster/start_slurm.sh`, then `export TRUSTCAL_SLURM=1`; `.ci/run`
does both when the machine allows). Without it the live test is skipped with
the reason; with TRUSTCAL_SLURM=1 set, a SLURM that is not usable is a failure.
"""

import getpass
import os
import re
import shutil
import subprocess
import time
from collections import Counter

import numpy as np
import pandas as pd
import pytest
import yaml
from helpers.workflow import REPO, make_workdir, planned_jobs, snakemake

pytestmark = pytest.mark.cluster

PROFILE = REPO / "profiles" / "slurm"
TEST_PARTITION, TEST_ACCOUNT = "cpu", "trustcal"  # what tests/cluster/start_slurm.sh creates
RESULT_FILES = ("history.csv", "calibration.csv", "trust.csv", "scores.csv", "dynamic_trust.csv", "trust_sweep.csv")


def local_rules() -> set[str]:
    """Rules run on the submit host: those with `localrule: True` in the rule files, and `all`."""
    names = {"all"}
    for smk in (REPO / "workflow" / "rules").glob("*.smk"):
        for rule in re.split(r"^rule ", smk.read_text(), flags=re.M)[1:]:
            if re.search(r"^    localrule: True$", rule, flags=re.M):
                names.add(rule.split(":", 1)[0])
    return names


def planned_submissions(workdir, *args) -> tuple[Counter, dict[str, int], str]:
    """Dry run with the SLURM profile → (cluster jobs by rule or `group:NAME`, rule → job count, output)."""
    proc = snakemake(workdir, "--dry-run", "--workflow-profile", str(PROFILE), *args)
    out = proc.stdout + proc.stderr
    local = local_rules()
    submissions = Counter()
    for m in re.finditer(r"^(?:\[[^\]]*\] )?(?:rule (\w+):|Group job (\w+) )", out, flags=re.M):
        rule, group = m.groups()  # rules inside a group are indented: not matched
        if group:
            submissions[f"group:{group}"] += 1
        elif rule not in local:
            submissions[rule] += 1
    table = out.split("Job stats:", 1)[1]
    counts = {
        m.group(1): int(m.group(2))
        for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", table, flags=re.M)
        if m.group(1) != "total"
    }
    return submissions, counts, out


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return make_workdir(tmp_path_factory.mktemp("dry") / "work")


def test_slurm_profile_submits_one_job_per_stage_not_per_rule(tiny):
    """2 datasets × 1 seed: prepare ×2, train ×2 and one grouped evaluation job ×2; the rest runs locally."""
    submissions, counts, out = planned_submissions(tiny)
    assert submissions == Counter({"prepare": 2, "train": 2, "group:evaluate": 2}), submissions
    assert {"download", "figures"} <= local_rules()
    assert counts == planned_jobs(tiny)  # the same jobs as a local run, in 6 cluster submissions
    train = re.findall(r"^rule train:.*?resources: ([^\n]*)", out, flags=re.S | re.M)
    assert len(train) == 2
    for res in train:
        assert "gpu=1" in res and "cpus_per_gpu=2" in res, res
        # Recent Snakemake (9.15 here) prints string resources as <TBD> in a dry run; the
        # live test below checks in sacct that train ran in the gpu partition.
        assert re.search(r"slurm_partition=(gpu|<TBD>)(,|$)", res), res
    profile = yaml.safe_load((PROFILE / "config.yaml").read_text())
    assert profile["set-resources"]["train"]["slurm_partition"] == "gpu"
    groups = re.findall(r"^\[[^\n]*Group job evaluate[^\n]*\n(.*?)(?=^\[|\Z)", out, flags=re.S | re.M)
    assert len(groups) == 2
    for group in groups:  # one dataset × seed's post-training steps per cluster job
        assert sorted(re.findall(r"rule (\w+):", group)) == [
            "calibrate",
            "calibration_table",
            "logits",
            "scores",
            "trust",
            "trust_bootstrap",
        ], group
        # one dataset × seed (calibrate also names its calibrator)
        assert len(set(re.findall(r"wildcards: (dataset=\w+, seed=\d+)", group))) == 1, group


def test_a_100_epoch_run_is_still_a_few_jobs_per_dataset_and_seed(tiny):
    submissions, counts, _ = planned_submissions(tiny, "--config", "epochs=100", "seeds=[0, 1, 2]")
    runs = 2 * 3  # datasets × seeds
    assert counts["train"] == runs and counts["logits"] == runs
    assert submissions == Counter({"prepare": 2, "train": runs, "group:evaluate": runs}), submissions


def test_retries_scale_memory_and_runtime_with_the_attempt():
    profile = yaml.safe_load((PROFILE / "config.yaml").read_text())
    assert profile["executor"] == "slurm" and profile["retries"] >= 1
    # each rule's mem_mb and runtime grow with the attempt (common.smk: scaled); the profile does not
    # replace them (tests/workflow/test_costs.py: the sizes recorded per epoch reach the submission)
    rules = "".join(smk.read_text() for smk in (REPO / "workflow" / "rules").glob("*.smk"))
    requests = re.findall(r"^        (mem_mb|runtime)=(.*)$", rules, flags=re.M)
    assert len(requests) == 2 * len(re.findall(r"^rule ", rules, flags=re.M))  # every rule states both
    for name, value in requests:
        assert value.startswith("scaled(") or "attempt" in value, (name, value)
    for rule, settings in profile["set-resources"].items():
        assert not {"mem_mb", "runtime"} & set(settings), rule


# --- a real run through slurmctld --------------------------------------------------------


def _run(*cmd: str) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=True).stdout


def slurm_unusable() -> str | None:
    """Why the test SLURM cannot be used, or None when it can."""
    if not shutil.which("sbatch") or not shutil.which("sinfo"):
        return "SLURM client commands (sbatch, sinfo) not found"
    try:
        parts = _run("sinfo", "-h", "-o", "%R %a %T")
        assoc = _run("sacctmgr", "-n", "-P", "show", "assoc", f"user={getpass.getuser()}", "format=account")
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        detail = (getattr(exc, "stderr", None) or str(exc)).strip()
        return f"SLURM is not answering ({' '.join(exc.cmd)}: {detail})"
    states = {p.split()[0]: p.split()[1:] for p in parts.splitlines() if p.strip()}
    for partition in (TEST_PARTITION, "gpu"):
        if partition not in states or states[partition][0] != "up":
            return f"partition {partition!r} not up (sinfo: {parts.strip()!r})"
        if not re.match(r"(idle|mixed|allocated)", states[partition][1]):
            return f"no usable node in partition {partition!r} (sinfo: {parts.strip()!r})"
    if TEST_ACCOUNT not in assoc.split():
        return f"account {TEST_ACCOUNT!r} not found (sacctmgr: {assoc.strip()!r})"
    return None


@pytest.fixture(scope="module")
def slurm():
    reason = slurm_unusable()
    if reason is None:
        return
    message = f"{reason}; start the test SLURM with `tests/cluster/start_slurm.sh` (root) and export TRUSTCAL_SLURM=1"
    if os.environ.get("TRUSTCAL_SLURM") == "1":
        pytest.fail(f"TRUSTCAL_SLURM=1 but the test SLURM is not usable: {message}")
    pytest.skip(f"no test SLURM: {message}")


def user_profile(dst):
    """profiles/slurm with the two lines a user edits (partition, account) set for the test cluster.

    The only other change: the first status check 5 s after a submission
    instead of 40 s, which makes the test faster, not different.
    """
    profile = yaml.safe_load((PROFILE / "config.yaml").read_text())
    profile["default-resources"]["slurm_partition"] = TEST_PARTITION
    profile["default-resources"]["slurm_account"] = TEST_ACCOUNT
    profile["slurm-init-seconds-before-status-checks"] = 5
    dst.mkdir(parents=True)
    (dst / "config.yaml").write_text(yaml.safe_dump(profile, sort_keys=False))
    return dst


def test_tiny_run_through_slurm_matches_the_local_run(slurm, tmp_path):
    import torch

    device = "cpu" if torch.cuda.is_available() else "auto"  # auto: exercises the logged CPU fallback
    config = dict(datasets=["mnist"], epochs=2, device=device)
    local = make_workdir(tmp_path / "local", **config)
    cluster = make_workdir(tmp_path / "cluster", **config)

    snakemake(local, *(f"results/mnist/seed0/{name}" for name in RESULT_FILES))  # the tables to compare
    tic = time.monotonic()
    proc = snakemake(cluster, "--workflow-profile", str(user_profile(tmp_path / "profile")), timeout=900)
    seconds = time.monotonic() - tic
    out = proc.stdout + proc.stderr

    # every non-local job ran as a SLURM job: prepare, train and the evaluate group
    submitted = re.findall(r"has been submitted with SLURM jobid (\d+) \(log: (\S+)\)", out)
    kinds = sorted(re.search(r"slurm_logs/(rule_\w+|group_[a-z]+)", log).group(1) for _, log in submitted)
    assert kinds == ["group_evaluate", "rule_prepare", "rule_train"], out
    assert not re.search(r"submitted with SLURM jobid.*/rule_(download|figures)/", out)
    for _, log in submitted:
        assert os.path.getsize(log) > 0, log  # the job's own output, kept by slurm-keep-successful-logs
    ids = ",".join(j for j, _ in submitted)
    rows = _run("sacct", "-X", "-n", "-P", "-j", ids, "-o", "JobID,State,Partition,Account,AllocTRES")
    acct = {r.split("|")[0]: r.split("|") for r in rows.splitlines()}
    assert set(acct) == {j for j, _ in submitted}, rows  # one SLURM job each, no retries
    for jobid, log in submitted:
        _, state, partition, account, tres = acct[jobid]
        assert state == "COMPLETED" and account == TEST_ACCOUNT, acct[jobid]
        if "rule_train" in log:
            # the GPU request of the profile; 2 CPUs = the rule's threads, as in the local run
            assert partition == "gpu" and "gres/gpu=1" in tres and "cpu=2," in tres, acct[jobid]
        else:
            assert partition == TEST_PARTITION and "gres/gpu" not in tres, acct[jobid]

    # the training job used SLURM's allocation and (no CUDA here) fell back to the CPU with a warning
    train_log = (cluster / "results" / "logs" / "train" / "mnist" / "seed0.log").read_text()
    if device == "auto":
        assert "device: auto found no CUDA GPU; training on the CPU" in train_log

    # same numbers as the local run
    for name in RESULT_FILES:
        a = pd.read_csv(local / "results" / "mnist" / "seed0" / name)
        b = pd.read_csv(cluster / "results" / "mnist" / "seed0" / name)
        if "seconds" in a:
            a, b = a.drop(columns="seconds"), b.drop(columns="seconds")
        pd.testing.assert_frame_equal(a, b, check_exact=False, rtol=1e-12, atol=0, obj=name)
    for epoch in (1, 2):
        with (
            np.load(local / f"results/mnist/seed0/logits/epoch{epoch:03d}.npz") as x,
            np.load(cluster / f"results/mnist/seed0/logits/epoch{epoch:03d}.npz") as y,
        ):
            for key in x.files:
                np.testing.assert_array_equal(x[key], y[key], err_msg=key)
    for fig in ("trust_grid.png", "loss_curves.pdf"):
        assert (cluster / "results" / "figures" / "mnist" / fig).stat().st_size > 10_000
    print(f"SLURM run: {seconds:.0f} s, SLURM job ids {ids}")
