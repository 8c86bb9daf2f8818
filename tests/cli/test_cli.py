"""The `trustcal` command line itself: --version, --json, --quiet, progress bars and short usage errors.

What is assessed (formats, checks, tables) is tested in test_assess.py.
"""

import io
import json
import re
import subprocess
import sys
import time
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pandas as pd
import pytest

import trustcal
from trustcal import cli, progress
from trustcal.calibration.temperature import softmax


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def run(*args, stderr=None):
    """cli.main in-process: (exit code, stdout, stderr); a usage error's SystemExit gives its code."""
    out, err = io.StringIO(), stderr or io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = cli.main([str(a) for a in args])
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


def write_preds(path, seed=0, n=60, k=4, scale=1.0):
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % k
    logits = rng.normal(size=(n, k))
    logits[np.arange(n), labels] += 2.0
    probs = softmax(logits) * scale
    df = pd.DataFrame(probs, columns=[f"p{c}" for c in range(k)]).assign(label=labels)
    df.to_csv(path, index=False, float_format="%.8f")
    return path


@pytest.fixture
def series(tmp_path):
    """Two epochs; the second does not sum to 1, so --renormalize gives a warning."""
    d = tmp_path / "preds"
    d.mkdir()
    write_preds(d / "bef_1.csv", seed=1)
    write_preds(d / "bef_2.csv", seed=2, scale=1.01)
    return d


def test_version():
    proc = subprocess.run([sys.executable, "-m", "trustcal", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout == f"trustcal {trustcal.__version__}\n" and proc.stderr == ""


def test_json_is_the_only_output_on_stdout(series, tmp_path):
    out = tmp_path / "out"
    code, stdout, stderr = run("assess", series, "--out", out, "--renormalize", "--no-figures", "--json")
    assert code == 0, stderr
    doc = json.loads(stdout)
    assert "warning [renormalized]" in stderr and "{" not in stderr
    assert doc["trustcal_version"] == trustcal.__version__ and doc["out"] == str(out)
    assert [(f["path"], f["epoch"]) for f in doc["files"]] == [
        (str(series / "bef_1.csv"), 1),
        (str(series / "bef_2.csv"), 2),
    ]
    assert doc["classes"] == 4 and doc["test_samples"] == [60]
    assert [w["code"] for w in doc["warnings"]] == ["renormalized"] and "bef_2.csv" in doc["warnings"][0]["file"]
    assert "trust.csv" in doc["written"] and doc["figures"] == []
    # every metric of the summary table, per epoch and state, as in the tables written
    scores = pd.read_csv(out / "scores.csv").query("split == 'test'")
    trust = pd.read_csv(out / "trust.csv").query("label == 'network'")
    assert [(r["epoch"], r["calibrated"]) for r in doc["epochs"]] == [(1, False), (2, False)]
    assert [(r["epoch"], r["calibrator"]) for r in doc["calibrators"]] == [(1, "none"), (2, "none")]
    for row in doc["epochs"]:  # every number with its bootstrap interval
        assert row["ece_lo"] <= row["ece"] <= row["ece_hi"] and row["belief_lo"] <= row["belief_hi"]
    for row in doc["epochs"]:
        s = scores[scores["epoch"] == row["epoch"]].iloc[0]
        t = trust[trust["epoch"] == row["epoch"]].iloc[0]
        for key in ("accuracy", "ece", "net_trust_score"):
            assert row[key] == pytest.approx(s[key], rel=1e-9), key
        for key in ("belief", "disbelief", "uncertainty"):
            assert row[key] == pytest.approx(t[key], rel=1e-9), key


def test_quiet_prints_only_warnings(series, tmp_path):
    code, stdout, stderr = run("assess", series, "--out", tmp_path / "out", "--renormalize", "--no-figures", "--quiet")
    assert code == 0 and stdout == ""
    assert stderr.startswith("warning [renormalized]") and "epoch" not in stderr
    assert (tmp_path / "out" / "summary.txt").read_text().startswith("trustcal assess: 2 prediction files")
    code, _, stderr = run("assess", series, "--out", tmp_path / "out", "--quiet", "--json")
    assert code == 2 and "not allowed with" in stderr


def test_progress_bars_only_on_a_terminal(series, tmp_path):
    code, stdout, stderr = run(
        "assess", series, "--out", tmp_path / "out", "--renormalize", "--no-figures", stderr=Terminal()
    )
    assert code == 0 and "\rreading:" in stderr and "/2 [" in stderr  # a bar over the 2 files (cleared at the end)
    assert stdout.startswith("trustcal assess: 2 prediction files") and "reading" not in stdout
    code, stdout, stderr = run(
        "assess", series, "--out", tmp_path / "out", "--renormalize", "--no-figures", "--quiet", stderr=Terminal()
    )
    assert code == 0 and stdout == "" and "reading" not in stderr
    code, _, stderr = run("assess", series, "--out", tmp_path / "out", "--renormalize", "--no-figures")
    assert code == 0 and "reading" not in stderr  # not a terminal: no bar (test_assess checks stderr == "")


def test_single_file_gets_reliability_and_trust_spectrum_figures(tmp_path):
    out = tmp_path / "out"
    code, stdout, stderr = run("assess", write_preds(tmp_path / "model.csv"), "--out", out)
    assert code == 0, stderr
    drawn = {p.name for p in (out / "figures").iterdir()}
    assert drawn == {
        f"{n}.png" for n in ("reliability", "trust_spectrum", "trust_density", "cluster_sweep", "smooth_reliability")
    }
    for name in ("reliability", "trust_spectrum", "trust_density"):
        assert (out / "figures" / f"{name}.png").stat().st_size > 10_000
    assert "figures not drawn" not in stdout  # those against the epoch do not apply to one file
    code, stdout, stderr = run("assess", tmp_path / "model.csv", "--out", out, "--figure-formats", "png,pdf", "--json")
    assert code == 0 and json.loads(stdout)["figures"] == [
        f"figures/{n}.{ext}"
        for n in ("reliability", "trust_spectrum", "trust_density", "cluster_sweep", "smooth_reliability")
        for ext in ("png", "pdf")
    ]
    code, _, stderr = run("assess", tmp_path / "model.csv", "--out", out, "--figure-formats", "svg")
    assert code == 2 and "unknown figure format svg; choose from png, pdf" in stderr


def test_missing_out_is_a_short_error_naming_the_fix(tmp_path):
    code, stdout, stderr = run("assess", "preds")
    assert code == 2 and stdout == ""
    assert "--out DIR is required" in stderr and "e.g. trustcal assess preds --out assessed/" in stderr
    assert len(stderr.splitlines()) < 4 and "--clusters" not in stderr  # not the whole usage
    code, _, stderr = run("assess", tmp_path, "--clusters", "0", "--out", tmp_path / "o")
    assert code == 2 and "argument --clusters: must be ≥ 1" in stderr and len(stderr.splitlines()) < 4


@pytest.mark.parametrize(
    "args, message",
    [
        (["--ece-bins", "15", "1000000000"], "argument --ece-bins: must be ≤ 10000 (got 1000000000): "),
        (["--bootstrap", "1000000"], "argument --bootstrap: must be ≤ 10000 (got 1000000): "),
        (["--clusters", "3.0"], "argument --clusters: must be a whole number from 1 to 10000 (got '3.0')"),
        (["--sweep-epochs", "-1"], "argument --sweep-epochs: must be ≥ 0 (got -1)"),
    ],
)
def test_an_absurd_count_is_one_line_before_any_work(tmp_path, args, message):
    code, stdout, stderr = run("assess", tmp_path, *args, "--out", tmp_path / "o")
    assert code == 2 and stdout == "" and message in stderr.splitlines()[0], stderr
    assert len(stderr.splitlines()) == 2  # the problem and the short usage


def _history_error(*args):
    code, stdout, stderr = run("assess", *args)
    assert code == 2 and stdout == ""
    assert "a training loss history, not predictions" in stderr and "--history" in stderr
    assert "probabilit" not in stderr and "label" not in stderr.replace("history.csv", "")
    assert len(stderr.splitlines()) < 4
    return stderr


def test_loss_history_passed_as_predictions_suggests_history(tmp_path, series):
    pickled = tmp_path / "loss_history.npy"
    np.save(pickled, {"train": [0.5, 0.3], "val": [0.6, 0.4]}, allow_pickle=True)
    csv = tmp_path / "history.csv"
    pd.DataFrame({"epoch": [1, 2], "train_loss": [0.5, 0.3], "val_loss": [0.6, 0.4]}).to_csv(csv, index=False)
    for history in (pickled, csv):
        assert str(history) in _history_error(history, "--out", tmp_path / "out")
    # beside a series: named explicitly, or by a glob
    (series / "history.csv").write_bytes(csv.read_bytes())
    _history_error(series / "bef_1.csv", series / "history.csv", "--out", tmp_path / "out")
    _history_error(f"{series}/*.csv", "--out", tmp_path / "out")
    assert not (tmp_path / "out").exists()
    # a directory uses it by itself
    code, stdout, stderr = run("assess", series, "--out", tmp_path / "out", "--renormalize", "--no-figures")
    assert code == 0 and f"training history: {series / 'history.csv'}" in stdout


def test_the_authors_loss_history_passed_as_predictions(author_predictions):
    stderr = _history_error(author_predictions / "MNIST_PRED" / "loss_history.npy", "--out", "unused")
    assert "--history loss_history.npy" in stderr


def test_calibrators_and_bootstrap_options(tmp_path):
    """--calibrators fits each method on the validation data (one row per calibrator in every
    table); --bootstrap sets the resamples behind the intervals, 0 leaves them out."""
    rng = np.random.default_rng(5)
    labels, val_labels = np.arange(300) % 4, np.arange(200) % 4
    logits = 3 * (rng.normal(size=(300, 4)) + 2.0 * np.eye(4)[labels])  # overconfident
    val_logits = 3 * (rng.normal(size=(200, 4)) + 2.0 * np.eye(4)[val_labels])
    src = tmp_path / "model.npz"
    np.savez(src, logits=logits, labels=labels, val_logits=val_logits, val_labels=val_labels)
    out = tmp_path / "out"
    code, stdout, stderr = run(
        "assess", src, "--out", out, "--no-figures", "--calibrators", "temperature,histogram", "--bootstrap", 50
    )
    assert code == 0, stderr
    scores = pd.read_csv(out / "scores.csv")
    assert set(scores["calibrator"]) == {"none", "temperature", "histogram"}
    test = scores[scores["split"] == "test"].set_index("calibrator")
    assert (test["ece_lo"] <= test["ece_hi"]).all() and test.at["none", "ece"] > test.at["temperature", "ece"]
    assert set(pd.read_csv(out / "calibration.csv")["calibrator"]) == {"temperature", "histogram"}
    assert "histogram" in stdout and "bootstrap interval" in stdout  # the last epoch of every calibrator
    code, _, stderr = run("assess", src, "--out", tmp_path / "none", "--no-figures", "--bootstrap", 0)
    assert code == 0, stderr
    assert "ece_lo" not in pd.read_csv(tmp_path / "none" / "scores.csv").columns
    code, _, stderr = run("assess", src, "--out", tmp_path / "bad", "--calibrators", "platt")
    assert code == 2 and "unknown calibrator platt; choose from temperature, vector" in stderr
    assert len(stderr.strip().splitlines()) <= 3  # a short usage error, not the whole usage


def _in_a_pty(args, env) -> tuple[int, str]:
    """Run ``python -m trustcal ARGS`` with stderr on a pseudo-terminal that reports no size
    (as a terminal of some CI runners and containers does); (exit code, what the terminal showed)."""
    import os
    import pty

    master, slave = pty.openpty()  # a fresh pty: 0 rows × 0 columns
    proc = subprocess.Popen(
        [sys.executable, "-m", "trustcal", *map(str, args)], stdout=subprocess.DEVNULL, stderr=slave, env=env
    )
    os.close(slave)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    return proc.wait(timeout=120), shown.decode(errors="replace")


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals (the pty module) are POSIX only")
def test_progress_on_a_terminal_without_a_size(series, tmp_path):
    """Every phase, the computing one included, shows a bar on a terminal that reports no size (no
    COLUMNS, no TERM), and a last line gives the time; --quiet shows nothing."""
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "TERM")}
    code, shown = _in_a_pty(["assess", series, "--out", tmp_path / "out", "--renormalize", "--no-figures"], env)
    assert code == 0, shown
    for phase in ("reading", "assessing"):
        assert re.search(rf"{phase}: 100%.*\| 2/2 ", shown), (phase, shown)
    assert re.search(r"^assessed 2 files in \d+\.\d s\r?$", shown, re.M), shown
    code, shown = _in_a_pty(["assess", series, "--out", tmp_path / "out", "--renormalize", "--quiet"], env)
    assert code == 0 and "assess" not in shown and "warning [renormalized]" in shown


def long_work(monkeypatch, readings: int) -> None:
    """A clock that ticks a second per reading (up to ``readings``) stands for long work: lines after 1 s, one a
    second at most, and none for an item that takes long (that is another test)."""
    ticks = iter(range(readings))
    monkeypatch.setattr(progress.time, "monotonic", lambda: float(next(ticks)))
    monkeypatch.setattr(progress, "PLAIN_AFTER", 1.0)
    monkeypatch.setattr(progress, "PLAIN_EVERY", 1.0)
    monkeypatch.setattr(progress, "BEAT_EVERY", float("inf"))


def test_progress_off_a_terminal_is_plain_lines_for_long_work(series, tmp_path, monkeypatch):
    """Off a terminal (a log file): nothing for short work; for long work, plain lines per phase (no bar
    redrawn with \\r) and the final timing. A clock that ticks one second per reading stands for long work."""
    code, _, stderr = run("assess", series, "--out", tmp_path / "out", "--renormalize", "--no-figures")
    assert code == 0 and "assess" not in stderr and "\r" not in stderr  # short: only the warning
    long_work(monkeypatch, 1000)
    code, stdout, stderr = run("assess", series, "--out", tmp_path / "out", "--renormalize", "--no-figures")
    assert code == 0 and "\r" not in stderr and "assessing" not in stdout
    lines = stderr.splitlines()
    # each phase: what is done so far at each tick, then its total
    for phase, unit in (("reading", "files"), ("assessing", "epochs")):
        i = lines.index(f"{phase}: 0/2 {unit}, 1.0 s")
        assert lines[i + 1 : i + 3] == [
            f"{phase}: 1/2 {unit}, 2.0 s, about 2.0 s left",
            f"{phase}: 2 {unit} in 3.0 s",
        ], stderr
    warning = next(i for i, line in enumerate(lines) if line.startswith("warning [renormalized]"))
    assert re.fullmatch(r"assessed 2 files in \d+\.0 s", lines[warning - 1]), stderr  # then the warning
    code, stdout, stderr = run("assess", series, "--out", tmp_path / "out", "--renormalize", "--no-figures", "--quiet")
    assert code == 0 and stderr.startswith("warning [renormalized]") and "assess" not in stderr


@pytest.fixture
def long_series(tmp_path):
    """Six epochs: enough for trustcal assess to share the epochs out over forked workers (two cores)."""
    d = tmp_path / "long"
    d.mkdir()
    for epoch in range(1, 7):
        write_preds(d / f"epoch{epoch}.csv", seed=epoch)
    return d


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals (the pty module) are POSIX only")
def test_every_phase_of_a_series_shows_its_progress_on_a_terminal(long_series, tmp_path):
    """A series assessed with its epochs in forked workers: a bar per phase (reading, assessing, figures),
    each reaching its total, and the final timing."""
    import os

    code, shown = _in_a_pty(["assess", long_series, "--out", tmp_path / "out", "--bootstrap", 20], dict(os.environ))
    assert code == 0, shown
    figures = len(list((tmp_path / "out" / "figures").iterdir()))
    for phase, total in (("reading", 6), ("assessing", 6), ("figures", figures)):
        assert re.search(rf"{phase}: 100%.*\| {total}/{total} ", shown), (phase, shown)
    assert re.search(r"^assessed 6 files in \d+\.\d s\r?$", shown, re.M), shown


def test_every_phase_of_a_series_says_how_far_it_is_off_a_terminal(long_series, tmp_path, monkeypatch):
    """Off a terminal, with a clock that ticks a second per look: plain lines per phase, the epochs
    (assessed in forked workers) and the figures (drawn in forked workers) counted one at a time."""
    long_work(monkeypatch, 10_000)
    code, _, stderr = run("assess", long_series, "--out", tmp_path / "out", "--bootstrap", 20)
    assert code == 0 and "\r" not in stderr, stderr
    figures = len(list((tmp_path / "out" / "figures").iterdir()))
    for phase, unit, total in (("reading", "files", 6), ("assessing", "epochs", 6), ("figures", "figures", figures)):
        said = [line for line in stderr.splitlines() if line.startswith(f"{phase}: ")]
        # a line per item as it is reached (the clock ticks at least a second between two), then the total
        assert [re.match(rf"{phase}: (\d+)/{total} {unit}, ", line).group(1) for line in said[:-1]] == [
            str(i) for i in range(total)
        ], stderr
        assert re.fullmatch(rf"{phase}: {total} {unit} in \d+\.0 s", said[-1]), stderr


def test_an_item_that_takes_long_gives_a_line_every_beat_off_a_terminal(monkeypatch):
    """Off a terminal, one item that takes long (a file of a million rows is one item of each phase): a line at
    least every BEAT_EVERY seconds while it is worked on, saying how long so far, then the phase's total."""
    monkeypatch.setattr(progress, "BEAT_EVERY", 0.25)
    stream = io.StringIO()
    for _ in progress.ShowProgress(stream)(["big"], "assessing", "epoch"):
        time.sleep(2.0)
    lines = stream.getvalue().splitlines()
    said = [re.fullmatch(r"assessing: 0/1 epochs, (\d+\.\d) s", line) for line in lines[:-1]]
    assert all(said) and len(said) >= 3, lines
    seconds = [float(m.group(1)) for m in said]
    assert seconds == sorted(seconds) and seconds[0] >= 0.2, lines  # the first after a beat, then in order
    last = re.fullmatch(r"assessing: 1 epoch in (\d+\.\d) s", lines[-1])
    assert last and float(last.group(1)) >= 2.0 and seconds[-1] <= float(last.group(1)), lines


def test_one_large_file_says_how_far_its_assessment_is_while_it_runs(tmp_path, monkeypatch):
    """trustcal assess on one file whose tables take a few beats (20,000 rows, the default bootstrap): lines
    while its one epoch is assessed, none of them on stdout."""
    monkeypatch.setattr(progress, "BEAT_EVERY", 0.3)
    rng = np.random.default_rng(0)
    probs = softmax(rng.normal(0, 2, (20_000, 10)))
    big = tmp_path / "big.npz"
    np.savez(big, probs=probs, labels=rng.integers(0, 10, 20_000))
    code, stdout, stderr = run("assess", big, "--out", tmp_path / "out", "--no-figures")
    assert code == 0 and "assessing" not in stdout, stderr
    beats = [line for line in stderr.splitlines() if line.startswith("assessing: ")]
    assert len(beats) >= 2 and all(re.fullmatch(r"assessing: 0/1 epochs, \d+\.\d s", b) for b in beats[:-1]), stderr
    assert re.fullmatch(r"assessing: 1 epoch in \d+\.\d s", beats[-1]), stderr


def test_durations_read_as_a_person_would_say_them():
    assert [progress.duration(s) for s in (4.24, 59.96, 192, 3725)] == ["4.2 s", "60.0 s", "3 min 12 s", "1 h 02 min"]


def test_the_summary_names_what_each_missing_figure_needs(series, tmp_path):
    """A series without a training history or validation data: the figures of the chosen epochs need the
    history, the temperature figure validation data; each line says which."""
    code, stdout, stderr = run("assess", series, "--out", tmp_path / "out", "--renormalize", "--bootstrap", 0)
    assert code == 0, stderr
    lines = [line for line in stdout.splitlines() if line.startswith("figures not drawn")]
    assert lines == [
        "figures not drawn (need a training history): loss_curves, reliability, trust_spectrum, trust_density, "
        "selective_prediction, smooth_reliability",
        "figures not drawn (need validation data): calibration_metrics",
    ]
    drawn = {p.stem for p in (tmp_path / "out" / "figures").iterdir()}
    assert drawn == {
        "trust_grid",
        "geometric_metrics",
        "network_opinion",
        "cluster_sweep",
        "opinion_triangle",
        "calibration_refinement",
    }


# --------------------------------------------------------------------------- settings and wording


def test_the_default_arguments_are_the_librarys_default_settings(tmp_path):
    """settings_from_args builds the one Settings of the arguments; the defaults are Settings()'s."""
    from trustcal.measures.bootstrap import BootstrapParams
    from trustcal.settings import CalibrationSettings, Settings

    args = cli.build_parser().parse_args(["assess", str(tmp_path), "--out", str(tmp_path / "o")])
    assert cli.settings_from_args(args) == Settings()
    args = cli.build_parser().parse_args(
        ["assess", str(tmp_path), "--out", "o", "--clusters", "7", "--ece-bins", "5", "20", "--bootstrap", "0"]
        + ["--calibrators", "isotonic,temperature", "--t-min", "0.5", "--t-max", "2", "--sweep-epochs", "3"]
    )
    s = cli.settings_from_args(args)
    assert s.trust.clusters == 7 and s.metrics.ece_bins == (5, 20) and s.bootstrap is None
    assert s.sweep.epochs == (3,) and s.calibration == CalibrationSettings(("isotonic", "temperature"), 0.5, 2.0)
    args.bootstrap = 30
    assert cli.settings_from_args(args).bootstrap == BootstrapParams(resamples=30)


@pytest.mark.parametrize(
    ("message", "options", "expected"),
    [
        ('Fix: pass kind="logits" to confirm', ("kind",), "Fix: pass --kind logits to confirm"),
        ("or pass renormalize=True to divide", ("renormalize",), "or pass --renormalize to divide"),
        ("(renormalize=True).", ("renormalize",), "(--renormalize)."),
        ("give a labels file (labels=FILE).", ("labels",), "give a labels file (--labels FILE)."),
        ("name_pattern='x(' is not valid", ("name_pattern",), "--name-pattern 'x(' is not valid"),
        ("Fix: widen t_min/t_max.", ("t_min", "t_max"), "Fix: widen --t-min/--t-max."),
        ("ask for none (calibrators=None: …)", ("calibrators",), "ask for none (no --calibrators: …)"),
        # only the settings listed are rewritten, and a bare name only when it has an underscore
        ("labels: 3 labels, kind of calibrators", ("labels", "calibrators"), "labels: 3 labels, kind of calibrators"),
        ('kind="logits", calibration.t_min', (), 'kind="logits", calibration.t_min'),
        ("calibration.t_min or t_min_x", ("t_min",), "calibration.t_min or t_min_x"),
    ],
)
def test_library_messages_in_the_command_lines_words(message, options, expected):
    assert cli.cli_words(message, options) == expected


def test_a_warning_names_the_setting_in_the_library_and_the_flag_on_the_command_line(tmp_path):
    """The library's warning names kind="logits" (and lists it); stderr, warnings.txt and --json name --kind."""
    from trustcal.assessment import assess_files
    from trustcal.settings import Settings

    rng = np.random.default_rng(0)
    path = tmp_path / "raw.csv"
    labels = np.arange(60) % 3
    logits = 3 * (rng.normal(size=(60, 3)) + 2 * np.eye(3)[labels])  # logits of a model right most of the time
    pd.DataFrame(logits, columns=["p0", "p1", "p2"]).assign(label=labels).to_csv(path, index=False)
    (w,) = assess_files([path], settings=Settings(sweep=None, bootstrap=None)).warnings
    assert w.code == "logits_as_probabilities" and w.options == ("kind",)
    assert 'pass kind="logits" to confirm' in w.message and "--" not in w.message
    code, stdout, stderr = run("assess", path, "--out", tmp_path / "out", "--no-figures", "--json")
    assert code == 0, stderr
    said = [" ".join(stderr.split()), (tmp_path / "out" / "warnings.txt").read_text()]
    said.append(json.loads(stdout)["warnings"][0]["message"])
    for text in said:
        assert "pass --kind logits to confirm" in text and "kind=" not in text, text


def test_an_error_names_the_setting_in_the_library_and_the_flag_on_the_command_line(tmp_path):
    from trustcal.assessment import assess_files
    from trustcal.predictions import ProbabilityError

    path = tmp_path / "off.csv"
    path.write_text("p0,p1,label\n0.2,0.7,1\n0.5,0.5,0\n")
    with pytest.raises(ProbabilityError) as info:
        assess_files([path])
    assert info.value.options == ("renormalize",) and "pass renormalize=True to divide" in str(info.value)
    code, _, stderr = run("assess", path, "--out", tmp_path / "out")
    assert code == 2 and "pass --renormalize to divide" in stderr and "renormalize=" not in stderr
