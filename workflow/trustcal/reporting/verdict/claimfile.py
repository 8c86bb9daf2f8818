"""Claims as data: the :class:`Claim` record and the YAML claims file it is read from (docs/claims.md).

A claims file is a YAML list of claims (or a mapping with a ``claims:`` list). Each claim names a
measure of :data:`MEASURES` (the functions of :mod:`trustcal.reporting.verdict.runs`) with its
arguments, a decision ``kind`` and its ``target``/``tolerance``. The paper's own claims are the file
``paper_claims.yaml`` beside this module; a user's file is read by the same :func:`load_claims`.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from trustcal.errors import TrustcalError, yaml_problem
from trustcal.registry import did_you_mean
from trustcal.reporting.verdict import runs as _runs
from trustcal.reporting.verdict.runs import AFTER, BEFORE, COMPONENTS, Run

MASS_TOLERANCE = 0.05  # opinion masses read off the paper's figures
CLAIM_KINDS = ("near", "at_most", "at_least")
PAPER_CLAIMS_FILE = Path(__file__).with_name("paper_claims.yaml")


@dataclass(frozen=True)
class Claim:
    id: str
    dataset: str  # "" in a user's file without datasets: the one series judged
    section: str
    quote: str  # the paper's words
    text: str  # the claim in ours
    paper: str  # the paper's number or direction as stated
    measure_text: str  # what we compute, in words
    measure: Callable[[Run], np.ndarray]
    kind: str = "near"  # near (target ± tolerance), at_most (≤ target), at_least (≥ target)
    target: float = math.nan
    tolerance: float = MASS_TOLERANCE
    min_epochs: int = 1  # fewer epochs in the run: not comparable
    versus: str | None = None  # another dataset: the value is this dataset's minus that one's
    requires: Callable[[pd.DataFrame], bool] | None = None  # an extra per-seed condition on the history
    requires_text: str = ""
    from_history: bool = False  # a claim about the losses: no test-set resampling
    uses_history: bool = False  # the measure reads the training history
    not_comparable: str | None = None  # a reason that holds whatever the numbers
    also: tuple[str, ...] = ()  # other sentences of the paper (abstract, conclusion) this claim tests
    paired: bool = False  # compares the two calibration states: the paired interval with seeds (docs/method.md §12)
    general: str = ""  # the id of the general claim (about training and calibration, any run) this one is a case of
    general_text: str = ""  # that general claim in a sentence, without a dataset ("" : given by another claim)

    def __post_init__(self):
        if self.from_history:
            object.__setattr__(self, "uses_history", True)

    @property
    def band(self) -> tuple[float, float]:
        if self.kind == "near":
            return self.target - self.tolerance, self.target + self.tolerance
        if self.kind == "at_most":
            return -math.inf, self.target
        if self.kind == "at_least":
            return self.target, math.inf
        raise ValueError(f"unknown claim kind {self.kind!r}")


class ClaimsFileError(TrustcalError):
    """A claims file that cannot be read: one line naming the file, the claim, the field and the fix."""


@dataclass(frozen=True)
class Measure:
    """A named measure of a claims file: ``factory(**arguments)`` gives the function of a :class:`Run`
    (``factory`` is that function itself when the measure takes no arguments)."""

    factory: Callable
    takes_arguments: bool = True
    uses_history: bool = False


MEASURES: dict[str, Measure] = {
    "level": Measure(_runs.level),
    "label_peak": Measure(_runs.label_peak),
    "spread": Measure(_runs.spread),
    "change": Measure(_runs.change),
    "start_gap": Measure(_runs.start_gap),
    "mean_gap": Measure(_runs.mean_gap),
    "lowest_difference": Measure(_runs.lowest_difference),
    "highest_difference": Measure(_runs.highest_difference),
    "stability_gain": Measure(_runs.stability_gain),
    "overfitting_onset": Measure(_runs.overfitting_onset, takes_arguments=False, uses_history=True),
    "final_gap": Measure(_runs.final_gap, takes_arguments=False, uses_history=True),
    "decline_after_onset": Measure(_runs.decline_after_onset, takes_arguments=False, uses_history=True),
}
"""The measures a claims file can name (:mod:`trustcal.reporting.verdict.runs`)."""

CONDITIONS: dict[str, Callable[[pd.DataFrame], bool]] = {
    "gap_grows_after_minimum": _runs.gap_grows_after_minimum,
}
"""The per-seed conditions on the training history a claim can ``require``."""

STATES = {"before": BEFORE, "after": AFTER}
FIELDS = (
    "id",
    "dataset",
    "section",
    "quote",
    "text",
    "paper",
    "measure",
    "measure_text",
    "kind",
    "target",
    "tolerance",
    "min_epochs",
    "versus",
    "requires",
    "requires_text",
    "from_history",
    "not_comparable",
    "also",
    "paired",
    "general",
)
REQUIRED = ("id", "text", "measure", "kind")
GENERAL_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
# what every claim naming one general claim must share: the decision (the measure's epoch windows and
# min_epochs may differ, each dataset's timing; the general claim takes the first claim's)
GENERAL_SHARED = ("kind", "target", "tolerance", "paired", "from_history", "requires")


def _measure(spec, fail) -> tuple[Callable, str, bool]:
    """(function of a Run, its description, reads the history) of a ``measure:`` entry."""
    if isinstance(spec, str):
        name, args = spec, {}
    elif isinstance(spec, dict) and len(spec) == 1:
        name, args = next(iter(spec.items()))
        args = {} if args is None else args
    else:
        fail(
            "measure", "give one measure name, alone or with its arguments: {level: {component: belief, state: after}}"
        )
    if name not in MEASURES:
        fail("measure", f"unknown measure {name!r}{did_you_mean(name, MEASURES)}; known: {', '.join(MEASURES)}")
    m = MEASURES[name]
    if not isinstance(args, dict):
        fail("measure", f"the arguments of {name} must be a mapping, e.g. {{{name}: {{component: belief}}}}")
    if not m.takes_arguments:
        if args:
            fail("measure", f"{name} takes no arguments; write `measure: {name}`")
        return m.factory, name, m.uses_history
    params = inspect.signature(m.factory).parameters
    for key in args:
        if key not in params:
            fail(
                "measure",
                f"{name} has no argument {key!r}{did_you_mean(key, params)}; its arguments: {', '.join(params)}",
            )
    missing = [p for p, v in params.items() if v.default is inspect.Parameter.empty and p not in args]
    if missing:
        fail("measure", f"{name} needs {', '.join(missing)}; its arguments: {', '.join(params)}")
    values = {}
    for key, value in args.items():
        if key == "component":
            if value not in COMPONENTS:
                fail("measure", f"component {value!r} of {name}: use one of {', '.join(COMPONENTS)}")
        elif key == "state":
            if value not in STATES:
                fail("measure", f"state {value!r} of {name}: use before or after (calibration)")
            value = STATES[value]
        elif value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            fail("measure", f"{key} of {name} is {value!r}: give an epoch number (a whole number ≥ 1)")
        values[key] = value
    words = ", ".join(f"{k}={v}" for k, v in args.items())
    return m.factory(**values), f"{name}({words})", m.uses_history


def _number(value, field, fail) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        fail(field, f"{value!r} is not a number; write e.g. `{field}: 0.05`")
    return float(value)


def claim_from_dict(entry: dict, where: str = "claims file") -> Claim:
    """One :class:`Claim` from a claims-file entry; :class:`ClaimsFileError` names ``where``, the claim
    and the field of anything wrong."""
    cid = entry.get("id") if isinstance(entry, dict) else None

    def fail(field, fix):
        raise ClaimsFileError(f"{where}: claim {cid or '?'}: field {field}: {fix}")

    if not isinstance(entry, dict):
        fail("-", "each claim is a mapping of fields (id:, text:, measure:, kind:, …)")
    for key in entry:
        if key not in FIELDS:
            fail(key, f"unknown field{did_you_mean(key, FIELDS)}; fields: {', '.join(FIELDS)}")
    for key in REQUIRED:
        if entry.get(key) in (None, ""):
            fail(key, "missing; every claim needs " + ", ".join(REQUIRED))
    if not isinstance(cid, str):
        fail("id", f"{cid!r}: give a name (letters, digits, _)")
    kind = entry["kind"]
    if kind not in CLAIM_KINDS:
        fail("kind", f"{kind!r}: use {', '.join(CLAIM_KINDS)}")
    measure, described, uses_history = _measure(entry["measure"], fail)
    target = entry.get("target")
    if target is None:
        if kind != "near" and entry.get("not_comparable") is None:
            fail("target", f"missing; {kind} needs the bound, e.g. `target: 0`")
        target = math.nan
    target = _number(target, "target", fail) if not (isinstance(target, float) and math.isnan(target)) else target
    if kind == "near" and math.isnan(target) and entry.get("not_comparable") is None:
        fail("target", "missing; near needs the value, e.g. `target: 0.65`")
    tolerance = _number(entry.get("tolerance", MASS_TOLERANCE), "tolerance", fail)
    if tolerance < 0:
        fail("tolerance", f"{tolerance:g} is negative; give a half-width ≥ 0")
    min_epochs = entry.get("min_epochs", 1)
    if isinstance(min_epochs, bool) or not isinstance(min_epochs, int) or min_epochs < 1:
        fail("min_epochs", f"{min_epochs!r}: give a whole number of epochs ≥ 1")
    requires = entry.get("requires")
    if requires is not None and requires not in CONDITIONS:
        fail(
            "requires",
            f"unknown condition {requires!r}{did_you_mean(requires, CONDITIONS)}; known: {', '.join(CONDITIONS)}",
        )
    also = entry.get("also", ())
    if isinstance(also, str):
        also = (also,)
    if not isinstance(also, (list, tuple)) or not all(isinstance(a, str) for a in also):
        fail("also", "give a list of sentences")
    for flag in ("from_history", "paired"):
        if not isinstance(entry.get(flag, False), bool):
            fail(flag, f"{entry[flag]!r}: write true or false")
    texts = {}
    for key in ("dataset", "section", "quote", "paper", "measure_text", "versus", "requires_text", "not_comparable"):
        value = entry.get(key)
        if value is not None and not isinstance(value, str):
            fail(key, f"{value!r}: write it as text (in quotes)")
        texts[key] = value
    if texts["versus"] is not None and not texts["dataset"]:
        fail("versus", "a comparison with another dataset needs the claim's own `dataset:`")
    general, general_text = _general(entry.get("general"), fail)
    if general:
        if texts["versus"] is not None:
            fail("general", "a general claim is judged on each run alone; remove `general:` or `versus:`")
        if texts["not_comparable"] is not None:
            fail("general", "a claim that is not comparable cannot stand for a general one; remove `general:`")
        if general == cid:
            fail("general", f"{general!r} is this claim's own id; give the general claim an id of its own")
    return Claim(
        id=cid,
        dataset=texts["dataset"] or "",
        section=texts["section"] or "",
        quote=texts["quote"] or "",
        text=entry["text"],
        paper=texts["paper"] if texts["paper"] is not None else "",
        measure_text=texts["measure_text"] or described,
        measure=measure,
        kind=kind,
        target=target,
        tolerance=tolerance,
        min_epochs=min_epochs,
        versus=texts["versus"],
        requires=CONDITIONS[requires] if requires is not None else None,
        requires_text=texts["requires_text"] or "",
        from_history=entry.get("from_history", False),
        uses_history=uses_history,
        not_comparable=texts["not_comparable"],
        also=tuple(also),
        paired=entry.get("paired", False),
        general=general,
        general_text=general_text,
    )


def _general(value, fail) -> tuple[str, str]:
    """(id, text) of a ``general:`` entry: an id, or ``{id: …, text: …}``; ("", "") when absent."""
    if value is None:
        return "", ""
    example = "write `general: trust_higher_after` or `general: {id: trust_higher_after, text: '…'}`"
    if isinstance(value, str):
        gid, text = value, ""
    elif isinstance(value, dict):
        unknown = sorted(set(value) - {"id", "text"})
        if unknown:
            fail("general", f"unknown key(s) {', '.join(map(str, unknown))}; {example}")
        gid, text = value.get("id"), value.get("text", "")
        if not isinstance(text, str):
            fail("general", f"text {text!r}: write it as text (in quotes)")
    else:
        fail("general", f"{value!r}: {example}")
    if not isinstance(gid, str) or not GENERAL_ID.match(gid):
        fail("general", f"id {gid!r}: give a name of letters, digits and _ (starting with a letter); {example}")
    return gid, text.strip()


def _measure_key(spec) -> tuple[str, str | None, str | None]:
    """(measure name, component, state) of a claims-file ``measure:`` entry already checked by :func:`_measure`."""
    if isinstance(spec, str):
        return spec, None, None
    name, args = next(iter(spec.items()))
    args = args or {}
    return name, args.get("component"), args.get("state")


def _key_text(key: tuple) -> str:
    name, *args = key
    args = [a for a in args if a]
    return f"{name} ({', '.join(args)})" if args else name


def _check_general(path, entries: list, claims: list[Claim]) -> None:
    """Every claim naming one general claim measures the same thing with the same decision, the general claim's
    text is given, and its id is no claim's id (:class:`ClaimsFileError` naming the file, claim, field and fix)."""
    ids = {c.id for c in claims}
    first: dict[str, tuple[Claim, tuple]] = {}
    texts: dict[str, str] = {}
    for entry, c in zip(entries, claims, strict=True):
        if not c.general:
            continue

        def fail(fix, c=c):
            raise ClaimsFileError(f"{path}: claim {c.id}: field general: {fix}")

        if c.general in ids:
            fail(f"{c.general!r} is the id of a claim of this file; give the general claim an id of its own")
        key = _measure_key(entry["measure"])
        if c.general not in first:
            first[c.general] = (c, key)
        else:
            head, head_key = first[c.general]
            if key != head_key:
                fail(
                    f"{c.general} is measured as {_key_text(head_key)} by {head.id}, here as {_key_text(key)}: every "
                    "claim of one general claim measures the same thing; name another general claim"
                )
            for f in GENERAL_SHARED:
                mine, theirs = getattr(c, f), getattr(head, f)
                same = mine == theirs or (
                    isinstance(mine, float) and isinstance(theirs, float) and math.isnan(mine) and math.isnan(theirs)
                )
                if not same:
                    fail(
                        f"{c.general} is decided with {f} {theirs!r} by {head.id}, here with {mine!r}: every claim "
                        "of one general claim is decided alike; make them agree or name another general claim"
                    )
        if c.general_text:
            if c.general in texts and texts[c.general] != c.general_text:
                fail(f"{c.general} has another text on an earlier claim; give its text once")
            texts[c.general] = c.general_text
    for gid, (c, _) in first.items():
        if gid not in texts:
            raise ClaimsFileError(
                f"{path}: claim {c.id}: field general: the general claim {gid} has no text; write "
                f"`general: {{id: {gid}, text: '…'}}` (the claim without a dataset) on one of its claims"
            )


def load_claims(path) -> tuple[Claim, ...]:
    """The claims of a YAML claims file (docs/claims.md), in file order.

    Raises :class:`ClaimsFileError` (one line: the file, the claim id, the field and the fix) for a
    file that is missing, not YAML, or has a claim that is not valid.
    """
    import yaml

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ClaimsFileError(f"{path}: claims file not found; check the path") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ClaimsFileError(f"{path}: cannot read the claims file ({e}); give a UTF-8 YAML file") from None
    try:
        # The safe loader: plain YAML only, a tag that would build a Python object (!!python/…) is refused.
        doc = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # libyaml: ~10× faster
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or "invalid YAML"
        if isinstance(e, yaml.constructor.ConstructorError):
            raise ClaimsFileError(
                f"{path}: a YAML tag that plain YAML does not have{at} ({problem}); claims files are plain YAML, "
                "read without building Python objects: remove the tag"
            ) from None
        raise ClaimsFileError(f"{path}: not valid YAML {yaml_problem(e)}; fix the syntax there") from None
    if isinstance(doc, dict) and set(doc) == {"claims"}:
        doc = doc["claims"]
    if not isinstance(doc, list) or not doc:
        raise ClaimsFileError(f"{path}: no claims; write a YAML list of claims (`- id: …`) or `claims:` with that list")
    claims = [claim_from_dict(entry, str(path)) for entry in doc]
    seen: set[str] = set()
    for c in claims:
        if c.id in seen:
            raise ClaimsFileError(f"{path}: claim {c.id}: field id: used twice; give each claim its own id")
        seen.add(c.id)
    _check_general(path, doc, claims)
    return tuple(claims)
