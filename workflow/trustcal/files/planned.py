"""The files a run of the workflow is about to write, found from its rules' file patterns and its
configuration, not from Snakemake's job graph (whose objects are Snakemake's own, and change between
releases): the workflow's `onstart` checks that each can be written (trustcal.files.check_writable), so
that a read-only or full folder stops the run before its first job.

A job is about to run when one of its outputs is missing: every job of the configured runs (each rule's
patterns with every value of their wildcards) that lacks an output is counted, and writes its outputs, its
log and its benchmark. A job whose outputs all exist but are out of date (a changed setting or code) is not
counted; if it cannot write, it stops with the same one line when it tries.
"""

from __future__ import annotations

import itertools
import os
import string
from collections.abc import Callable, Iterable, Mapping, Sequence

# The values of a wildcard, given the values the pattern's other wildcards already have
# (e.g. a run's seeds, given its dataset): a list, or a function of the values assigned so far.
Values = Mapping[str, Sequence[str] | Callable[[Mapping[str, str]], Sequence[str]]]


def wildcards(pattern: str) -> list[str]:
    """The wildcards of a Snakemake file pattern (``results/{dataset}/seed{seed}/x.csv``), in order, once each."""
    names = [field for _, field, _, _ in string.Formatter().parse(pattern) if field]
    return list(dict.fromkeys(names))


def _assignments(names: Sequence[str], values: Values, first: Sequence[str] = ()) -> Iterable[dict[str, str]]:
    """Every assignment of ``names`` (the ones of ``first`` first, then the others in order): each a dict;
    none when a name has no values (e.g. the seeds of a dataset that is no run)."""
    order = [n for n in first if n in names] + [n for n in names if n not in first]

    def extend(assigned: dict[str, str], rest: list[str]) -> Iterable[dict[str, str]]:
        if not rest:
            yield dict(assigned)
            return
        name, *others = rest
        choices = values.get(name, ())
        choices = choices(assigned) if callable(choices) else choices
        for value in choices:
            assigned[name] = str(value)
            yield from extend(assigned, others)
        assigned.pop(name, None)

    yield from extend({}, order)


def planned_writes(
    rules: Iterable[tuple[Sequence[str], Sequence[str], Values]],
    first: Sequence[str] = ("dataset",),
    exists: Callable[[str], bool] = os.path.exists,
) -> list[str]:
    """The files written by the jobs about to run, in the order of ``rules`` (each rule's jobs in the order
    of its values, each job's files as given), once each.

    ``rules``: for each rule, its output patterns, the patterns of every file its job writes (outputs, log,
    benchmark), and the values of their wildcards. A job is an assignment of the wildcards (those of
    ``first`` first); it is about to run when one of its outputs does not exist (``exists``). A rule without
    outputs, or with a wildcard without values, has no job here.
    """
    planned: dict[str, None] = {}
    for outputs, writes, values in rules:
        outputs, writes = [str(p) for p in outputs], [str(p) for p in writes]
        if not outputs:
            continue
        names = list(dict.fromkeys(itertools.chain.from_iterable(wildcards(p) for p in [*outputs, *writes])))
        for job in _assignments(names, values, first):
            if all(exists(p.format(**job)) for p in outputs):
                continue
            for pattern in writes:
                planned[pattern.format(**job)] = None
    return list(planned)
