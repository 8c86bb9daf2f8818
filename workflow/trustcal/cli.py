"""Command line: ``trustcal assess FILE_OR_DIR... --out DIR`` (also ``python -m trustcal``).

Exit codes: 0 done (warnings included), 2 bad input or bad arguments (the
message names the file and the fix), 1 an unexpected internal failure.

Only the summary (or with ``--json`` the JSON document) goes to stdout;
warnings, errors and the progress (:class:`_ShowProgress`: bars on a terminal,
plain lines for long work elsewhere) go to stderr.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import signal
import sys
import textwrap
import threading
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path

from trustcal import __version__
from trustcal.errors import TrustcalError
from trustcal.measures.options import SettingError, options_of
from trustcal.progress import ShowProgress
from trustcal.registry import PAPER_DATASETS

DESCRIPTION = """\
Assess a classifier from its predictions alone: the paper's subjective-logic
trust opinions (per label and for the network), ECE, NetTrustScore and the
other metrics of the workflow, written as the workflow's tidy tables plus
figures, with a one-screen summary.
"""

EPILOG = r"""
input formats (detected from the file name, then the contents; .gz is read as is):
  CSV/TSV    one column per class plus a label column named
             'True Label', 'label', 'labels', 'target', 'y', … (any case), e.g.
               Class_0_Probability,...,Class_9_Probability,True Label
               2.6e-06,...,3.9e-05,7
             Columns named by class (3,1,2,0 or p_3 …; setosa,versicolor …
             with such labels) are matched to the classes by name; unnamed
             ones are in class order. Other names: --label-column NAME,
             --prob-columns REGEX (whole column names; default: every column
             but the label). A file whose first line is all numbers has no
             header: its last column is the label.
  Parquet, Feather  the same columns as a CSV (needs pip install 'trustcal[parquet]').
  .npz       'probs' (N×K) or 'logits' (N×K), and 'labels' (N integers);
             'val_logits' + 'val_labels' (or 'val_probs') add validation data:
             temperature scaling is fitted on it, as in the workflow, and both
             the before and after rows are produced. The workflow's own
             results/{dataset}/seed{seed}/logits/epochNNN.npz files are read too.
  .npy       the N×K array alone, with --labels FILE (.npy, .npz or one per line).
  binary     one column (or an N array): P(y = positive) or a decision_function
             score; the positive class is --positive-class, else the class the
             column's name names (0, p0, prob_class_0, p_spam), else 1 (labels
             0/1) or the larger label. Labels may be class names (strings).
  Files where at least 99 % of the rows are probabilities (in [0, 1], or summing
  to 1) are probabilities (a bad cell is an error naming it); at most 50 %:
  logits (with a warning; --kind logits says so explicitly), turned into
  probabilities with a stable softmax; in between, --kind must say which.
  Probabilities must sum to 1 per row within --sum-tolerance.

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

output (--out DIR, written only when everything succeeded; a rerun replaces
the earlier assessment's files and keeps, and names, every other file; one run
at a time writes DIR):
  trust.csv, dynamic_trust.csv, trust_sweep.csv, scores.csv, trust_spectrum.csv,
  reliability.csv, trust_density.csv (the workflow's tables; the input files are
  the test split), calibration.csv (when temperature scaling was fitted),
  figures/ (PNG; --figure-formats png,pdf adds PDFs: trust_grid and the other
  per-epoch figures for a series, loss_curves with a history; reliability,
  trust_spectrum, trust_density and cluster_sweep for a single file, drawn as
  one set of predictions, or for a series with a history),
  summary.txt, warnings.txt, assess.json (inputs and parameters).
  stdout: the summary; --json: one JSON document instead; --quiet: nothing.
  stderr: warnings, errors and progress (a bar per phase on a terminal, plain
  lines for long work elsewhere, then "assessed N files in …"; --quiet: none).

examples:
  trustcal assess ../shared/reference/author-predictions/MNIST_PRED --out results/author_mnist
  trustcal assess preds.csv --label-column target --prob-columns 'p_\d+' --out out/
  trustcal assess 'run1/epoch*.npz' --out out/run1
  trustcal assess test_logits.npy --labels test_labels.npy --kind logits \
      --validation val.npz --out out/model
"""


def _at_least(low: int):
    """An argument type: a whole number ≥ ``low``."""

    def count(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number ≥ {low} (got {text!r})") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be ≥ {low} (got {value})")
        return value

    return count


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number (got {text})")
    return value


def _choices(choices: Sequence[str], what: str, pattern: str | None = None, pattern_help: str = ""):
    """An argument type: comma-separated names among ``choices``, or matching ``pattern`` (kept as written: an
    import path is case-sensitive), each once, in their order."""
    allowed = ", ".join(choices) + (f", or {pattern_help}" if pattern else "")

    def names(text: str) -> list[str]:
        given = [n.strip() for n in text.split(",") if n.strip()]
        given = [n if pattern and re.match(pattern, n) else n.lower() for n in given]
        unknown = [n for n in given if n not in choices and not (pattern and re.match(pattern, n))]
        if unknown or not given:
            raise argparse.ArgumentTypeError(
                f"unknown {what} {', '.join(unknown) or repr(text)}; choose from {allowed}"
            )
        return list(dict.fromkeys(given))

    return names


def _setting_type(option):
    """An argument type: one value of a setting, checked by its :class:`~trustcal.measures.options.Option`
    (the settings dataclass's own check); ``option.off`` is taken as it is."""

    def value(text: str):
        try:
            parsed = option.kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {option.expected()} (got {text!r})") from None
        problem = None if parsed == option.off else option.problem(parsed)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return parsed

    return value


FIGURE_FORMATS = ("png", "pdf")
MIN_CLASSES = 2  # ReadOptions.num_classes and the schema's external.<name>.num_classes


class _Parser(argparse.ArgumentParser):
    """Usage errors in two lines, the problem and the short usage, instead of the whole usage."""

    def error(self, message: str):
        usage = self.format_usage().strip()
        self.exit(2, f"{self.prog}: error: {message}\n{usage}   ({self.prog} --help lists every option)\n")


OUT_REQUIRED = "--out DIR is required (where to write the tables and figures); e.g. trustcal assess {} --out assessed/"


def build_parser() -> argparse.ArgumentParser:
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
        help="output directory (required; created; trustcal's earlier files in it replaced, other files kept)",
    )
    _reading_flags(a.add_argument_group("reading"))
    for title, groups in setting_groups():
        g = a.add_argument_group(title)
        for _, cls, prefix in groups:
            for name, option in options_of(cls).items():
                _add_setting(g, cls, name, option, prefix)
    _output_flags(a.add_argument_group("output"))
    return parser


def setting_groups():
    """The settings of ``trustcal assess`` by help section: (title, [(Settings field, dataclass, flag prefix)]).
    A field's flag is ``--`` + the prefix + its configuration key, or its option's ``flag``."""
    from trustcal.evaluation import MetricParams, SweepParams
    from trustcal.measures.bootstrap import BootstrapParams
    from trustcal.measures.trust import TrustParams
    from trustcal.settings import CalibrationSettings

    return (
        (
            "trust opinion (paper §5, docs/method.md §3; defaults: the paper's)",
            [("trust", TrustParams, ""), ("sweep", SweepParams, "")],
        ),
        ("metrics (docs/method.md §5–8)", [("metrics", MetricParams, "")]),
        (
            "calibration (with validation data; docs/method.md §2)",
            [("calibration", CalibrationSettings, ""), ("bootstrap", BootstrapParams, "bootstrap-")],
        ),
    )


def setting_flag(name: str, option, prefix: str = "") -> str:
    """The flag of the setting ``name`` of a dataclass whose flags have ``prefix``: ``--clusters-sweep``."""
    return "--" + (option.flag or prefix + (option.key or name)).replace("_", "-")


def _dest(name: str, option, prefix: str) -> str:
    return setting_flag(name, option, prefix)[2:].replace("-", "_")


def _add_setting(group, cls, name: str, option, prefix: str) -> None:
    """The flag of one field of a settings dataclass: its type the field's check, its default the field's."""
    default = {f.name: f.default for f in fields(cls)}[name]
    shown = option.shown_default or "%(default)s"
    kwargs = dict(dest=_dest(name, option, prefix), metavar=option.metavar, default=default)
    if option.comma:
        kwargs.update(type=_choices(option.choices, "calibrator", option.pattern, option.pattern_help))
        extra = f", comma-separated, any of {', '.join(option.choices)}" + (
            f", or {option.pattern_help}" if option.pattern else ""
        )
    elif option.choices is not None:
        kwargs.update(choices=option.choices)
        extra = ""
    else:
        kwargs.update(type=_setting_type(option))
        extra = f"; {option.off}: none" if option.off is not None else ""
    if option.many and not option.comma:
        kwargs.update(nargs="+", default=list(default))
    group.add_argument(setting_flag(name, option, prefix), help=f"{option.help}{extra} (default: {shown})", **kwargs)


def _reading_flags(g) -> None:
    """The flags of :class:`~trustcal.predictions.ReadOptions` (how the files are read)."""
    from trustcal.predictions import DEFAULT_NAME_PATTERN, FORMATS, PREDICTION_KINDS, ReadOptions

    ro = ReadOptions()
    g.add_argument("--format", choices=FORMATS, default=ro.format, help="file format (default: from name and contents)")
    g.add_argument(
        "--kind",
        choices=PREDICTION_KINDS,
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
    g.add_argument(
        "--num-classes", type=_at_least(MIN_CLASSES), metavar="K", help="expected number of classes (checked; ≥ 2)"
    )
    g.add_argument(
        "--positive-class",
        metavar="NAME",
        help="binary predictions (one column): the class they are the probability or score of "
        "(default: the class the column's name names, e.g. p0 or p_spam, else 1 for labels 0/1, else the larger label)",
    )
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


def _output_flags(g) -> None:
    """The flags of what is written and shown."""
    g.add_argument("--title", help="figure title (default: a single file's name, else the series' directory name)")
    g.add_argument("--no-figures", action="store_true", help="write the tables only")
    g.add_argument(
        "--figure-formats",
        type=_choices(FIGURE_FORMATS, "figure format"),
        default=["png"],
        metavar="LIST",
        help="file formats of the figures, comma-separated: png, pdf (default: png; a PDF doubles the drawing "
        "time, which is most of a single file's)",
    )
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
        choices=PAPER_DATASETS,
        metavar="DATASET",
        help=f"also judge the paper's claims about DATASET ({' or '.join(PAPER_DATASETS)}) on these predictions: "
        "reproduction.md and .csv",
    )
    g.add_argument(
        "--claims",
        metavar="FILE",
        help="also judge the claims of FILE (YAML, docs/claims.md) on these predictions: verdict.md and .csv",
    )
    g.add_argument("--debug", action="store_true", help="show a traceback on unexpected failures")


def _dataclass_from(cls, args):
    """``cls`` with each field from the argument of the same name (lists as tuples)."""
    values = {f.name: getattr(args, f.name) for f in fields(cls) if hasattr(args, f.name)}
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})


def settings_from_args(args):
    """The :class:`~trustcal.settings.Settings` of ``trustcal assess``'s arguments: each settings dataclass
    from the flags :func:`build_parser` derived from its fields (a group whose ``off`` value is given: None)."""
    from trustcal.settings import Settings

    parts = {}
    for _, groups in setting_groups():
        for part, cls, prefix in groups:
            values, off = {}, False
            for name, option in options_of(cls).items():
                value = getattr(args, _dest(name, option, prefix))
                off = off or (option.off is not None and value == option.off)
                values[name] = tuple(value) if isinstance(value, list) else value
            try:
                parts[part] = None if off else cls(**values)
            except SettingError as exc:
                names = [_dest(n, o, prefix) for n, o in options_of(cls).items()]
                raise TrustcalError(cli_words(str(exc), names)) from None
    return Settings(**parts)


def flag(option: str) -> str:
    """The flag of ``trustcal assess`` that sets ``option`` (a setting's name: ``sum_tolerance`` → ``--sum-tolerance``)."""
    return "--" + option.replace("_", "-")


def cli_words(message: str, options: Sequence[str]) -> str:
    """A library message in the command line's words: each setting it names (``options``, as
    :mod:`trustcal.predictions.errors` writes them) as the flag that sets it: ``kind="logits"`` →
    ``--kind logits``, ``renormalize=True`` → ``--renormalize``, ``labels=FILE`` → ``--labels FILE``,
    ``calibrators=None`` → ``no --calibrators``, a name with an underscore alone (``t_min``) → ``--t-min``."""
    for option in options:
        alone = r"(?![\w=])" if "_" in option else r"(?!)"  # (?!) never matches
        pattern = rf"(?<![\w.\-]){re.escape(option)}(?:=(?P<value>True\b|None\b|\"[^\"]*\"|)|{alone})"
        message = re.sub(pattern, functools.partial(_as_flag, flag(option)), message)
    return message


def _as_flag(flag: str, match: re.Match) -> str:
    value = match.group("value")
    if value is None or value == "True":  # the name alone, or name=True
        return flag
    if value == "None":
        return f"no {flag}"
    if value.startswith('"'):
        return f"{flag} {value[1:-1]}"
    return f"{flag} "  # name=VALUE: the value follows the flag


def print_warnings(warnings, file=None) -> None:
    """One entry per kind of warning: the first in full (in the command line's words), then the other
    files it concerns."""
    file = file or sys.stderr
    by_code: dict[str, list] = {}
    for w in warnings:
        by_code.setdefault(w.code, []).append(w)
    for code, group in by_code.items():
        text = f"warning [{code}]: {cli_words(str(group[0]), group[0].options)}"
        others = [Path(w.file).name for w in group[1:] if w.file]
        if others:
            shown = ", ".join(others[:6]) + (", …" if len(others) > 6 else "")
            text += f" The same holds for {len(others)} more file(s): {shown} (all in warnings.txt)."
        print(textwrap.fill(text, width=100, subsequent_indent="  "), file=file)


def kept_line(out, kept: Sequence[str]) -> str:
    """The note naming the files of ``out`` that trustcal did not write and left there."""
    shown = ", ".join(kept[:8]) + (f", … ({len(kept) - 8} more)" if len(kept) > 8 else "")
    return f"note: {Path(out)}/: kept {len(kept)} file(s) that trustcal did not write: {shown}"


def run_assess(args) -> int:
    from trustcal.assessment import assess_to_dir, available_cores, no_progress, summary_dict
    from trustcal.predictions import ReadOptions

    settings = settings_from_args(args)
    read = _dataclass_from(ReadOptions, args)
    show = ShowProgress(sys.stderr) if not args.quiet else no_progress
    result = assess_to_dir(
        args.sources,
        args.out,
        read,
        settings,
        history=args.history,
        title=args.title,
        figures=not args.no_figures,
        figure_formats=args.figure_formats,
        paper_claims=args.paper_claims,
        claims=args.claims,
        progress=show,
        processes=available_cores(),  # a series' tables and the figures in parallel: a fresh process, safe to fork
        wording=cli_words,
    )
    if show is not no_progress:
        show.done(len(result.files))
    print_warnings(result.warnings)
    if result.kept and not args.quiet:
        print(kept_line(args.out, result.kept), file=sys.stderr)
    written = [f"{n}.csv" for n in result.tables] + ["summary.txt", "warnings.txt", "assess.json"]
    if args.paper_claims:
        written += ["reproduction.md", "reproduction.csv"]
    if args.claims:
        written += ["verdict.md", "verdict.csv"]
    if args.json:
        document = summary_dict(result, wording=cli_words)
        print(json.dumps({**document, "out": str(args.out), "written": written, "kept": result.kept}, indent=2))
    elif not args.quiet:
        print(result.summary())
        print(
            f"\nwritten to {args.out}/: {', '.join(written)}"
            + (f", figures/ ({len(result.figures)} files)" if result.figures else "")
        )
    return 0


class Terminated(KeyboardInterrupt):
    """SIGTERM (a scheduler ending a job, ``kill``), taken as an interruption: the output directory is left
    as it was, the temporary one removed, the forked workers killed, the lock released."""


def _terminated(signum, frame) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM while cleaning up ends the process at once
    raise Terminated()


def _on_sigterm():
    """Make SIGTERM raise :class:`Terminated` while the command runs (the main thread only: a handler can
    be set there alone); the handler it replaced, to restore."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _terminated)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "assess" and args.out is None:
        example = " ".join(args.sources) if len(" ".join(args.sources)) <= 60 else "preds/"
        args.parser.error(OUT_REQUIRED.format(example))
    previous = _on_sigterm()
    try:
        return _run(parser, args)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _run(parser, args) -> int:
    try:
        if args.command == "assess":
            return run_assess(args)
        parser.error(f"unknown command {args.command}")
    except TrustcalError as exc:
        print(f"error: {cli_words(str(exc), getattr(exc, 'options', ()))}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into `head` and the like: the results are written, stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Terminated:
        print("error: stopped by SIGTERM; nothing was written", file=sys.stderr)
        return 128 + signal.SIGTERM
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
