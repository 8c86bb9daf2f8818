"""The per-rule conda environments (envs/*.yaml, for --sdm conda) agree with pyproject.toml.

envs/train.yaml (download, prepare, train, logits) is the core dependencies plus
the `train` extra; envs/analysis.yaml (every other rule) is the core
dependencies and the `calibration` extra, without torch. Each rule names its environment relative to
its rule file, and the analysis rules' scripts never import torch.
"""

import ast
import json
import re
import subprocess
import sys
import tomllib

import pytest
import yaml
from helpers.workflow import REPO

RULES_DIR = REPO / "workflow" / "rules"
SCRIPTS_DIR = REPO / "workflow" / "scripts"
TRAIN_RULES = {"download", "prepare", "train", "logits", "shift_images", "shift_logits"}
ANALYSIS_RULES = {
    "calibrate",
    "calibration_table",
    "trust",
    "trust_bootstrap",
    "scores",
    "figures",
    "metric_figures",
    "verdict",
    "external",
    "shift_scores",
    "shift_clean",
    "shift_table",
    "shift_ood_table",
    "shift_figures",
}
TORCH = {"torch", "torchvision", "pytorch"}
# import name → distribution name, for the packages of pyproject.toml's core, train and workflow lists
IMPORT_NAMES = {"yaml": "pyyaml"}


def split(requirement: str) -> tuple[str, str]:
    m = re.match(r"^([A-Za-z0-9_.\-\[\]]+)\s*(.*)$", requirement)
    return m.group(1).lower(), m.group(2).replace(" ", "")


def pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def requirements(names: list[str]) -> dict[str, str]:
    return dict(split(r) for r in names if not r.startswith("trustcal"))


def env_packages(name: str) -> tuple[str, dict[str, str]]:
    """(python bound, package → bounds) of envs/<name>.yaml, conda and pip packages together."""
    env = yaml.safe_load((REPO / "envs" / f"{name}.yaml").read_text())
    packages = {}
    for dep in env["dependencies"]:
        for item in dep["pip"] if isinstance(dep, dict) else [dep]:
            packages.update([split(item)])
    packages.pop("pip", None)
    return packages.pop("python"), packages


def rule_directives() -> dict[str, dict[str, str]]:
    """rule → {"file": rule file, "conda": env path, "script": script path} from workflow/rules/*.smk."""
    rules = {}
    for smk in sorted(RULES_DIR.glob("*.smk")):
        for block in re.split(r"^rule ", smk.read_text(), flags=re.M)[1:]:
            name = block.split(":", 1)[0]
            info = {"file": smk}
            for key in ("conda", "script"):
                m = re.search(rf"^    {key}:\s*\n?\s*\"([^\"]+)\"", block, flags=re.M)
                if m:
                    info[key] = m.group(1)
            rules[name] = info
    return rules


def test_train_env_is_core_plus_train_extra():
    project = pyproject()
    python, packages = env_packages("train")
    assert python == project["requires-python"]
    expected = requirements(project["dependencies"]) | requirements(project["optional-dependencies"]["train"])
    assert packages == expected


def test_analysis_env_is_core_and_calibration_without_torch():
    project = pyproject()
    python, packages = env_packages("analysis")
    assert python == project["requires-python"]
    expected = requirements(project["dependencies"]) | requirements(project["optional-dependencies"]["calibration"])
    assert packages == expected
    assert not TORCH & set(packages)


def test_every_rule_names_an_existing_env_relative_to_its_rule_file():
    rules = rule_directives()
    scripted = {name for name, info in rules.items() if "script" in info}
    assert scripted == TRAIN_RULES | ANALYSIS_RULES
    for name in scripted:
        info = rules[name]
        expected = "train" if name in TRAIN_RULES else "analysis"
        assert info.get("conda") == f"../../envs/{expected}.yaml", name  # relative: works as a module too
        assert (info["file"].parent / info["conda"]).resolve().is_file(), name
        assert (info["file"].parent / info["script"]).resolve().is_file(), name
    assert not (REPO / "envs" / "trustcal.yaml").exists()  # the old single environment


def loaded_packages(script) -> set[str]:
    """Top-level modules that importing everything ``script`` imports (also inside functions) loads."""
    tree = ast.parse(script.read_text())
    imports = [
        ast.unparse(node)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom)) and not getattr(node, "level", 0)
    ]
    code = "\n".join(
        [
            "import json, sys",
            f"sys.path[:0] = [{str(SCRIPTS_DIR)!r}, {str(REPO / 'workflow')!r}]",
            *imports,
            "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))",
        ]
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout.splitlines()[-1]))


@pytest.mark.parametrize("rule", sorted(TRAIN_RULES | ANALYSIS_RULES))
def test_scripts_import_only_what_their_env_provides(rule):
    info = rule_directives()[rule]
    env = "train" if rule in TRAIN_RULES else "analysis"
    provided = set(env_packages(env)[1])
    project = pyproject()
    known = set(requirements(project["dependencies"]))  # the project's own dependencies, by distribution name
    for extra in ("train", "workflow", "calibration"):
        known |= set(requirements(project["optional-dependencies"][extra]))
    loaded = {IMPORT_NAMES.get(m, m) for m in loaded_packages(info["file"].parent / info["script"])}
    assert loaded & known <= provided, (rule, env, sorted(loaded & known - provided))
    if env == "analysis":
        assert not loaded & TORCH, rule
