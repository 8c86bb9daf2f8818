"""Pages looked at in a real browser: headless Chromium (Debian's `chromium` package), driven over the DevTools
protocol (tests/helpers/cdp.py), so that the window is exactly the size asked for.

`check_pages(root, pages, shots)` serves the folder `root` over HTTP on localhost, opens each page twice in
headless Chromium and returns what a reader would find wrong on it:

- the page once its scripts ran, with a script injected at the top of the page that records console errors,
  uncaught exceptions and resources that failed to load, and, once the page has loaded, broken images, tables
  cut off by their box, duplicate entries of the page's table of contents and the page's visible text
  (`innerText`, so what CSS hides is not in it) with code set apart;
- that text searched for markup that was not rendered (`raw_markup`): reST roles (``:func:`x```),
  literal-block markers (``text::``), Markdown emphasis (``**x**``, ``*x*``), links and references
  (``[x](y)``, ``[x][y]``), code spans (`` `x` ``), TeX math (``$x$``, ``\\frac``) and the error messages
  docutils writes into a page it could not render (``System Message: WARNING/2``);
- a page wider than the window (`document.scrollingElement.scrollWidth` over the window's width: a reader
  scrolls sideways);
- a screenshot of the page as it is (without the injected script), `WIDTH` = 1280 px wide and as tall as the
  page up to `MAX_SHOT_HEIGHT`, into `shots`, to be looked at.

`page_layout(root, page, shots, width, height)` checks one page the same way in a window of its own size
(1,400 px, a phone's 390 px; with a `height`, the screenshot is of the first screen alone) and also returns
where its tables lie on the first screen (:class:`Layout`), for tests that ask what a reader sees before
scrolling.

No browser is downloaded: `chromium()` finds the installed one (`$TRUSTCAL_CHROMIUM`, else `chromium`,
`chromium-browser`, `google-chrome` on the PATH); .ci/run installs Debian's when it can.
"""

from __future__ import annotations

import dataclasses
import functools
import http.server
import json
import os
import re
import shutil
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from helpers.cdp import Browser, BrowserError

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
    var wide = document.scrollingElement.scrollWidth - window.innerWidth;
    if (wide > 1) say("the page is " + wide + " px wider than the window at " + window.innerWidth + " px wide (a reader scrolls sideways)");
    var tables = Array.prototype.map.call(document.querySelectorAll("table"), function (table) {
      var r = table.getBoundingClientRect();
      var head = Array.prototype.map.call(table.querySelectorAll("th"), function (th) { return th.innerText.trim(); });
      return {id: table.id, head: head, top: r.top, bottom: r.bottom, left: r.left, right: r.right, shown: table.offsetParent !== null};
    });
    var height = document.documentElement.scrollHeight;
    document.querySelectorAll("code, pre, kbd, samp").forEach(function (el) {
      if (el.isConnected) el.replaceWith(document.createTextNode(" CODE "));
    });
    var out = document.createElement("pre");
    out.id = "RESULT_ID";
    out.hidden = true;
    out.textContent = JSON.stringify({
      problems: problems, height: height, text: document.body.innerText, tables: tables,
      width: window.innerWidth, window_height: window.innerHeight, scroll_width: document.scrollingElement.scrollWidth
    });
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
    "docutils system message": re.compile(r"System Message: (?:INFO|WARNING|ERROR|SEVERE)/\d"),
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


@dataclasses.dataclass
class Layout:
    """A page as a reader sees it at one window size: what is wrong on it (:func:`check_page`'s problems),
    the window (``width`` × ``height``), how wide the page is (``scroll_width``) and each table's box on the
    first screen (``tables``: ``id``, ``head`` (the header cells' text), ``top``, ``bottom``, ``left``,
    ``right`` in px from the window's top left, ``shown``), in the order of the page."""

    problems: list[str]
    width: int
    height: int
    scroll_width: int
    tables: list[dict]

    def table(self, id: str | None = None, head: str | None = None) -> dict | None:
        """The first table with this ``id``, or whose first header cell reads ``head``; None if none does."""
        for t in self.tables:
            if (id is not None and t["id"] == id) or (head is not None and t["head"][:1] == [head]):
                return t
        return None


def check_page(browser: Browser, url: str, shot: Path, width: int = WIDTH, height: int | None = None) -> Layout:
    """What is wrong on the page at ``url`` (served by :func:`serve`), opened in ``browser`` in a window
    ``width`` px wide (and ``height`` px high; 900 when not given), with where its tables lie. Its screenshot
    goes to ``shot``: the whole page (up to ``MAX_SHOT_HEIGHT``), or with ``height`` the first screen alone."""
    window = height or 900
    try:
        browser.open(url + PROBE_QUERY, width, window, settle=0)
        text = browser.wait_for(f"(document.getElementById('{RESULT_ID}') || {{}}).textContent", timeout=30)
        if not text:
            return Layout(["the page did not finish loading in Chromium within 30 s"], width, window, 0, [])
        result = json.loads(text)
        browser.open(url, width, window)  # the page as it is, without the probe
        if height is None:
            browser.resize(width, max(600, min(int(result["height"]), MAX_SHOT_HEIGHT)))
            time.sleep(0.3)
        browser.screenshot(shot)
    except BrowserError as exc:
        return Layout([f"the page did not load in Chromium: {exc}"], width, window, 0, [])
    problems = list(dict.fromkeys(result["problems"]))
    if not shot.is_file():
        problems.append(f"no screenshot was written to {shot}")
    problems += raw_markup(result["text"])
    return Layout(
        problems, int(result["width"]), int(result["window_height"]), int(result["scroll_width"]), result["tables"]
    )


def _browser_or_fail() -> str:
    browser = chromium()
    if browser is None:
        raise RuntimeError("no Chromium found (install Debian's chromium, or set TRUSTCAL_CHROMIUM)")
    return browser


def shot_name(page: str, suffix: str = "") -> str:
    """The screenshot's file name of ``page``: its path with / as _, then ``suffix``."""
    return re.sub(r"[^\w.-]+", "_", page.removesuffix("index.html").strip("/") or "index") + suffix + ".png"


def page_layout(root: Path, page: str, shots: Path, width: int, height: int | None = None) -> Layout:
    """:func:`check_page` of ``page`` (a path relative to ``root``) at ``width`` (× ``height``); its screenshot
    is ``shots/<page>_<width>[x<height>].png``."""
    size = f"_{width}" + (f"x{height}" if height else "")
    with serve(root) as base, Browser(_browser_or_fail()) as browser:
        return check_page(browser, base + page, shots / shot_name(page, size), width, height)


def check_pages(root: Path, pages: Iterable[str], shots: Path) -> dict[str, list[str]]:
    """Each page of ``pages`` (paths relative to ``root``) with what is wrong on it (an empty list: nothing);
    screenshots as ``shots/<page path with / as _>.png``. One browser opens them all, one after the other."""
    found = {}
    with serve(root) as base, Browser(_browser_or_fail()) as browser:
        for page in pages:
            found[page] = check_page(browser, base + page, shots / shot_name(page)).problems
    return found


def report(found: dict[str, list[str]]) -> str:
    """The problems of :func:`check_pages`, one line each, for an assertion's message."""
    return "\n".join(f"{page}: {problem}" for page, problems in found.items() for problem in problems)
