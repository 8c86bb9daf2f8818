"""Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``), standard library
only: a window of an exact size (``Emulation.setDeviceMetricsOverride``; a headless window from the command
line is at least 500 px wide and its page 143 px less high than asked), a script's value, a screenshot.

    with Browser(chromium()) as b:
        b.open("http://…/page.html", width=390, height=844)
        b.evaluate("document.title")
        b.screenshot(Path("page.png"))

Chromium reads commands from its file descriptor 3 and writes answers and events to 4, each a JSON object
ended by a NUL byte; a small Python (:data:`TRAMPOLINE`) moves the pipes there and execs Chromium, so that no
code runs between fork and exec in this process.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FLAGS = (
    "--headless",
    "--no-sandbox",  # as root (CI), Chromium refuses to start with its sandbox
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--hide-scrollbars",
    "--force-device-scale-factor=1",
)
# Run as `python -c TRAMPOLINE to from chromium args…`: the pipes' ends moved to 3 and 4, then Chromium.
TRAMPOLINE = (
    "import os, sys; a, b = int(sys.argv[1]), int(sys.argv[2]); os.dup2(a, 3); os.dup2(b, 4); os.close(a); "
    "os.close(b); os.execv(sys.argv[3], sys.argv[3:])"
)
PHONE = 480  # a window this wide or narrower is a phone's: mobile emulation (the page's viewport meta applies)


def _high(fd: int) -> int:
    """``fd`` moved to a descriptor number of 10 or more (the old one closed)."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


class BrowserError(RuntimeError):
    """Chromium did not start, answered with an error, or did not answer in time."""


class Browser:
    """One headless Chromium with one page; a context manager (the browser ends on leaving)."""

    def __init__(self, executable: str, timeout: float = 60):
        self.executable, self.timeout = executable, timeout
        self._next_id, self._buffer, self._events = 0, b"", []

    def __enter__(self) -> Browser:
        self._profile = tempfile.TemporaryDirectory()
        to_chromium, self._write = os.pipe()
        self._read, from_chromium = os.pipe()
        # the child's ends at 10 or above, so that moving them to 3 and 4 overwrites neither
        to_chromium, from_chromium = (_high(fd) for fd in (to_chromium, from_chromium))
        args = [*FLAGS, f"--user-data-dir={self._profile.name}", "--remote-debugging-pipe", "about:blank"]
        self._process = subprocess.Popen(
            [sys.executable, "-c", TRAMPOLINE, str(to_chromium), str(from_chromium), self.executable, *args],
            pass_fds=(to_chromium, from_chromium),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_chromium)
        os.close(from_chromium)
        try:
            targets = self.send("Target.getTargets")["targetInfos"]
            page = next(t["targetId"] for t in targets if t["type"] == "page")
            self._session = self.send("Target.attachToTarget", targetId=page, flatten=True)["sessionId"]
            self.send("Page.enable", session=True)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.send("Browser.close")
        except (BrowserError, OSError):
            pass
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        for fd in (self._write, self._read):
            try:
                os.close(fd)
            except OSError:
                pass
        self._profile.cleanup()

    # --- the protocol

    def _message(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._read], [], [], left)[0]:
                raise BrowserError(f"Chromium did not answer within {self.timeout:g} s")
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise BrowserError(f"Chromium closed its pipe (exit {self._process.poll()})")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, session: bool = False, **params) -> dict:
        """The result of the command ``method`` (to the page with ``session``); events met meanwhile are kept."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = self._session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            answer = self._message(deadline)
            if answer.get("id") != self._next_id:
                self._events.append(answer)
                continue
            if "error" in answer:
                raise BrowserError(f"{method}: {answer['error'].get('message')}")
            return answer.get("result", {})

    def _wait_event(self, method: str) -> dict:
        deadline = time.monotonic() + self.timeout
        while True:
            for i, event in enumerate(self._events):
                if event.get("method") == method:
                    return self._events.pop(i)
            self._events.append(self._message(deadline))

    # --- what a test does

    def resize(self, width: int, height: int) -> None:
        """The window ``width`` × ``height`` px (CSS px, scale 1), a phone's when ``width`` ≤ :data:`PHONE`."""
        self.send(
            "Emulation.setDeviceMetricsOverride",
            session=True,
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=width <= PHONE,
        )

    def open(self, url: str, width: int, height: int, settle: float = 1.0) -> None:
        """``url`` in a window ``width`` × ``height``, once loaded and ``settle`` seconds more for its scripts."""
        self.resize(width, height)
        self._events.clear()
        answer = self.send("Page.navigate", session=True, url=url)
        if answer.get("errorText"):
            raise BrowserError(f"{url}: {answer['errorText']}")
        self._wait_event("Page.loadEventFired")
        time.sleep(settle)

    def evaluate(self, expression: str):
        """The value of ``expression`` in the page (JSON-able)."""
        found = self.send("Runtime.evaluate", session=True, expression=expression, returnByValue=True)
        if "exceptionDetails" in found:
            raise BrowserError(f"{expression[:80]}: {found['exceptionDetails'].get('text')}")
        return found["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 30):
        """The value of ``expression`` once it is truthy (polled every 0.1 s); None after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if value := self.evaluate(expression):
                return value
            time.sleep(0.1)
        return None

    def screenshot(self, path: Path) -> None:
        """The window as it is, as a PNG at ``path``."""
        data = self.send("Page.captureScreenshot", session=True, format="png")["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
