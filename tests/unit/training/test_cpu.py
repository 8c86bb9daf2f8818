"""A CPU job's threads and OpenMP waiting (trustcal.training.cpu): the allocation it reads, the probe, the plan."""

import os
import subprocess
import sys

import pytest

from trustcal.training import cpu

STAT = """cpu  10 0 10 100 0 0 0 0 0 0
cpu0 {u0} 0 0 {i0} 0 0 0 0 0 0
cpu1 {u1} 0 0 {i1} {w1} 0 0 0 0 0
intr 1 2 3
"""


def test_cgroup_quota_of_the_own_group_and_those_above_it(tmp_path):
    root = tmp_path / "cgroup"
    (root / "a" / "b").mkdir(parents=True)
    (root / "cpu.max").write_text("max 100000\n")
    (root / "a" / "cpu.max").write_text("300000 100000\n")
    (root / "a" / "b" / "cpu.max").write_text("150000 100000\n")
    own = tmp_path / "self_cgroup"
    own.write_text("0::/a/b\n")
    assert cpu.cgroup_cpu_limit(root, own) == 1.5
    (root / "a" / "b" / "cpu.max").write_text("max 100000\n")
    assert cpu.cgroup_cpu_limit(root, own) == 3.0  # the group above limits it
    (root / "a" / "cpu.max").write_text("max 100000\n")
    assert cpu.cgroup_cpu_limit(root, own) is None


def test_cgroup_v1_quota_and_none_where_nothing_is_readable(tmp_path):
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("50000\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert cpu.cgroup_cpu_limit(tmp_path, tmp_path / "missing") == 0.5
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    assert cpu.cgroup_cpu_limit(tmp_path, tmp_path / "missing") is None
    assert cpu.cgroup_cpu_limit(tmp_path / "nowhere", tmp_path / "missing") is None


def test_cpu_times_read_idle_and_iowait_of_each_cpu():
    times = cpu.cpu_times(STAT.format(u0=5, i0=7, u1=1, i1=2, w1=3))
    assert times == {0: (7, 12), 1: (5, 6)}


def test_busy_cpus_counts_those_idle_less_than_half_of_the_probe(tmp_path, monkeypatch):
    stat = tmp_path / "stat"
    stat.write_text(STAT.format(u0=0, i0=0, u1=0, i1=0, w1=0))
    # over the probe: cpu0 90 busy, 10 idle jiffies; cpu1 40 busy, 60 idle (50 of them iowait)
    later = STAT.format(u0=90, i0=10, u1=40, i1=10, w1=50)
    monkeypatch.setattr(cpu.time, "sleep", lambda s: stat.write_text(later))
    assert cpu.busy_cpus({0, 1}, stat=stat) == 1
    stat.write_text(STAT.format(u0=0, i0=0, u1=0, i1=0, w1=0))
    assert cpu.busy_cpus({1}, stat=stat) == 0
    assert cpu.busy_cpus({0, 1}, stat=tmp_path / "absent") == 0  # not Linux: nothing known to be busy


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or not os.path.exists("/proc/stat"), reason="Linux only")
def test_a_process_spinning_on_a_cpu_makes_the_probe_count_it_busy():
    target = min(os.sched_getaffinity(0))
    spin = f"import os\nos.sched_setaffinity(0, {{{target}}})\nwhile True: pass"
    spinner = subprocess.Popen([sys.executable, "-c", spin])
    try:
        assert cpu.busy_cpus({target}, seconds=0.5) == 1
    finally:
        spinner.kill()
        spinner.wait()


@pytest.mark.parametrize(
    "threads, cpus, quota, busy, want",
    [
        (2, {0, 1}, None, 0, (2, None)),  # idle cores: OpenMP's spinning is fastest
        (2, {0, 1}, None, 1, (2, "PASSIVE")),  # a partner thread shares a core: sleep at once
        (1, {0, 1}, None, 1, (1, None)),  # one thread: nothing waits for a partner, nothing probed
        (4, {0, 1}, None, 0, (2, None)),  # never more threads than the CPUs it may run on
        (2, {0, 1, 2, 3}, 1.5, 0, (1, None)),  # nor than its cgroup's quota
        (2, {0, 1, 2}, None, 2, (2, "PASSIVE")),
    ],
)
def test_the_plan_follows_the_allocation_and_the_load(monkeypatch, threads, cpus, quota, busy, want):
    monkeypatch.setattr(cpu.os, "sched_getaffinity", lambda pid: set(cpus), raising=False)
    monkeypatch.setattr(cpu, "cgroup_cpu_limit", lambda: quota)
    monkeypatch.setattr(cpu, "busy_cpus", lambda cpus, seconds: busy)
    plan = cpu.plan_cpu(threads)
    assert (plan.threads, plan.wait_policy) == want
    assert plan.describe().startswith(f"{want[0]} thread(s) on ")
    assert (plan.busy is None) == (want[0] == 1)


def test_a_one_thread_job_does_not_probe(monkeypatch):
    def probe(cpus, seconds):
        raise AssertionError("probed a one-thread job")

    monkeypatch.setattr(cpu, "busy_cpus", probe)
    plan = cpu.plan_cpu(1)
    assert (plan.threads, plan.wait_policy, plan.busy) == (1, None, None)
    assert "not probed" in plan.describe()


def test_a_wait_policy_the_user_set_is_kept(monkeypatch):
    monkeypatch.setattr(cpu, "plan_cpu", lambda threads: cpu.CpuPlan(2, "PASSIVE", 2, 1))
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    assert cpu.start_cpu_job(2) == 2 and os.environ["OMP_WAIT_POLICY"] == "ACTIVE"
    monkeypatch.delenv("OMP_WAIT_POLICY")
    assert cpu.start_cpu_job(2) == 2 and os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
