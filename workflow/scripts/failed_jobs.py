"""The last lines of a failed `make reproduce`: why each failed job stopped and the fix, once.

    .venv/bin/snakemake --cores all || .venv/bin/python workflow/scripts/failed_jobs.py

Snakemake ends a failed run with its own lines (the job's exception, ``WorkflowError: At least one job did
not complete successfully``); the cause and the fix are further up, in the job's output. Run after it, in
the same folder, this prints them again at the bottom: for each job that failed in the last run (from
Snakemake's log of that run, ``.snakemake/log/``), the error its script logged (``_common.run``: the cause
and its ``Fix:`` line), or for an unexpected failure the exception's last line and where the traceback is.
It always exits with status 1: it is only called on a failure.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

RECORD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ (?P<level>[A-Z]+) \S+: ", flags=re.M)
FAILED = re.compile(r"^Error in (?:rule|group) (?P<name>\S+):\n(?P<block>(?:[ \t]+.*\n?)*)", flags=re.M)
LOGS = re.compile(r"^[ \t]+log: (?P<logs>.+?)(?: \(check log file\(s\) for error details\))?$", flags=re.M)


def last_run_log(workdir: Path) -> Path | None:
    """Snakemake's log of its last run in ``workdir``."""
    logs = sorted((workdir / ".snakemake" / "log").glob("*.snakemake.log"), key=lambda p: p.stat().st_mtime)
    return logs[-1] if logs else None


def failed_jobs(run_log: str) -> dict[str, list[str]]:
    """Each failed job of a Snakemake log as ``{"rule name (log)": [its log files]}``, in order, once each."""
    jobs: dict[str, list[str]] = {}
    for m in FAILED.finditer(run_log):
        found = LOGS.search(m["block"])
        logs = [s.strip() for s in found["logs"].split(",")] if found else []
        jobs.setdefault(f"{m['name']} ({', '.join(logs) or 'no log'})", logs)
    return jobs


def logged_error(log: Path) -> str | None:
    """The last ERROR record of a job's log (``_common.run``'s), or None."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return None
    records = list(RECORD.finditer(text))
    for i in reversed(range(len(records))):
        if records[i]["level"] == "ERROR":
            end = records[i + 1].start() if i + 1 < len(records) else len(text)
            message = text[records[i].end() : end].strip()
            if message.startswith("unexpected failure:"):  # a traceback: its last line says what
                last = message.strip().splitlines()[-1]
                return f"unexpected failure: {last} (the traceback: {log})"
            return message
    return None


def summary(workdir: Path) -> str:
    """The lines to print at the bottom of a failed run ("" when its log names no failed job)."""
    run_log = last_run_log(workdir)
    if run_log is None:
        return ""
    jobs = failed_jobs(run_log.read_text(errors="replace"))
    if not jobs:
        return ""
    lines = ["", f"The run stopped: {len(jobs)} job{'s' if len(jobs) > 1 else ''} failed."]
    seen = set()
    for job, logs in jobs.items():
        errors = [e for e in (logged_error(workdir / log) for log in logs) if e]
        text = "\n".join(errors) or "see its log"
        lines.append(f"rule {job}:" if text not in seen else f"rule {job}: the same.")
        if text not in seen:
            lines.append(text)
        seen.add(text)
    return "\n".join(lines)


if __name__ == "__main__":
    text = summary(Path.cwd())
    if text:
        print(text, file=sys.stderr)
    sys.exit(1)
