"""Griffe extension of the documentation site (mkdocs.yml): the docstrings' reStructuredText markup as Markdown.

The docstrings are numpy-style and write cross-references as Sphinx roles (``:func:`assess```,
``:class:`~trustcal.files.TrustcalError```), which read well in ``help()`` and an editor but which
mkdocstrings' Markdown would show as they are. Before the API reference is rendered, each role becomes a
cross-reference (mkdocs-autorefs): the name is resolved in the scope of the object whose docstring holds
it, as Python would resolve it there, to the object it names (an import followed to its definition); the
link goes to that object's entry of the API reference, and where it has none (a private helper, a module
not on the page, numpy) the name stays code without a link. ``~`` shows the last part of the name only,
as in Sphinx. A literal-block marker (``text::``) becomes ``text:``, as reST prints it.

Nothing in the package depends on this file: it changes only what the site shows.
tests/workflow/test_pages.py checks that no role is left on any page.
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|data|attr|exc|obj|const):`(?P<target>[^`]+)`")
LITERAL_MARKER = re.compile(r"(?m)(?<=\S)[ \t]*::[ \t]*$")  # "text::" at the end of a line
LONE_LITERAL_MARKER = re.compile(r"(?m)^[ \t]*::[ \t]*$\n?")  # a paragraph of its own "::"


def resolve(name: str, obj: griffe.Object) -> str:
    """The full path of the object ``name`` names in the scope of ``obj`` (its definition, not an
    import of it); ``name`` itself when it cannot be resolved (a name outside the package)."""
    package = obj.package.name
    first, _, rest = name.partition(".")
    if first == package:
        path = name
    else:
        try:
            path = obj.resolve(first)
        except (griffe.NameResolutionError, griffe.AliasResolutionError, KeyError, ValueError):
            return name
        path = f"{path}.{rest}" if rest else path
    try:
        found = obj.modules_collection[path]
        return found.final_target.path if found.is_alias else found.path
    except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError, ValueError):
        return path


def convert(text: str, obj: griffe.Object) -> str:
    """``text`` (a docstring) with its roles as optional cross-references and its ``::`` markers as colons."""

    def link(match: re.Match) -> str:
        target = re.sub(r"\s+", "", match["target"])  # a name wrapped over two lines
        short = target.startswith("~")
        name = target.lstrip("~!")
        shown = name.rsplit(".", 1)[-1] if short else name
        identifier = html.escape(resolve(name, obj), quote=True)
        # autorefs' optional reference: a link where the API reference documents the object, plain code elsewhere
        return f'<autoref identifier="{identifier}" optional><code>{html.escape(shown)}</code></autoref>'

    text = ROLE.sub(link, text)
    text = LONE_LITERAL_MARKER.sub("", text)
    return LITERAL_MARKER.sub(":", text)


def _objects(obj: griffe.Object) -> Any:
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _objects(member)


class RestRoles(griffe.Extension):
    """Rewrite every docstring of the package once it is loaded (:func:`convert`)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        for obj in _objects(pkg):
            if obj.docstring is not None:
                obj.docstring.value = convert(obj.docstring.value, obj)
