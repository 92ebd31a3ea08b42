"""The layout the README's table of contents promises: tests mirror src, every module says what it
owns, a long module says why it is one, every package's docstring lists its modules, and a test
module is named and introduced for what it tests, never for how it came about.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "workerclass"
TESTS = ROOT / "tests"
#: the house size of a module; a longer one says why in its docstring ("Why one module ...")
LIMIT = 500
#: test folders that hold data or shared helpers, not the tests of one package
NOT_PACKAGES = {"golden", "__pycache__", "e2e"}
# (e2e is the end-to-end tier: the whole install on a real API server, not the tests of one package)

MODULES = sorted(SRC.rglob("*.py"))
PACKAGES = sorted(path.parent for path in SRC.rglob("__init__.py") if path.parent != SRC)
TEST_MODULES = sorted(TESTS.rglob("test_*.py"))
#: words that tell how a test came about (an audit, a fix, a review, an issue, a session), not what it tests
HISTORY = re.compile(r"audits?|fix(es)?|reviews?|findings?|regressions?|issues?[0-9]*|sessions?", re.IGNORECASE)


def _docstring(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text("utf-8"))) or ""


def test_every_test_folder_is_the_mirror_of_a_package() -> None:
    top = {path.relative_to(SRC).parts[0] for path in PACKAGES}
    folders = {path.name for path in TESTS.iterdir() if path.is_dir() and path.name not in NOT_PACKAGES}
    assert folders - top == set(), "test folders without a package of that name"
    assert top - folders == set(), "packages without a test folder"


def test_every_top_level_module_has_its_tests_at_the_top() -> None:
    for module in sorted(SRC.glob("*.py")):
        if module.stem in {"__init__", "__main__"}:
            continue
        named = [path for path in TESTS.glob(f"test_{module.stem}*.py")]
        assert named, f"tests/test_{module.stem}.py is missing for src/workerclass/{module.name}"


@pytest.mark.parametrize("module", MODULES, ids=[str(path.relative_to(SRC)) for path in MODULES])
def test_every_module_says_what_it_owns(module: Path) -> None:
    if module.name == "__main__.py":
        return
    docstring = _docstring(module)
    assert docstring.strip(), f"{module.relative_to(ROOT)} has no docstring"
    lines = len(module.read_text("utf-8").splitlines())
    if lines > LIMIT:
        assert "Why one module" in docstring, f"{module.relative_to(ROOT)} has {lines} lines and no reason"


@pytest.mark.parametrize("package", PACKAGES, ids=[str(path.relative_to(SRC)) for path in PACKAGES])
def test_every_package_lists_its_modules(package: Path) -> None:
    docstring = _docstring(package / "__init__.py")
    members = sorted(
        path.stem if path.is_file() else path.name
        for path in package.iterdir()
        if (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").is_file()
    )
    missing = [member for member in members if member not in docstring]
    assert missing == [], f"{package.relative_to(ROOT)}/__init__.py does not name {missing}"


def _subjects(test_module: Path) -> set[str]:
    """The module names of the package a test folder mirrors: ``review`` is webhook.review's subject."""
    folder = test_module.parent.relative_to(TESTS).parts
    if not folder:  # the tests at the top mirror the top-level modules
        return {path.stem.lower() for path in SRC.glob("*.py")}
    package = SRC / folder[0]
    return {path.stem.lower() for path in package.rglob("*.py")} if package.is_dir() else set()


@pytest.mark.parametrize("module", TEST_MODULES, ids=[str(path.relative_to(TESTS)) for path in TEST_MODULES])
def test_a_test_module_is_named_for_what_it_tests(module: Path) -> None:
    first_line = (_docstring(module).strip().splitlines() or [""])[0]
    subjects = _subjects(module)
    for what, text in (("name", module.stem), ("docstring's first line", first_line)):
        words = re.findall(r"[A-Za-z]+[0-9]*", text.replace("_", " "))
        history = [w for w in words if HISTORY.fullmatch(w) and w.lower().removesuffix("s") not in subjects]
        assert history == [], (
            f"{module.relative_to(ROOT)}: its {what} says how its tests came about ({history}), "
            f"not what they test: {text!r}"
        )


def test_no_test_module_skips_itself_on_a_test_helper_import() -> None:
    """``importorskip`` is for optional third-party libraries: a helper of ``tests/`` that fails
    to import is a broken test, never a skipped one (the oracle agreement once skipped silently)."""
    local = {path.name for path in TESTS.iterdir() if path.is_dir()} | {path.stem for path in TESTS.glob("*.py")}
    offenders = []
    for module in sorted(TESTS.rglob("test_*.py")):
        for node in ast.walk(ast.parse(module.read_text("utf-8"))):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "attr", None) == "importorskip"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and str(node.args[0].value).split(".")[0] in local | {"tests"}
            ):
                offenders.append(f"{module.relative_to(ROOT)}: {node.args[0].value}")
    assert offenders == []


#: Public names that still mean a different thing in each of these modules (a door's own type or
#: helper beside the core's); the list only shrinks: a new name defined twice fails, and so does a
#: name here that is defined once now.
SAME_NAME_OTHER_THING: dict[str, set[str]] = {
    "CHART_NAME": {"chart/labels.py", "helm_chart.py"},  # the upstream chart's name; our own chart's
    "Decider": {"api/webhooks.py", "webhook/handler.py"},  # a webhook's decider name; the callable
    "ImageSource": {"api/names.py", "model/settings.py"},  # a source's name; a parsed source block
    "Key": {"ops/plan/__init__.py", "ops/writes.py"},  # (kind, ns, name); (ns, name, kind)
    "NAME": {"api/patterns.py", "deploy.py", "webhook/logtext.py"},  # a pattern; the install's name; a log field
    "Node": {"api/schema.py", "chart/gotext.py"},  # a declaration node; a template node
    "Settings": {"cli/output.py", "webhook/settings.py"},  # output settings; the server's settings
    "StateSource": {"controller/__init__.py", "webhook/sources.py"},  # each door's own protocol
    "Target": {"adapters/kubeconfig.py", "webhook/review.py"},  # a kubeconfig target; a review's resource
    "Verdict": {"ops/charts.py", "ops/preflight/verdicts.py"},  # a chart's verdict; a preflight check's
    "chart_checks": {"ops/preflight/report.py", "resolve/chart.py"},  # preflight rows; a pool's failures
    "identify": {"chart/identity.py", "state/records.py"},  # a chart's files; an object's key
    "load_state": {"adapters/folder.py", "cli/commands_core.py"},  # a folder; the CLI's STATE with --chart
    "to_yaml": {"chart/goyaml.py", "deploy.py"},  # go-yaml's text of a value; the install's documents
}


def _top_level_names(path: Path) -> set[str]:
    """The public names a module defines itself (assigned, def or class), not those it imports."""
    names: set[str] = set()
    for node in ast.parse(path.read_text("utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {name for name in names if not name.startswith("_") and name != "logger"}


def test_each_fact_has_one_definition() -> None:
    """A constant, function or type is defined in one module and imported everywhere else: a second
    definition (a copied prefix, an alias kept for importers, a second map of the same facts) can
    drift from the first, and one name that means two things misleads its readers."""
    defined: dict[str, set[str]] = {}
    for module in MODULES:
        for name in _top_level_names(module):
            defined.setdefault(name, set()).add(module.relative_to(SRC).as_posix())
    twice = {name: modules for name, modules in defined.items() if len(modules) > 1}
    assert twice == SAME_NAME_OTHER_THING


def test_no_module_renames_an_imported_constant() -> None:
    """``URL = HTTP_URL``: a second public name for an imported value is a second name for one
    thing (private seams that tests substitute, such as ``_render = render``, are not names to import)."""
    aliases: list[str] = []
    for module in MODULES:
        body = ast.parse(module.read_text("utf-8")).body
        imported = {
            alias.asname or alias.name.split(".")[0]
            for node in body
            if isinstance(node, ast.Import | ast.ImportFrom)
            for alias in node.names
        }
        for node in body:
            if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Name):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                aliases += [
                    f"{module.relative_to(SRC)}: {target.id} = {node.value.id}"
                    for target in targets
                    if isinstance(target, ast.Name) and not target.id.startswith("_") and node.value.id in imported
                ]
    assert not aliases, aliases
