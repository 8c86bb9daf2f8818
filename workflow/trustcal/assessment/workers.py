"""Work of an assessment shared out over forked worker processes: the figures (one job each) and the
tables of a long epoch series (chunks of epochs). The workers are forked, so that they inherit the
predictions, the imported modules and whatever the parent drew before the fork (the resample counts):
a job is never pickled, only its index goes to a worker and its result comes back.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from typing import TypeVar

T = TypeVar("T")


def worker_count(jobs: int, processes: int) -> int:
    """Processes that do ``jobs`` jobs: at most ``processes`` (the caller's share of the cores: the
    CLI's every core, a workflow job's threads), at most one per job. Forked, so that they share the
    parent's data and imported modules; where fork is not safe (macOS, Windows) this process alone.
    The library's default is 1, this process alone: forking a process with threads of its own (a
    notebook's kernel) is not safe."""
    if sys.platform != "linux" or jobs < 2:
        return 1
    return max(1, min(jobs, processes, len(os.sched_getaffinity(0))))


_FORKED: list[Callable] = []  # the jobs of the forked workers: inherited, never pickled


def _run_forked(start: int, stop: int) -> list:
    return [_FORKED[i]() for i in range(start, stop)]


def forked(jobs: Sequence[Callable[[], T]], workers: int, chunk: int = 1) -> Iterator[Future[list[T]]]:
    """The futures of ``jobs`` run in ``workers`` forked processes, ``chunk`` consecutive jobs per task,
    in the jobs' order; each future's result is the list of its jobs' results. The jobs are in place
    before the workers are forked, so the workers inherit them. Closing the iterator early (an error in
    the caller) cancels the tasks not yet begun and waits for those running. The workers keep the BLAS
    threads of this process at the fork (:func:`trustcal.numerics.one_blas_thread` held around this call: one each)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    _FORKED[:] = jobs
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            futures = [pool.submit(_run_forked, i, min(i + chunk, len(jobs))) for i in range(0, len(jobs), chunk)]
            try:
                yield from futures
            finally:
                for future in futures:
                    future.cancel()
    finally:
        _FORKED.clear()
