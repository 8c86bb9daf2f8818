"""The one exception the user sees without a traceback, and where a YAML file went wrong."""


class TrustcalError(Exception):
    """An error whose message is meant for the user: it names the file and the fix.

    ``rerun``: the workflow rule that writes the file at fault, where writing it again is the fix; the
    message names it in the library's words, and the workflow's jobs add the command that reruns it
    (workflow/scripts/_common.py), as ``trustcal assess`` adds its own wording to its errors.
    """

    def __init__(self, *args, rerun: str | None = None):
        super().__init__(*args)
        self.rerun = rerun


def yaml_problem(exc: Exception) -> str:
    """Where and what a YAML parser's error (``yaml.MarkedYAMLError``) says, counted as editors count,
    to follow "not valid YAML": ``at line 3, column 9: expected ',' or ']', but got ':' (while parsing a
    flow sequence at line 2, column 8)``; its first line in brackets when the parser gave no position."""
    mark, problem = getattr(exc, "problem_mark", None), getattr(exc, "problem", None)
    if mark is None or not problem:
        return f"({(str(exc).strip().splitlines() or ['no detail'])[0]})"
    text = f"at line {mark.line + 1}, column {mark.column + 1}: {problem}"
    context, where = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    if context:
        at = f" at line {where.line + 1}, column {where.column + 1}" if where is not None and where != mark else ""
        text += f" ({context}{at})"
    return text


def foreign_package(workflow_dir, running) -> str | None:
    """Why a workflow in ``workflow_dir`` must not go on with the trustcal package imported from ``running``
    (a directory), or None where it is the workflow's own. One message for the workflow's config check
    (rules/package.smk) and its jobs (scripts/_common.py): the package was imported before the workflow's."""
    from pathlib import Path

    own, running = Path(workflow_dir) / "trustcal", Path(running)
    if running.resolve() == own.resolve():
        return None
    return (
        f"this workflow ({workflow_dir}) would run the trustcal package of {running}, imported before its own "
        f"({own}). Fix: run the Snakefile of {running.parents[1]}, or install this checkout "
        f"(pip install -e {Path(workflow_dir).parent}) and import nothing of trustcal before the workflow loads."
    )
