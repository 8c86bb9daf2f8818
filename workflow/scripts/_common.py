"""Shared start-up of the workflow's scripts: import path, logging, clear errors.

Snakemake puts this folder on ``sys.path``; we put ``workflow/`` FIRST on it, so
that every job runs the ``trustcal`` package of the checkout it belongs to, even
where it is not installed (``--sdm conda``) and where another copy is (an
editable install of another clone, whose path entry Snakemake's script preamble
places ahead of ours). A job that would still run another copy (one imported
before this module) stops with one line naming both.
"""

import errno
import logging
import sys
import traceback
from pathlib import Path

WORKFLOW_DIR = Path(__file__).resolve().parents[1]
OWN_PACKAGE = WORKFLOW_DIR / "trustcal"
if OWN_PACKAGE.is_dir():  # a remote module (github(...)) has no local copy: the installed package runs
    sys.path[:] = [str(WORKFLOW_DIR)] + [p for p in sys.path if p != str(WORKFLOW_DIR)]

import trustcal  # noqa: E402 (after the path above)

RUNNING_PACKAGE = Path(trustcal.__file__).resolve().parent

from trustcal.errors import TrustcalError, foreign_package  # noqa: E402

if OWN_PACKAGE.is_dir() and (problem := foreign_package(WORKFLOW_DIR, RUNNING_PACKAGE)):
    sys.exit(f"\nERROR: {problem}\n")

from trustcal.files import disk_error, full_disk_cause  # noqa: E402


class _AboveProgressBars(logging.StreamHandler):
    """Terminal log lines written above a progress bar (tqdm.write), not through it."""

    def emit(self, record):
        try:
            from tqdm import tqdm

            tqdm.write(self.format(record), file=self.stream)
        except Exception:
            self.handleError(record)


def run(snakemake, main, progress: bool = False) -> None:
    """Run ``main(snakemake)`` with logging to the rule's log file.

    ``progress``: also show the log on the terminal (long jobs, e.g. one line
    per training epoch). A :class:`TrustcalError` ends the job with its
    message (no traceback) on the terminal and in the log, and so does a write
    the disk refused (full, read-only, not ours: ``trustcal.files.disk_error``),
    the log's own included, and an error raised while handling a full disk's (a library failing again
    as it cleans up: ``trustcal.files.full_disk_cause``); anything else is logged with its traceback.
    """
    log_file = snakemake.log[0]
    try:
        Path(log_file).parent.mkdir(parents=True, exist_ok=True)
        handlers = [_LogFile(log_file, mode="w")]
    except OSError as exc:
        _stop(snakemake, disk_error(log_file, exc) or f"{log_file}: cannot write the log: {exc.strerror or exc}")
    if progress:
        terminal = _AboveProgressBars(sys.stderr)
        where = ", ".join(f"{k}={v}" for k, v in snakemake.wildcards.items())
        terminal.setFormatter(logging.Formatter(f"[{snakemake.rule} {where}] %(message)s"))
        handlers.append(terminal)
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        handlers=handlers,
        force=True,
    )
    for handler in handlers[1:]:
        handler.addFilter(lambda record: record.name.startswith("trustcal"))
    logging.captureWarnings(True)
    logging.info("trustcal package: %s", RUNNING_PACKAGE)  # the code this job runs (a checkout, an install)
    logging.getLogger("fontTools").setLevel(logging.WARNING)  # PDF font subsetting chatter
    try:
        main(snakemake)
    except TrustcalError as exc:
        logging.error("%s", brief(str(exc)))
        _stop(snakemake, exc)
    except Exception as exc:  # a write the disk refused outside trustcal.files' writers (which raise DiskError)
        # only the causes of a refused write: "permission denied" may be a read as well
        writing = isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS)
        refused = exc if writing else full_disk_cause(exc)
        error = disk_error(refused.filename or snakemake.output[0], refused) if refused is not None else None
        if error is None:
            logging.error("unexpected failure:\n%s", traceback.format_exc())
            raise
        logging.error("%s", error)
        _stop(snakemake, error)


def brief(message: str) -> str:
    """An error as the job's log keeps it: its first line (the cause) and its last ``Fix:`` line. Snakemake
    prints a failed job's log (show-failed-logs), at the failure and again at the end, after the job's own
    message on the terminal: the lists and md5s of a long message are there once, not three times."""
    lines = message.strip().splitlines()
    fixes = [line for line in lines[1:] if line.startswith("Fix:")]
    if len(lines) <= 2 or not fixes:
        return message.strip()
    return f"{lines[0]}\n{fixes[-1]}"


def _stop(snakemake, error) -> None:
    """End the job with ``error``'s one line on the terminal (no traceback), with the command that writes
    the file at fault again where the error names its rule (:attr:`TrustcalError.rerun`)."""
    rule = getattr(error, "rerun", None)
    text = f"{str(error).rstrip('.')} (snakemake --cores 2 --forcerun {rule})." if rule else str(error)
    print(f"\nERROR (rule {snakemake.rule}): {text}\n", file=sys.stderr)
    sys.exit(1)


class _LogFile(logging.FileHandler):
    """The rule's log file; a record it cannot write (a full disk) is dropped without the traceback
    logging prints by default: the job's error line on the terminal says what happened."""

    def handleError(self, record):
        if not isinstance(sys.exc_info()[1], OSError):
            super().handleError(record)
