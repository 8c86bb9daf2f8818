"""Every key of the configuration schema has a description: the Snakemake workflow catalog renders the
schema into the parameter table users read, and a key without one shows up there blank.

That every key is also in config/README.md's tables (with the schema's default) is checked by
tests/workflow/test_catalog.py; config.yaml's keys are the schema's (`additionalProperties: false`).
"""

import copy

import yaml
from helpers.workflow import REPO

SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"


def undescribed(schema: dict) -> list[str]:
    """The dotted keys (`calibration.t_min`, `external.*.kind`, `$defs.name.key`) of every property and
    pattern property, at any depth and in $defs, whose schema has no non-empty description (a `$ref` is
    described where it points)."""
    missing = []

    def walk(node, path):
        if not isinstance(node, dict):
            return
        for key in ("properties", "patternProperties"):
            for name, sub in (node.get(key) or {}).items():
                here = [*path, name]
                if isinstance(sub, dict) and "$ref" not in sub:
                    text = sub.get("description")
                    if not (isinstance(text, str) and text.strip()):
                        missing.append(".".join(here))
                walk(sub, here)
        if isinstance(node.get("items"), dict):
            walk(node["items"], [*path, "[]"])
        if isinstance(node.get("additionalProperties"), dict):
            walk(node["additionalProperties"], [*path, "*"])
        for key in ("anyOf", "oneOf", "allOf"):
            for sub in node.get(key) or []:
                walk(sub, path)

    walk(schema, [])
    for name, sub in (schema.get("$defs") or {}).items():
        walk(sub, ["$defs", name])
    return missing


def test_every_schema_key_has_a_description():
    missing = undescribed(yaml.safe_load(SCHEMA.read_text()))
    assert missing == [], f"schema keys without a description ({len(missing)}): " + ", ".join(missing)


def test_the_check_sees_a_missing_or_empty_description_at_every_depth():
    schema = yaml.safe_load(SCHEMA.read_text())
    broken = copy.deepcopy(schema)
    del broken["properties"]["download"]["description"]
    broken["properties"]["trust"]["properties"]["alpha"]["description"] = "  "
    del broken["properties"]["external"]["additionalProperties"]["properties"]["kind"]["description"]
    options = broken["properties"]["calibration"]["properties"]["options"]
    pattern = next(iter(options["patternProperties"]))
    del options["patternProperties"][pattern]["description"]
    broken["$defs"]["example"] = {"type": "object", "properties": {"key": {"type": "string"}}}
    assert undescribed(broken) == [
        "download",
        f"calibration.options.{pattern}",
        "trust.alpha",
        "external.*.kind",
        "$defs.example.key",
    ]
