"""The progress of ``trustcal assess`` on its error stream: a bar on a terminal, timed lines elsewhere (a log
file, a pipe), and a heartbeat while one item takes long; kept apart from the command line's parsing."""

from __future__ import annotations

import os
import threading
import time

PLAIN_AFTER = 5.0  # seconds: off a terminal, a phase says nothing before this (short runs stay silent) …
PLAIN_EVERY = 10.0  # … and then a line at most this often as its items are done …
BEAT_EVERY = 9.5  # … and at least every 10 s while one item takes long (a file of a million rows): a thread
# woken a little early, so that a busy machine, slow to run it, still keeps the lines 10 s apart at most
BAR_REFRESH = 1.0  # seconds: on a terminal, a bar's elapsed time is redrawn this often while an item takes long
_wall = time.monotonic  # the real clock of the heartbeat, whatever clock the lines show

# Held while the progress writes from its heartbeat thread; a fork (the workers of a series, the figures)
# waits for it, so that no forked worker inherits a write half done (a lock of stderr held for ever).
_WRITING = threading.Lock()


def _new_writing_lock() -> None:
    global _WRITING
    _WRITING = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=lambda: _WRITING.acquire(), after_in_parent=lambda: _WRITING.release(), after_in_child=_new_writing_lock
    )


class _Heartbeat:
    """Calls ``beat()`` in a thread of its own while the block runs, under :data:`_WRITING`; ``beat`` returns
    the seconds to wait before it is called again (None: stop)."""

    def __init__(self, beat):
        self.beat, self.stop = beat, threading.Event()
        self.thread = threading.Thread(target=self._run, name="trustcal-progress", daemon=True)

    def _run(self) -> None:
        wait = 0.0
        while not self.stop.wait(min(wait, 60.0)):  # looked at again at least every minute
            with _WRITING:
                try:
                    wait = self.beat()
                except (OSError, ValueError):  # the stream was closed: nothing more to show
                    return
            if wait is None:
                return

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()


def duration(seconds: float) -> str:
    """3 min 12 s, 4.2 s, 1 h 02 min."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, sec = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {sec} s"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def _plural(n: int, unit: str) -> str:
    return f"{n} {unit}{'' if n == 1 else 's'}"


def _terminal_size(stream) -> tuple[int, int]:
    """(columns, rows) of the terminal ``stream`` writes to; 80 × 24 where it reports none (a pty without
    a size), on which tqdm would draw nothing."""
    try:
        columns, rows = os.get_terminal_size(stream.fileno())
    except (AttributeError, OSError, ValueError):
        columns = rows = 0
    return columns or 80, rows or 24


class ShowProgress:
    """Progress of each phase of ``trustcal assess`` on ``stream`` (stderr), and the final timing.

    On a terminal: a tqdm bar per phase (reading, calibrating, assessing, figures), of a fixed width
    (tqdm's ``dynamic_ncols`` draws nothing on a terminal that reports no size), its elapsed time
    redrawn every ``BAR_REFRESH`` seconds while an item takes long. Elsewhere (a log file, a pipe): plain
    lines, none for a phase shorter than ``PLAIN_AFTER`` seconds, then one at most every ``PLAIN_EVERY``
    seconds as items are done, and a last line when a phase that spoke ends; while an item takes long (one
    file of a million rows: a single item of each phase), a line when none came for ``BEAT_EVERY`` seconds,
    counted from the last line of any phase (or the start of the run).
    """

    def __init__(self, stream, clock=None):
        self.stream, self.clock = stream, clock or time.monotonic
        self.terminal = stream.isatty()
        self.start = self.clock()
        self.quiet_since = _wall()  # real time of the last line (or the start): the heartbeat's, across phases

    def __call__(self, items, what: str, unit: str):
        if self.terminal:
            return self._bar(items, what, unit)
        return self._plain(items, what, unit)

    def _bar(self, items, what: str, unit: str):
        from tqdm import tqdm

        columns, rows = _terminal_size(self.stream)
        bar = tqdm(items, desc=what, unit=f" {unit}s", file=self.stream, ncols=columns, nrows=rows)

        def redraw() -> float:
            bar.refresh()
            return BAR_REFRESH

        with _Heartbeat(redraw):
            yield from bar

    def _plain(self, items, what: str, unit: str):
        total = len(items) if hasattr(items, "__len__") else None
        start = self.clock()
        said = dict(done=0, last=None)  # items done; clock of the phase's last line

        def say(now: float) -> None:
            done = said["done"]
            line = f"{what}: {done}{'' if total is None else f'/{total}'} {unit}s, {duration(now - start)}"
            if done and total:  # at the pace so far
                line += f", about {duration((now - start) / done * (total - done))} left"
            print(line, file=self.stream, flush=True)
            said["last"], self.quiet_since = now, _wall()

        def beat() -> float:  # an item that takes long: a line when none came for BEAT_EVERY seconds (any phase's)
            quiet = _wall() - self.quiet_since
            if quiet >= BEAT_EVERY:
                say(self.clock())
                quiet = 0.0
            return BEAT_EVERY - quiet

        with _Heartbeat(beat):
            for item in items:
                with _WRITING:
                    now = self.clock()
                    if now - start >= PLAIN_AFTER and (said["last"] is None or now - said["last"] >= PLAIN_EVERY):
                        say(now)
                yield item
                with _WRITING:
                    said["done"] += 1
        if said["last"] is not None:
            print(
                f"{what}: {_plural(said['done'], unit)} in {duration(self.clock() - start)}",
                file=self.stream,
                flush=True,
            )
            self.quiet_since = _wall()

    def done(self, files: int) -> None:
        """The final timing line (off a terminal only after a run long enough to have shown progress)."""
        elapsed = self.clock() - self.start
        if self.terminal or elapsed >= PLAIN_AFTER:
            print(f"assessed {_plural(files, 'file')} in {duration(elapsed)}", file=self.stream, flush=True)
