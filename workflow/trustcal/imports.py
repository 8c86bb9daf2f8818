"""A class named by its import path, ``package.module:Class``: a user's network (trustcal.training.networks)
or a user's calibrator (trustcal.calibration.user), imported as the job that uses it imports it, with one
line saying what is missing and the fix."""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Callable

from trustcal.errors import TrustcalError
from trustcal.registry import did_you_mean

IMPORT_PATH = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*$")


def is_import_path(name: str) -> bool:
    """Whether ``name`` has the form ``package.module:Class``."""
    return isinstance(name, str) and IMPORT_PATH.match(name) is not None


def one_line(exc: BaseException) -> str:
    """An exception as one short line: its type and its first 300 characters."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


def import_class(path: str, what: str, error: type[TrustcalError], kind: str, is_kind: Callable[[type], bool]):
    """The class ``path`` (``package.module:Class``) names, imported; ``error`` in one line with the fix when
    the module cannot be imported, has no such attribute (naming its classes that are ``kind``, as
    ``is_kind`` tells, and the closest one) or the attribute is not a class. ``what`` is the message's
    subject ("network 'a.b:C'"); whether the class is of the kind wanted is the caller's check."""
    module_name, _, class_name = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name) and module_name[len(exc.name) :][:1] in ("", "."):
            top = module_name.split(".")[0]
            holding = f"{top}/" if "." in module_name else f"{top}.py or {top}/"  # a package, or either
            raise error(
                f"{what}: no module {exc.name} on Python's path; put the folder holding {holding} on "
                "PYTHONPATH (or install the package), or fix the import path (package.module:Class)"
            ) from None
        raise error(f"{what}: importing {module_name} failed ({one_line(exc)}); install what it imports") from None
    except Exception as exc:  # a syntax error or an exception in the module's own code
        raise error(f"{what}: importing {module_name} failed ({one_line(exc)}); fix the module") from None
    cls = getattr(module, class_name, None)
    if cls is None:
        found = sorted(
            name
            for name, obj in vars(module).items()
            if inspect.isclass(obj) and is_kind(obj) and obj.__module__ == module.__name__
        )
        where = f"its {kind} classes: {', '.join(found)}" if found else f"it defines no {kind} class"
        raise error(
            f"{what}: module {module_name} ({module.__file__}) has no {class_name}"
            f"{did_you_mean(class_name, found)} ({where}); fix the import path (package.module:Class)"
        )
    return cls
