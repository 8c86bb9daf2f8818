"""Work of an assessment shared out over forked worker processes: the figures (one job each) and the
tables of a long epoch series (chunks of epochs). The workers are forked, so that they inherit the
predictions, the imported modules and whatever the parent drew before the fork (the resample counts):
a job is never pickled, only its index goes to a worker and its result comes back.

The workers end with the process that forked them, whatever ends it: on Linux each asks the kernel for
SIGKILL when its parent dies (``PR_SET_PDEATHSIG``), so a parent killed by SIGKILL or SIGTERM leaves no
worker behind, blocked for ever on the pipe of its tasks; a parent that stops early (an error,
Ctrl-C, SIGTERM) kills its workers instead of waiting for their tasks. A worker holds none of the
writer's locks its parent holds (:func:`trustcal.files.locks.writer_lock`: the copies a fork
inherits are closed in the child), so the lock goes with the parent.
"""

from __future__ import annotations

import os
import signal
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

PR_SET_PDEATHSIG = 1  # prctl(2): the signal this process gets when its parent (the thread that forked it) dies


def _die_with_parent() -> bool:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux ``prctl(PR_SET_PDEATHSIG)``);
    whether it took."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):  # no libc prctl (not Linux)
        return False


def _start_worker(parent: int) -> None:
    """The first thing a forked worker does: end with ``parent`` (its pid), whatever kills it, and leave
    interruptions to it: Ctrl-C (SIGINT, sent to the whole process group) is the parent's to handle, which
    then kills its workers; SIGTERM ends a worker at once. A parent that died between the fork and the
    ``prctl`` (the worker was re-parented already) ends the worker here."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with_parent()
    if os.getppid() != parent:
        os._exit(1)


def _kill_workers(pool) -> None:
    """SIGKILL the worker processes of ``pool`` (a ProcessPoolExecutor), by their pids: the work of a
    caller that stopped early, whose results nobody will read."""
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        try:
            process.kill()
        except (OSError, ValueError, AttributeError):  # already gone, or closed
            pass


def _run_forked(start: int, stop: int) -> list:
    return [_FORKED[i]() for i in range(start, stop)]


def forked(jobs: Sequence[Callable[[], T]], workers: int, chunk: int = 1) -> Iterator[Future[list[T]]]:
    """The futures of ``jobs`` run in ``workers`` forked processes, ``chunk`` consecutive jobs per task,
    in the jobs' order; each future's result is the list of its jobs' results. The jobs are in place
    before the workers are forked, so the workers inherit them. Closing the iterator early (an error in
    the caller, Ctrl-C, SIGTERM) cancels the tasks not yet begun and kills the workers (:func:`_kill_workers`),
    those running included. Each worker ends with this process (:func:`_start_worker`). The workers keep the BLAS
    threads of this process at the fork (:func:`trustcal.numerics.one_blas_thread` held around this call: one each)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    _FORKED[:] = jobs
    try:
        with ProcessPoolExecutor(
            workers,
            mp_context=multiprocessing.get_context("fork"),
            initializer=_start_worker,
            initargs=(os.getpid(),),
        ) as pool:
            futures = [pool.submit(_run_forked, i, min(i + chunk, len(jobs))) for i in range(0, len(jobs), chunk)]
            try:
                yield from futures
            finally:
                for future in futures:
                    future.cancel()
                if not all(future.done() for future in futures):  # tasks still running: nobody will read them
                    _kill_workers(pool)
    finally:
        _FORKED.clear()
