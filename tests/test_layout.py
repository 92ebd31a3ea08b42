"""The layout the README's table of contents promises: tests mirror src, every module says what it
owns, a long module says why it is one, and every package's docstring lists its modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "workerclass"
TESTS = ROOT / "tests"
#: the house size of a module; a longer one says why in its docstring ("Why one module ...")
LIMIT = 500
#: test folders that hold data or shared helpers, not the tests of one package
NOT_PACKAGES = {"upstream-crds", "golden", "chart_suites", "__pycache__"}

MODULES = sorted(SRC.rglob("*.py"))
PACKAGES = sorted(path.parent for path in SRC.rglob("__init__.py") if path.parent != SRC)


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
