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
