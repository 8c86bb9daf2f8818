"""The configuration's JSON Schema (workflow/schemas/config.schema.yaml) as :func:`trustcal.config.validate_config`
uses it: read, its defaults filled in, command-line strings converted by its types, and its validator (whole
numbers for integers)."""

from __future__ import annotations

import copy
from pathlib import Path

import jsonschema
import yaml

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "schemas" / "config.schema.yaml"


def load_schema(path: str | Path = SCHEMA_PATH) -> dict:
    with open(path) as fh:
        return yaml.safe_load(fh)


def fill_defaults(config: dict, schema: dict) -> None:
    for key, sub in schema.get("properties", {}).items():
        if key not in config and "default" in sub:
            config[key] = copy.deepcopy(sub["default"])
        if sub.get("type") == "object" and isinstance(config.get(key), dict):
            fill_defaults(config[key], sub)


def coerce(value, schema: dict, defs: dict | None = None):
    """Command-line values (``--config seeds=[0,1]``) arrive as strings: convert by the schema's type."""
    defs = defs or {}
    if "$ref" in schema:  # only local references: "#/$defs/<name>"
        schema = defs[schema["$ref"].rsplit("/", 1)[-1]]
    if "oneOf" in schema:  # the alternative whose container type matches, else the scalar one
        container = {list: "array", dict: "object"}.get(type(value))
        options = [defs.get(o.get("$ref", "").rsplit("/", 1)[-1], o) for o in schema["oneOf"]]
        matching = [o for o in options if o.get("type") == container] or [
            o for o in options if o.get("type") not in ("array", "object")
        ]
        return coerce(value, matching[0], defs) if matching else value
    kind = schema.get("type")
    if kind == "array" and isinstance(value, list):
        return [coerce(v, schema.get("items", {}), defs) for v in value]
    if kind == "object" and isinstance(value, dict):
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties")  # the schema of every other key (e.g. external.<name>)
        extra = extra if isinstance(extra, dict) else {}
        return {k: coerce(v, props.get(k, extra), defs) for k, v in value.items()}
    if not isinstance(value, str):
        return value
    try:
        if kind == "integer" and value.strip().lstrip("+-").isdigit():
            return int(value)
        if kind == "number":
            return float(value)
    except ValueError:
        return value
    if kind == "boolean" and value.strip().lower() in ("true", "false", "yes", "no"):
        return value.strip().lower() in ("true", "yes")
    return value


def _is_integer(checker, instance) -> bool:
    """An integer, as Python has it: JSON Schema also counts 3.0 and 1e9 as integers, which then reach
    ``range()`` as floats; a setting that counts something is written as a whole number."""
    return isinstance(instance, int) and not isinstance(instance, bool)


Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer),
)
