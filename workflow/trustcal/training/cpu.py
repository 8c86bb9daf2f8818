"""How a CPU job of training or logits runs its threads: how many, and how the idle ones wait.

Chosen when the job starts, before PyTorch (and its OpenMP runtime) is loaded, from what the job was given and
what the machine shows, not from one fixed setting:

- **Threads**: the job's Snakemake ``threads``, but never more than the CPUs it may run on: its CPU affinity
  (``taskset``, a SLURM allocation, a container's cpuset) and its cgroup's CPU quota (``cpu.max``; v1's
  ``cpu.cfs_quota_us``). More threads than CPUs only queue for them. The count does not follow the load:
  for a given allocation it is fixed, since the numbers differ in the last bits with the thread count (the
  paper's MLP between 1 and 2 threads; the paper's CNN between 2 and 3, and between 1 and 2 with seeds stacked
  in one job: benchmarks/README.md, "Training on a busy CPU"), and a run must give the same numbers whatever
  else the machine was doing.
- **Waiting**: OpenMP's threads spin between parallel regions (``OMP_WAIT_POLICY`` unset): best on idle
  cores, disastrous on a core another process uses (the spinning thread holds the core its own partner needs:
  an MLP step 5.6× slower with one of two cores busy). With ``PASSIVE`` they sleep at once: 1.4–1.7× instead,
  but 1.6× slower on idle cores. So a short probe (:func:`busy_cpus`: each allowed CPU's idle share over
  0.2 s, from ``/proc/stat``) decides: passive when fewer CPUs are idle than the job runs threads, else
  OpenMP's default. One thread has no partner to wait for, so a one-thread job skips the probe. A policy the
  user set in the environment is kept. Waiting changes no number.

benchmarks/README.md ("Training on a busy CPU") measures it: ``bench_training.py --busy N``.
"""

from __future__ import annotations

import logging
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

PROBE_SECONDS = 0.2
IDLE_SHARE = 0.5  # a CPU idle for less than this share of the probe counts as busy


@dataclass(frozen=True)
class CpuPlan:
    """``threads`` to run, ``wait_policy`` for ``OMP_WAIT_POLICY`` (None: OpenMP's default), and why."""

    threads: int
    wait_policy: str | None
    allowed: int  # CPUs the job may use (affinity, cgroup quota)
    busy: int | None  # of its affinity's CPUs, those another process kept busy during the probe (None: not probed)

    def describe(self) -> str:
        wait = f"OMP_WAIT_POLICY={self.wait_policy}" if self.wait_policy else "OpenMP's default waiting"
        load = "not probed (one thread)" if self.busy is None else f"{self.busy} busy at the start"
        return f"{self.threads} thread(s) on {self.allowed} allowed CPU(s), {load}: {wait}"


def cgroup_cpu_limit(root: str | Path = "/sys/fs/cgroup", own: str | Path = "/proc/self/cgroup") -> float | None:
    """The CPUs the quotas of this process's cgroup and those above it allow (the least quota / period), or
    None without a quota (or a readable one)."""
    root = Path(root)
    try:  # cgroup v2: "0::/path" names the process's own group below the root
        path = next(line[3:] for line in Path(own).read_text().splitlines() if line.startswith("0::"))
        groups = [root / path.strip("/"), *(root / path.strip("/")).parents]
    except (OSError, StopIteration):
        groups = [root]
    limits = []
    for group in groups:
        if not str(group).startswith(str(root)):
            break
        try:
            quota, period = (group / "cpu.max").read_text().split()[:2]  # "max 100000" or "200000 100000"
            if quota != "max":
                limits.append(int(quota) / int(period))
        except (OSError, ValueError):
            pass
    if limits:
        return min(limits)
    try:  # cgroup v1
        quota = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        period = int((root / "cpu" / "cpu.cfs_period_us").read_text())
        return None if quota <= 0 else quota / period
    except (OSError, ValueError):
        return None


def cpu_times(stat: str) -> dict[int, tuple[int, int]]:
    """(idle, total) jiffies of each CPU in the text of ``/proc/stat`` (idle counts iowait too)."""
    times = {}
    for line in stat.splitlines():
        name, *fields = line.split()
        if name.startswith("cpu") and name[3:].isdigit():
            values = [int(v) for v in fields[:8]]  # user nice system idle iowait irq softirq steal
            times[int(name[3:])] = (values[3] + values[4], sum(values))
    return times


def busy_cpus(cpus: set[int], seconds: float = PROBE_SECONDS, stat: str | Path = "/proc/stat") -> int:
    """How many of ``cpus`` were idle less than :data:`IDLE_SHARE` of ``seconds`` (0 where /proc/stat is
    unreadable: not Linux)."""
    try:
        before = cpu_times(Path(stat).read_text())
        time.sleep(seconds)
        after = cpu_times(Path(stat).read_text())
    except OSError:
        return 0
    busy = 0
    for cpu in cpus & before.keys() & after.keys():
        idle, total = (a - b for a, b in zip(after[cpu], before[cpu]))
        busy += total > 0 and idle / total < IDLE_SHARE
    return busy


def plan_cpu(threads: int, probe_seconds: float = PROBE_SECONDS) -> CpuPlan:
    """The plan of a job given ``threads`` (see the module's docstring)."""
    cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set(range(os.cpu_count() or 1))
    limit = cgroup_cpu_limit()
    allowed = len(cpus) if limit is None else max(1, min(len(cpus), math.floor(limit)))
    use = max(1, min(int(threads), allowed))
    if use == 1:  # no partner thread to wait for: the policy is moot, the probe's 0.2 s wasted
        return CpuPlan(1, None, allowed, None)
    busy = busy_cpus(cpus, probe_seconds)
    shared = len(cpus) - busy < use
    return CpuPlan(use, "PASSIVE" if shared else None, allowed, busy)


def start_cpu_job(threads: int) -> int:
    """At the top of a job's process, before PyTorch is imported: plan, set ``OMP_WAIT_POLICY`` (unless the
    environment sets it), log the plan; the threads to run."""
    plan = plan_cpu(threads)
    if plan.wait_policy and "OMP_WAIT_POLICY" not in os.environ:
        os.environ["OMP_WAIT_POLICY"] = plan.wait_policy
    log.info("CPU: %s", plan.describe())
    return plan.threads
