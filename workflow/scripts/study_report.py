"""Regenerate the README's real-study section and results/study/ from a finished run.

    .venv/bin/python workflow/scripts/study_report.py RUN_DIR [--author-predictions DIR] [--beyond OTHER_RUN_DIR ...]
        [--keep-beyond]
    .venv/bin/python workflow/scripts/study_report.py --keep-paper --beyond OTHER_RUN_DIR
    .venv/bin/python workflow/scripts/study_report.py RUN_DIR --costs-only
    .venv/bin/python workflow/scripts/study_report.py --ranking-only results/study

RUN_DIR is the directory the study ran in (its results/ and .snakemake/log/), e.g. after
    .venv/bin/snakemake --cores 2 --set-threads train=1 logits=1 --configfile config.yaml workflow/study/config.yaml
(run by hand, not by the workflow: it writes into this repository; trustcal.study says what).
--beyond OTHER_RUN_DIR (repeatable) adds the runs of another run directory that its configuration declares
under setups: (e.g. workflow/study/resnet20.yaml's cifar10_resnet20): a section each in study.md with
the general claims judged on it, and a paragraph in the README block.
With --keep-beyond the runs beyond the paper's are kept from the committed results/study/report.json (their
run directories need not exist), after any --beyond ones; a --beyond run replaces the kept one of its setup.
With --keep-paper (and no RUN_DIR) the paper's runs too are kept from report.json as they are, with the
runs beyond them: when only a run beyond the paper's was run again (e.g. the ResNet-20 study, in its own
directory).
With --costs-only it writes only what each job of RUN_DIR cost (from its results/benchmarks/: costs.csv,
costs_summary.csv, costs.md), into RUN_DIR/results/study/: any finished run, e.g. to size cluster requests.
With --ranking-only the directory is a study's results/study/ (the committed one, say): which calibrator wins,
calibrator_ranking.csv, .md and .png, from its tables alone (trustcal.study.ranking); with its report.json,
report.json, study.md and, for this repository's results/study/, the README block are rendered again with it.
A full run writes them too.
"""

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "workflow"))

from trustcal.errors import TrustcalError  # noqa: E402 (after the path above)
from trustcal.study import write_costs, write_ranking_only, write_study  # noqa: E402

COMMAND = (
    ".venv/bin/snakemake --cores 2 --set-threads train=1 logits=1 --configfile config.yaml workflow/study/config.yaml"
)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "run_dir",
        type=Path,
        nargs="?",
        help="the directory the study ran in (with --ranking-only: a results/study/ directory; none with --keep-paper)",
    )
    parser.add_argument(
        "--author-predictions",
        type=Path,
        default=REPO.parent / "shared" / "reference" / "author-predictions",
        help="the author's prediction files (default: %(default)s); 'none' to leave them out",
    )
    parser.add_argument("--command", default=COMMAND, help="the command the run was started with (shown in the README)")
    parser.add_argument("--remark", default="", help="a sentence added to the run's description (e.g. what else ran)")
    parser.add_argument(
        "--beyond",
        type=Path,
        action="append",
        default=[],
        metavar="OTHER_RUN_DIR",
        help="a finished run directory whose runs beyond the paper's (its setups:) join the study; repeatable",
    )
    parser.add_argument(
        "--beyond-command",
        action="append",
        default=[],
        help="the command each --beyond run was started with, in the same order (default: --command with the "
        "configuration files of that directory that declare its setups)",
    )
    parser.add_argument(
        "--keep-beyond",
        action="store_true",
        help="keep the runs beyond the paper's of the committed results/study/report.json as they are (their "
        "tables and figures already in results/study/), e.g. when only the paper's runs were run again",
    )
    parser.add_argument(
        "--keep-paper",
        action="store_true",
        help="keep the paper's runs of the committed results/study/report.json as they are (no RUN_DIR), and the "
        "runs beyond them but those of --beyond, which are read again",
    )
    parser.add_argument(
        "--costs-only",
        action="store_true",
        help="write only the cost tables of RUN_DIR's jobs, into RUN_DIR/results/study/ (not this repository)",
    )
    parser.add_argument(
        "--ranking-only",
        action="store_true",
        help="only the calibrator ranking, from the tables of the results/study/ directory given (no run needed)",
    )
    args = parser.parse_args(argv)
    if args.keep_paper == (args.run_dir is not None):
        parser.error("give RUN_DIR, or --keep-paper with --beyond OTHER_RUN_DIR (the paper's runs as committed)")
    if args.keep_paper and (not args.beyond or args.costs_only or args.ranking_only):
        parser.error("--keep-paper reads only --beyond runs: name one with --beyond OTHER_RUN_DIR")
    if args.ranking_only:
        study = args.run_dir.resolve()
        if not study.is_dir():
            parser.error(f"{study}: no such directory")
        ranking = write_ranking_only(study, REPO if study == REPO / "results" / "study" else None)
        if ranking is None:
            print(f"{study}: no run that compares calibrators; nothing written", file=sys.stderr)
            return 2
        again = ", report.json, study.md" if (study / "report.json").exists() else ""
        readme = " and the study block of README.md" if again and study == REPO / "results" / "study" else ""
        print(f"written: {study}/calibrator_ranking.csv, calibrator_ranking.md, calibrator_ranking.png{again}{readme}")
        return 0
    if len(args.beyond_command) > len(args.beyond):
        parser.error("--beyond-command: one per --beyond at most")
    author = None if str(args.author_predictions) == "none" else args.author_predictions
    run_dir = None if args.keep_paper else args.run_dir.resolve()
    beyond = [(d.resolve(), c) for d, c in zip(args.beyond, args.beyond_command + [None] * len(args.beyond))]
    try:
        if args.costs_only:
            results = run_dir / "results"
            _, _, lines = write_costs(results, results / "study")
            print("\n".join(lines))
            print(f"written: {results / 'study'}/costs.csv, costs_summary.csv, costs.md")
            return 0
        write_study(
            run_dir,
            REPO,
            author,
            args.command,
            remark=args.remark,
            beyond=beyond,
            keep_beyond=args.keep_beyond,
        )
    except TrustcalError as exc:  # the run's snakemake command where a rule's files are at fault
        rerun = f" (in the run's directory: snakemake --cores 2 --forcerun {exc.rerun})" if exc.rerun else ""
        print(f"error: {str(exc).rstrip('.')}{rerun}.", file=sys.stderr)
        return 2
    print(f"written: {REPO / 'results' / 'study'}/ and the study block of README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
