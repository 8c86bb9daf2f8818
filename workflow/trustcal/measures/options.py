"""Each setting declared once: its help text, its bounds and its check, on the field of its settings dataclass.

A field of a settings dataclass (:class:`~trustcal.measures.trust.TrustParams`,
:class:`~trustcal.measures.bootstrap.BootstrapParams`, :class:`~trustcal.measures.metric_params.MetricParams`,
:class:`~trustcal.evaluation.SweepParams`, :class:`~trustcal.settings.CalibrationSettings`) is made
with :func:`setting`, which stores an :class:`Option` in the field's metadata. From the options:

- the dataclass checks its values (:func:`check_fields`, called by its ``__post_init__``);
- the command line derives its flags (:func:`trustcal.cli.build_parser`), each flag's type being the
  option's check;
- the Python API (:func:`trustcal.api.assess`) rephrases a :class:`SettingError` in its own words;
- ``tests/unit/test_options.py`` checks the configuration schema (``workflow/schemas/config.schema.yaml``)
  against them: each key's ``title`` (the help text), default, type, bounds, choices and the ``description``
  of a bound's reason (``at most 10,000: …``).
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, fields

__all__ = ["Option", "SettingError", "check_fields", "options_of", "setting"]


def _num(x) -> str:
    """A bound as written: 10000, 4294967295, 0.5."""
    return str(x) if isinstance(x, numbers.Integral) else f"{x:g}"


class SettingError(ValueError):
    """A value a setting does not allow, in one line: ``{name} {problem}``. ``problem`` alone
    (``must be ≥ 1 (got 0)``) is what the command line shows after the flag; ``expected`` and ``example``
    (``a whole number from 1 to 10000``, ``10``) are what the API's message names."""

    def __init__(self, name: str, problem: str, value, expected: str | None, example: str, message: str = ""):
        super().__init__(message or f"{name} {problem}")
        self.name, self.problem, self.value, self.expected, self.example = name, problem, value, expected, example


@dataclass(frozen=True)
class Option:
    """How one setting is written and checked.

    ``help``: the sentence of ``trustcal assess --help`` (without the default) and the schema's ``title``. ``kind``: ``int``, ``float`` or ``str``. ``low``/``high``: the bounds (``low_open``/``high_open``:
    excluded); ``cost``: why ``high`` (:mod:`trustcal.measures.limits`). ``choices``: the allowed strings
    (``pattern``: and those matching this regular expression, ``pattern_help`` in words).
    ``many``: a tuple of at least ``min_items`` such values (``comma``: written ``a,b`` on the command line, else as
    several arguments). ``key``: the configuration key, when not the field's name; ``section``: the
    configuration section, when not the dataclass's (``""``: the top level). ``flag``: the command line flag
    without its dashes, when not the group's prefix and ``key``. ``off``: a value of the command line and the
    API that turns the whole group off (``--bootstrap 0``). ``symbol``: the paper's name of the setting,
    shown after its own in messages (``weight W``). ``metavar``: the command line's placeholder;
    ``shown_default``: the default in words, where the field's default (None) does not say it.
    """

    help: str
    kind: type = int
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    cost: str = ""
    choices: tuple[str, ...] | None = None
    pattern: str | None = None  # with choices: a string that matches this regular expression is allowed too
    pattern_help: str = ""  # what such a string is, in words
    many: bool = False
    min_items: int = 1
    comma: bool = False
    key: str | None = None
    section: str | None = None
    flag: str | None = None
    off: int | None = None
    symbol: str = ""
    metavar: str | None = None
    shown_default: str | None = None

    def expected(self) -> str:
        """The values allowed, in words: ``a whole number from 1 to 10000``, ``a number in (0, 1)``, ``one of …``."""
        if self.choices is not None:
            return "one of " + ", ".join(self.choices) + (f", or {self.pattern_help}" if self.pattern else "")
        if self.kind is int:
            return f"a whole number from {_num(self.low)} to {_num(self.high)}"
        if self.low == 0 and self.high is None:
            return "a positive number" if self.low_open else "a number ≥ 0"
        return f"a number {self._range()}"

    def _range(self) -> str:
        if self.high is None:
            return f"{'>' if self.low_open else '≥'} {_num(self.low)}"
        return f"in {'(' if self.low_open else '['}{_num(self.low)}, {_num(self.high)}{')' if self.high_open else ']'}"

    def problem(self, value) -> str | None:
        """What is wrong with one value (``must be ≥ 1 (got 0)``), or None when it is allowed."""
        if self.choices is not None:
            if value in self.choices or (self.pattern and isinstance(value, str) and re.match(self.pattern, value)):
                return None
            return f"must be {self.expected()} (got {value!r})"
        if self.kind is int:
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                return f"must be a whole number from {_num(self.low)} to {_num(self.high)} (got {value!r})"
            if value < self.low:
                return f"must be ≥ {_num(self.low)} (got {value})"
            if value > self.high:
                return f"must be ≤ {_num(self.high)} (got {value})" + (f": {self.cost}" if self.cost else "")
            return None
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
            return f"must be {self.expected()} (got {value!r})"
        below = value <= self.low if self.low_open else value < self.low
        above = self.high is not None and (value >= self.high if self.high_open else value > self.high)
        return f"must be {self._range()} (got {value})" if below or above else None

    def check(self, name: str, value, default):
        """``value`` (a tuple when ``many``) when allowed, else a :class:`SettingError`."""
        label = f"{name} {self.symbol}" if self.symbol else name
        if self.many:
            if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) < self.min_items:
                shown = ", ".join(map(str, default or self.choices or ()))
                raise SettingError(
                    label,
                    f"must be {'one or more' if self.min_items else 'a sequence of'} values, e.g. ({shown}) "
                    f"(got {value!r})",
                    value,
                    self.expected(),
                    f"({shown})",
                )
            items = tuple(value)
        else:
            items = (value,)
        for item in items:
            problem = self.problem(item)
            if problem:
                raise SettingError(label, problem, value, self.expected(), repr(default))
        return tuple(value) if self.many else value


def setting(default, help: str, **option):
    """A dataclass field with ``default`` and the :class:`Option` of ``help`` and ``option`` in its metadata."""
    return field(default=default, metadata={"option": Option(help, **option)})


def options_of(cls) -> dict[str, Option]:
    """The options of ``cls``'s fields made with :func:`setting`, by field name, in the fields' order."""
    return {f.name: f.metadata["option"] for f in fields(cls) if "option" in f.metadata}


def check_fields(obj) -> None:
    """Check every field of ``obj`` that has an :class:`Option` (a :class:`SettingError` for the first
    value not allowed, named by its configuration key); sequences are stored as tuples."""
    for f in fields(obj):
        option = f.metadata.get("option")
        if option is None:
            continue
        value = getattr(obj, f.name)
        if option.many and value is None and f.default is None:
            continue  # None: the group's own default (CalibrationSettings.methods)
        checked = option.check(option.key or f.name, value, f.default)
        if checked is not value:
            object.__setattr__(obj, f.name, checked)
