"""Pages looked at in a real browser: headless Chromium (Debian's `chromium` package), driven from subprocess.

`check_pages(root, pages, shots)` serves the folder `root` over HTTP on localhost, opens each page twice in
headless Chromium and returns what a reader would find wrong on it:

- the DOM after the page's scripts ran (`--dump-dom`), with a script injected at the top of the page that
  records console errors, uncaught exceptions and resources that failed to load, and, once the page has
  loaded, broken images, tables cut off by their box, duplicate entries of the page's table of contents
  and the page's visible text (`innerText`, so what CSS hides is not in it) with code set apart;
- that text searched for markup that was not rendered (`raw_markup`): reST roles (``:func:`x```),
  literal-block markers (``text::``), Markdown emphasis (``**x**``, ``*x*``), links and references
  (``[x](y)``, ``[x][y]``), code spans (`` `x` ``) and TeX math (``$x$``, ``\\frac``);
- a screenshot (`--screenshot`, 1280 px wide, as tall as the page up to `MAX_SHOT_HEIGHT`) into `shots`, to be
  looked at.

No browser is downloaded: `chromium()` finds the installed one (`$TRUSTCAL_CHROMIUM`, else `chromium`,
`chromium-browser`, `google-chrome` on the PATH); .ci/run installs Debian's when it can.
"""

from __future__ import annotations

import functools
import html
import http.server
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

WIDTH = 1280  # a laptop
MAX_SHOT_HEIGHT = 6000
CODE = "\u27e6code\u27e7"  # what a code element's text becomes in the visible text: markup inside code is fine
RESULT_ID = "__pagecheck__"

# Injected first into every page's <head>: records problems from the first script on, reports once loaded.
PROBE = """<script>(function () {
  var problems = [];
  var say = function (text) { problems.push(String(text).slice(0, 300)); };
  var consoleError = console.error;
  console.error = function () {
    say("console error: " + Array.prototype.map.call(arguments, String).join(" "));
    return consoleError.apply(console, arguments);
  };
  window.addEventListener("error", function (e) {
    var t = e.target;
    if (t && t !== window && (t.src || t.href)) say("failed to load " + t.tagName.toLowerCase() + ": " + (t.src || t.href));
    else say("uncaught error: " + e.message + " (" + e.filename + ":" + e.lineno + ")");
  }, true);
  window.addEventListener("unhandledrejection", function (e) { say("unhandled promise rejection: " + e.reason); });
  window.addEventListener("load", function () { setTimeout(function () {
    document.querySelectorAll("img").forEach(function (img) {
      if (!img.complete || img.naturalWidth === 0) say("broken image: " + (img.getAttribute("src") || "").slice(0, 120));
    });
    document.querySelectorAll("table").forEach(function (table) {
      var box = table.parentElement;
      while (box && box !== document.body && getComputedStyle(box).overflowX === "visible") box = box.parentElement;
      if (!box || box === document.body || table.offsetParent === null) return;
      var cut = table.getBoundingClientRect().right - box.getBoundingClientRect().right;
      if (cut > 2) {
        var head = Array.prototype.map.call(table.querySelectorAll("th"), function (th) { return th.innerText.trim(); });
        say("table cut off by " + Math.round(cut) + " px at " + window.innerWidth + " px wide (columns: " + head.join(", ") + ")");
      }
    });
    document.querySelectorAll(".md-nav--secondary ul").forEach(function (list) {
      var seen = {};
      Array.prototype.forEach.call(list.children, function (item) {
        var link = item.querySelector(":scope > a");
        if (!link) return;
        var text = link.innerText.trim();
        if (seen[text]) say("the page's contents list \\"" + text + "\\" twice");
        seen[text] = true;
      });
    });
    if (document.querySelector("blockquote blockquote")) say("quotes within quotes (a doctest's >>> read as Markdown quotes?)");
    var height = document.documentElement.scrollHeight;
    document.querySelectorAll("code, pre, kbd, samp").forEach(function (el) {
      if (el.isConnected) el.replaceWith(document.createTextNode(" CODE "));
    });
    var out = document.createElement("pre");
    out.id = "RESULT_ID";
    out.hidden = true;
    out.textContent = JSON.stringify({problems: problems, height: height, text: document.body.innerText});
    document.body.appendChild(out);
  }, 300); });
})();</script>""".replace("CODE", CODE).replace("RESULT_ID", RESULT_ID)

# Markup that should have been rendered, as it reads in the visible text (code set apart as CODE).
ROLE_NAMES = "func|class|meth|mod|data|attr|exc|obj|const|ref|doc|term|math|py:[a-z]+"
RAW_MARKUP = {
    "reST role": re.compile(rf":(?:{ROLE_NAMES}):(?=\s?{CODE}|`)"),
    "reST literal-block marker": re.compile(r"(?m)\w::[ \t]*$"),
    "Markdown strong emphasis": re.compile(r"(?<![\w*\\])\*\*(?=[^\s*])[^*\n]*?[^\s*\\]\*\*(?![\w*])"),
    "Markdown emphasis": re.compile(r"(?<![\w*\\])\*(?=[^\s*])[^*\n]*?[^\s*\\]\*(?![\w*])"),
    "Markdown link": re.compile(r"\[[^\[\]\n]+\]\([^()\s]+\)"),
    "Markdown reference": re.compile(r"\[[^\[\]\n]+\]\[[^\[\]\n]*\]"),
    "Markdown code span": re.compile(r"`[^`\n]+`"),
    "TeX math": re.compile(
        r"\$[^$\n]*[\\^_{}][^$\n]*\$|\\(?:frac|sum|mathbb|mathrm|sqrt|cdot|left|right|alpha|sigma)\b"
    ),
}


def chromium() -> str | None:
    """The headless browser to use, or None."""
    for name in (os.environ.get("TRUSTCAL_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and (found := shutil.which(name)):
            return found
    return None


def raw_markup(text: str) -> list[str]:
    """Each piece of unrendered markup in ``text`` (a page's visible text), as 'kind: the text around it'."""
    found = []
    for kind, pattern in RAW_MARKUP.items():
        for m in pattern.finditer(text):
            around = text[max(0, m.start() - 40) : m.end() + 40].replace("\n", " ")
            found.append(f"{kind}: …{around}…")
    return found


PROBE_QUERY = "?pagecheck"  # a page asked for with it gets PROBE; the screenshot is of the page as it is


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Files of the served folder; an HTML page asked for with PROBE_QUERY with PROBE at the start of its <head>."""

    def send_head(self):
        path = Path(self.translate_path(self.path))
        if path.is_dir():
            path = path / "index.html"
        if PROBE_QUERY not in self.path or path.suffix != ".html" or not path.is_file():
            return super().send_head()  # the page as it is (the screenshot's)
        page = path.read_bytes()
        head = re.search(rb"<head[^>]*>", page, flags=re.I)
        at = head.end() if head else 0
        body = page[:at] + PROBE.encode() + page[at:]
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return _Bytes(body)

    def log_message(self, *args):  # quiet
        pass


class _Bytes:
    def __init__(self, data: bytes):
        self.data = data

    def read(self, *args) -> bytes:
        data, self.data = self.data, b""
        return data

    def close(self) -> None:
        pass


@contextmanager
def serve(root: Path) -> Iterator[str]:
    """``root`` served on localhost: yields the base URL."""
    handler = functools.partial(_Handler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def _browser(browser: str, profile: Path, *args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    cmd = [
        browser,
        "--headless",
        "--no-sandbox",  # as root (CI), Chromium refuses to start with its sandbox
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=15000",
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def check_page(browser: str, url: str, shot: Path) -> list[str]:
    """What is wrong on the page at ``url`` (served by :func:`serve`); its screenshot goes to ``shot``."""
    with tempfile.TemporaryDirectory() as profile:
        done = _browser(browser, Path(profile), f"--window-size={WIDTH},900", "--dump-dom", url + PROBE_QUERY)
        found = re.search(rf'<pre id="{RESULT_ID}" hidden="">(.*?)</pre>', done.stdout, flags=re.S)
        if done.returncode != 0 or not found:
            return [f"the page did not load in Chromium (exit {done.returncode}): {done.stderr[-2000:]}"]
        result = json.loads(html.unescape(found.group(1)))
        height = max(600, min(int(result["height"]), MAX_SHOT_HEIGHT))
        shot.parent.mkdir(parents=True, exist_ok=True)
        _browser(browser, Path(profile), f"--window-size={WIDTH},{height}", f"--screenshot={shot}", url)
    problems = list(dict.fromkeys(result["problems"]))
    if not shot.is_file():
        problems.append(f"no screenshot was written to {shot}")
    return problems + raw_markup(result["text"])


def check_pages(root: Path, pages: Iterable[str], shots: Path) -> dict[str, list[str]]:
    """Each page of ``pages`` (paths relative to ``root``) with what is wrong on it (an empty list: nothing);
    screenshots as ``shots/<page path with / as _>.png``."""
    browser = chromium()
    if browser is None:
        raise RuntimeError("no Chromium found (install Debian's chromium, or set TRUSTCAL_CHROMIUM)")
    found = {}
    with serve(root) as base:
        for page in pages:
            name = re.sub(r"[^\w.-]+", "_", page.removesuffix("index.html").strip("/") or "index") + ".png"
            found[page] = check_page(browser, base + page, shots / name)
    return found


def report(found: dict[str, list[str]]) -> str:
    """The problems of :func:`check_pages`, one line each, for an assertion's message."""
    return "\n".join(f"{page}: {problem}" for page, problems in found.items() for problem in problems)
