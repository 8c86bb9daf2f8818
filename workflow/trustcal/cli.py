"""Command line: ``trustcal assess FILE_OR_DIR... --out DIR`` (also ``python -m trustcal``).

Exit codes: 0 done (warnings included), 2 bad input or bad arguments (the
message names the file and the fix), 1 an unexpected internal failure.

Only the summary (or with ``--json`` the JSON document) goes to stdout;
warnings, errors and the progress bars (on a terminal only) go to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from dataclasses import fields
from pathlib import Path

from trustcal import __version__
from trustcal.errors import TrustcalError

DESCRIPTION = """\
Assess a classifier from its predictions alone: the paper's subjective-logic
trust opinions (per label and for the network), ECE, NetTrustScore and the
other metrics of the workflow, written as the workflow's tidy tables plus
figures, with a one-screen summary.
"""

EPILOG = r"""
input formats (detected from the file name, then the contents; .gz is read as is):
  CSV/TSV    one column per class, in class order, plus a label column named
             'True Label', 'label', 'labels', 'target' or 'y' (any case), e.g.
               Class_0_Probability,...,Class_9_Probability,True Label
               2.6e-06,...,3.9e-05,7
             Other names: --label-column NAME, --prob-columns REGEX (whole
             column names; default: every column but the label). A file whose
             first line is all numbers has no header: its last column is the label.
  .npz       'probs' (N×K) or 'logits' (N×K), and 'labels' (N integers);
             'val_logits' + 'val_labels' (or 'val_probs') add validation data:
             temperature scaling is fitted on it, as in the workflow, and both
             the before and after rows are produced. The workflow's own
             results/{dataset}/seed{seed}/logits/epochNNN.npz files are read too.
  .npy       the N×K array alone, with --labels FILE (.npy, .npz or one per line).
  Values outside [0, 1] whose rows do not sum to 1 are read as logits (with a
  warning; --kind logits says so explicitly) and turned into probabilities with
  a stable softmax. Probabilities must sum to 1 per row within --sum-tolerance.

epoch series:
  A directory, a glob or several files are one series, with the epoch and the
  state taken from each file name (extensions stripped): the last number is the
  epoch, and a word before/bef/uncalibrated or after/aft/calibrated anywhere in
  the name is the state (no word: before calibration). bef_10.csv.gz,
  aft_10.csv.gz, epoch010.npz, run3_epoch_7_after.csv all work; files of a
  directory without a number are skipped, except a training history there
  (loss_history.npy or history.csv), which is used as --history would use it.
  Override with --name-pattern, a regular expression with a group
  (?P<epoch>...) and optionally (?P<state>...).
  A single file without a number is epoch 0.

output (--out DIR, replaced whole only when everything succeeded):
  trust.csv, dynamic_trust.csv, trust_sweep.csv, scores.csv, trust_spectrum.csv,
  reliability.csv, trust_density.csv (the workflow's tables; the input files are
  the test split), calibration.csv (when temperature scaling was fitted),
  figures/ (trust_grid for a series, loss_curves with a history; reliability and
  trust_spectrum for a single file, or a series with a history),
  summary.txt, warnings.txt, assess.json (inputs and parameters).
  stdout: the summary; --json: one JSON document instead; --quiet: nothing.

examples:
  trustcal assess ../shared/reference/author-predictions/MNIST_PRED --out results/author_mnist
  trustcal assess preds.csv --label-column target --prob-columns 'p_\d+' --out out/
  trustcal assess 'run1/epoch*.npz' --out out/run1
  trustcal assess test_logits.npy --labels test_labels.npy --kind logits \
      --validation val.npz --out out/model
"""


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be ≥ 1 (got {value})")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be ≥ 0 (got {value})")
    return value


def _fitted_methods() -> list[str]:
    from trustcal.calibration import CALIBRATORS

    return [m for m in CALIBRATORS if m != "none"]


def _calibrators(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in _fitted_methods()]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown calibrator {', '.join(unknown) or repr(text)}; choose from {', '.join(_fitted_methods())}"
        )
    return list(dict.fromkeys(names))


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number (got {text})")
    return value


def _nonnegative_float(text: str) -> float:
    value = float(text)
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be ≥ 0 (got {text})")
    return value


def _unit_float(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1] (got {text})")
    return value


def _open_unit_float(text: str) -> float:
    value = float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1) (got {text})")
    return value


class _Parser(argparse.ArgumentParser):
    """Usage errors in two lines, the problem and the short usage, instead of the whole usage."""

    def error(self, message: str):
        usage = self.format_usage().strip()
        self.exit(2, f"{self.prog}: error: {message}\n{usage}   ({self.prog} --help lists every option)\n")


OUT_REQUIRED = "--out DIR is required (where to write the tables and figures); e.g. trustcal assess {} --out assessed/"


def _show_progress(items, what: str, unit: str):
    """A progress bar on stderr (only used when stderr is a terminal)."""
    from tqdm import tqdm

    return tqdm(items, desc=what, unit=f" {unit}s", file=sys.stderr, leave=False, dynamic_ncols=True)


def build_parser() -> argparse.ArgumentParser:
    from trustcal.calibration import T_MAX, T_MIN
    from trustcal.measures.bootstrap import BootstrapParams
    from trustcal.measures.trust import FUSIONS, REPRESENTATIVES, TrustParams
    from trustcal.predictions import DEFAULT_NAME_PATTERN, FORMATS, KINDS, ReadOptions
    from trustcal.reporting.tables import MetricParams, SweepParams

    tp, mp, sp, ro = TrustParams(), MetricParams(), SweepParams(), ReadOptions()
    parser = _Parser(prog="trustcal", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    a = sub.add_parser(
        "assess",
        help="trust opinions, ECE, NetTrustScore and figures of any model's predictions",
        usage="%(prog)s FILE_OR_DIR... --out DIR [options]",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    a.set_defaults(parser=a)  # for the usage errors found after parsing
    a.add_argument("sources", nargs="+", metavar="FILE_OR_DIR", help="prediction file(s), a directory or a glob")
    a.add_argument(
        "--out",
        "-o",
        metavar="DIR",
        help="output directory (required; created; replaced if written by trustcal before)",
    )

    g = a.add_argument_group("reading")
    g.add_argument("--format", choices=FORMATS, default=ro.format, help="file format (default: from name and contents)")
    g.add_argument(
        "--kind",
        choices=KINDS,
        default=ro.kind,
        help="probabilities or logits (default: auto; npz: from the array name)",
    )
    g.add_argument("--label-column", metavar="NAME", help="name of the CSV label column")
    g.add_argument(
        "--prob-columns", metavar="REGEX", help="regex matching the whole names of the CSV probability columns"
    )
    g.add_argument("--labels", metavar="FILE", help="labels for predictions without them (.npy, .npz or one per line)")
    g.add_argument(
        "--validation", metavar="FILE", help="validation predictions with labels: fit temperature scaling on them"
    )
    g.add_argument(
        "--name-pattern",
        metavar="REGEX",
        default=DEFAULT_NAME_PATTERN,
        help="regex with groups (?P<epoch>…) and optional (?P<state>…) matched against file names",
    )
    g.add_argument("--num-classes", type=_positive_int, metavar="K", help="expected number of classes (checked)")
    g.add_argument(
        "--sum-tolerance",
        type=_positive_float,
        default=ro.sum_tolerance,
        metavar="TOL",
        help="rows must sum to 1 within this (default: %(default)g)",
    )
    g.add_argument(
        "--renormalize", action="store_true", help="divide rows that do not sum to 1 by their sum (with a warning)"
    )
    g.add_argument(
        "--history",
        metavar="FILE",
        help="training history for the loss figure: CSV epoch,train_loss,val_loss "
        "or a pickled {'train','val'} .npy (unpickled with numpy's array types only; a file naming anything else is refused)",
    )

    g = a.add_argument_group("trust opinion (paper §5, docs/method.md §3; defaults: the paper's)")
    g.add_argument(
        "--clusters",
        type=_positive_int,
        default=tp.clusters,
        metavar="M",
        help="probability clusters per class (default: %(default)s)",
    )
    g.add_argument(
        "--weight",
        type=_positive_float,
        default=tp.weight,
        metavar="W",
        help="non-informative prior weight (default: %(default)s)",
    )
    g.add_argument(
        "--alpha",
        type=_nonnegative_float,
        default=tp.alpha,
        help="weight of excess evidence t − n·RP (default: %(default)s)",
    )
    g.add_argument(
        "--beta",
        type=_nonnegative_float,
        default=tp.beta,
        help="weight of missing evidence n·RP − t (default: %(default)s)",
    )
    g.add_argument(
        "--base-rate", type=_unit_float, default=tp.base_rate, metavar="A", help="base rate a (default: %(default)s)"
    )
    g.add_argument(
        "--representative",
        choices=REPRESENTATIVES,
        default=tp.representative,
        help="cluster representative (default: %(default)s)",
    )
    g.add_argument(
        "--cluster-fusion",
        choices=FUSIONS,
        default=tp.cluster_fusion,
        help="fusion of cluster opinions (default: %(default)s)",
    )
    g.add_argument(
        "--class-fusion",
        choices=FUSIONS,
        default=tp.class_fusion,
        help="fusion of class opinions (default: %(default)s)",
    )
    g.add_argument(
        "--clusters-sweep",
        type=_positive_int,
        nargs="+",
        default=list(sp.clusters),
        metavar="M",
        help="M values of trust_sweep.csv (default: %(default)s)",
    )
    g.add_argument(
        "--sweep-epochs",
        type=int,
        nargs="+",
        default=list(sp.epochs),
        metavar="E",
        help="epochs of trust_sweep.csv; the last epoch is always added (default: %(default)s)",
    )

    g = a.add_argument_group("metrics (docs/method.md §5–8)")
    g.add_argument(
        "--ece-bins",
        type=_positive_int,
        nargs="+",
        default=list(mp.ece_bins),
        metavar="M",
        help="ECE bin counts; the first is the 'ece' column (default: %(default)s)",
    )
    g.add_argument(
        "--nts-alpha",
        type=_positive_float,
        default=mp.nts_alpha,
        help="NetTrustScore reward exponent (default: %(default)s)",
    )
    g.add_argument(
        "--nts-beta",
        type=_positive_float,
        default=mp.nts_beta,
        help="NetTrustScore penalty exponent (default: %(default)s)",
    )
    g.add_argument(
        "--density-gamma",
        type=_positive_float,
        default=mp.density_gamma,
        help="trust density bandwidth γ/√N (default: %(default)s)",
    )
    g.add_argument(
        "--density-points",
        type=_positive_int,
        default=mp.density_points,
        help="trust density grid points (default: %(default)s)",
    )
    g.add_argument(
        "--geo-eps",
        type=_open_unit_float,
        default=mp.geo_eps,
        help="floor of the true-class probability (default: %(default)s)",
    )
    g.add_argument(
        "--geo-bins",
        type=_positive_int,
        default=mp.geo_bins,
        help="bins of the measured geometric metrics (default: %(default)s)",
    )
    g.add_argument(
        "--reliability-bins",
        type=_positive_int,
        default=mp.reliability_bins,
        help="reliability curve bins (default: %(default)s)",
    )
    g.add_argument(
        "--l2-bins",
        type=_positive_int,
        default=mp.l2_bins,
        help="equal-mass bins of the L2 and debiased L2 ECE (default: %(default)s)",
    )

    g = a.add_argument_group("calibration (with validation data; docs/method.md §2)")
    g.add_argument(
        "--calibrators",
        type=_calibrators,
        default=["temperature"],
        metavar="LIST",
        help="calibrators fitted on the validation data, comma-separated, any of "
        f"{', '.join(_fitted_methods())} (default: temperature; all but temperature need "
        "pip install 'trustcal[calibration]')",
    )
    g.add_argument("--t-min", type=_positive_float, default=T_MIN, help="lower bound of T (default: %(default)s)")
    g.add_argument("--t-max", type=_positive_float, default=T_MAX, help="upper bound of T (default: %(default)s)")
    g.add_argument(
        "--bootstrap",
        type=_non_negative_int,
        default=BootstrapParams().resamples,
        metavar="B",
        help="resamples of the test set behind every interval (default: %(default)s; 0: no intervals)",
    )

    g = a.add_argument_group("output")
    g.add_argument("--title", help="figure title (default: the input directory's name)")
    g.add_argument("--no-figures", action="store_true", help="write the tables only")
    quiet = g.add_mutually_exclusive_group()
    quiet.add_argument(
        "--json",
        action="store_true",
        help="print the summary as one JSON document on stdout (for scripts): per epoch and state "
        "the metrics and the network trust opinion, the files, figures and warnings",
    )
    quiet.add_argument("--quiet", "-q", action="store_true", help="print nothing but warnings and errors (on stderr)")
    g.add_argument(
        "--paper-claims",
        choices=("mnist", "cifar10"),
        metavar="DATASET",
        help="also judge the paper's claims about DATASET (mnist or cifar10) on these predictions: "
        "reproduction.md and .csv",
    )
    g.add_argument("--debug", action="store_true", help="show a traceback on unexpected failures")
    return parser


def _dataclass_from(cls, args, rename: dict | None = None, **extra):
    rename = rename or {}
    values = {
        f.name: getattr(args, rename.get(f.name, f.name))
        for f in fields(cls)
        if hasattr(args, rename.get(f.name, f.name))
    }
    values.update(extra)
    for k, v in values.items():
        if isinstance(v, list):
            values[k] = tuple(v)
    return cls(**values)


def print_warnings(warnings, file=None) -> None:
    """One entry per kind of warning: the first in full, then the other files it concerns."""
    file = file or sys.stderr
    by_code: dict[str, list] = {}
    for w in warnings:
        by_code.setdefault(w.code, []).append(w)
    for code, group in by_code.items():
        text = f"warning [{code}]: {group[0]}"
        others = [Path(w.file).name for w in group[1:] if w.file]
        if others:
            shown = ", ".join(others[:6]) + (", …" if len(others) > 6 else "")
            text += f" The same holds for {len(others)} more file(s): {shown} (all in warnings.txt)."
        print(textwrap.fill(text, width=100, subsequent_indent="  "), file=file)


def run_assess(args) -> int:
    from trustcal.assessment import assess_to_dir, no_progress, summary_dict
    from trustcal.measures.bootstrap import BootstrapParams
    from trustcal.measures.trust import TrustParams
    from trustcal.predictions import ReadOptions
    from trustcal.reporting.tables import MetricParams, SweepParams

    if args.t_min >= args.t_max:
        raise TrustcalError(f"--t-min {args.t_min} must be smaller than --t-max {args.t_max}")
    try:
        trust = _dataclass_from(TrustParams, args, dict(weight="weight"))
    except ValueError as exc:
        raise TrustcalError(f"trust parameters: {exc}") from None
    read = _dataclass_from(ReadOptions, args)
    metrics = _dataclass_from(MetricParams, args)
    sweep = SweepParams(clusters=tuple(args.clusters_sweep), epochs=tuple(args.sweep_epochs))
    show = _show_progress if sys.stderr.isatty() and not args.quiet else no_progress
    result = assess_to_dir(
        args.sources,
        args.out,
        read,
        trust,
        metrics,
        sweep,
        t_min=args.t_min,
        t_max=args.t_max,
        calibrators=args.calibrators,
        bootstrap=BootstrapParams(resamples=args.bootstrap) if args.bootstrap else None,
        history=args.history,
        title=args.title,
        figures=not args.no_figures,
        paper_claims=args.paper_claims,
        progress=show,
    )
    print_warnings(result.warnings)
    written = [f"{n}.csv" for n in result.tables] + ["summary.txt", "warnings.txt", "assess.json"]
    if args.paper_claims:
        written += ["reproduction.md", "reproduction.csv"]
    if args.json:
        print(json.dumps({**summary_dict(result), "out": str(args.out), "written": written}, indent=2))
    elif not args.quiet:
        print(result.summary())
        print(
            f"\nwritten to {args.out}/: {', '.join(written)}"
            + (f", figures/ ({len(result.figures)} files)" if result.figures else "")
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "assess" and args.out is None:
        example = " ".join(args.sources) if len(" ".join(args.sources)) <= 60 else "preds/"
        args.parser.error(OUT_REQUIRED.format(example))
    try:
        if args.command == "assess":
            return run_assess(args)
        parser.error(f"unknown command {args.command}")
    except TrustcalError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into `head` and the like: the results are written, stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("error: interrupted; nothing was written", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug, not bad input: say so briefly (a traceback with --debug)
        if getattr(args, "debug", False):
            raise
        print(
            f"error: unexpected failure ({type(exc).__name__}: {exc}); nothing was written. "
            "Rerun with --debug for the traceback and please report it.",
            file=sys.stderr,
        )
        return 1
    return 0
