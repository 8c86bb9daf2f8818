"""Shared start-up of the workflow's scripts: import path, logging, clear errors.

Snakemake puts this folder on ``sys.path``; we add ``workflow/`` so that the
``trustcal`` package imports even in an environment where it is not installed
(``--sdm conda``).
"""

import logging
import sys
import traceback
from pathlib import Path

WORKFLOW_DIR = Path(__file__).resolve().parents[1]
if str(WORKFLOW_DIR) not in sys.path:
    sys.path.insert(0, str(WORKFLOW_DIR))

from trustcal.errors import TrustcalError  # noqa: E402 (after the path above)


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
    message (no traceback) on the terminal and in the log; anything else is
    logged with its traceback.
    """
    log_file = snakemake.log[0]
    Path(log_file).parent.mkdir(parents=True, exist_ok=True)
    handlers = [logging.FileHandler(log_file, mode="w")]
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
    logging.getLogger("fontTools").setLevel(logging.WARNING)  # PDF font subsetting chatter
    try:
        main(snakemake)
    except TrustcalError as exc:
        logging.error("%s", exc)
        print(f"\nERROR (rule {snakemake.rule}): {exc}\n", file=sys.stderr)
        sys.exit(1)
    except Exception:
        logging.error("unexpected failure:\n%s", traceback.format_exc())
        raise
