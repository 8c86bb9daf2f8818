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

from trustcal.io import TrustcalError  # noqa: E402


def run(snakemake, main) -> None:
    """Run ``main(snakemake)`` with logging to the rule's log file.

    A :class:`TrustcalError` ends the job with its message (no traceback) on
    the terminal and in the log; anything else is logged with its traceback.
    """
    log_file = snakemake.log[0]
    Path(log_file).parent.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        handlers=[logging.FileHandler(log_file, mode="w")],
        force=True,
    )
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
