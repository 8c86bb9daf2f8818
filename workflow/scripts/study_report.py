"""Regenerate the README's real-study section and results/study/ from a finished run.

    .venv/bin/python workflow/scripts/study_report.py RUN_DIR [--author-predictions DIR]

RUN_DIR is the directory the study ran in (its results/ and .snakemake/log/), e.g. after
    .venv/bin/snakemake --cores 2 --configfile config.yaml workflow/study/config.yaml
(run by hand, not by the workflow: it writes into this repository; trustcal.study says what).
"""

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "workflow"))

from trustcal.errors import TrustcalError  # noqa: E402 (after the path above)
from trustcal.study import write_study  # noqa: E402

COMMAND = ".venv/bin/snakemake --cores 2 --configfile config.yaml workflow/study/config.yaml"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help="the directory the study ran in")
    parser.add_argument(
        "--author-predictions",
        type=Path,
        default=REPO.parent / "shared" / "reference" / "author-predictions",
        help="the author's prediction files (default: %(default)s); 'none' to leave them out",
    )
    parser.add_argument("--command", default=COMMAND, help="the command the run was started with (shown in the README)")
    parser.add_argument("--remark", default="", help="a sentence added to the run's description (e.g. what else ran)")
    args = parser.parse_args(argv)
    author = None if str(args.author_predictions) == "none" else args.author_predictions
    try:
        write_study(args.run_dir.resolve(), REPO, author, args.command, args.remark)
    except TrustcalError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"written: {REPO / 'results' / 'study'}/ and the study block of README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
