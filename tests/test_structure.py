"""The house rules that import-linter cannot state: one installed package, QtCore-only profiler,
modules of a readable size."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("engine", "gui", "profiler", "resources")
MAX_LINES = 650


def test_every_package_folder_is_installed_under_splitscope():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(cfg["packages"])
    mapping = cfg["package-dir"]
    found = {"splitscope"}
    for top in FOLDERS:
        assert mapping[f"splitscope.{top}"] == top
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT).parts
            found.add(".".join(("splitscope", *rel)))
    assert listed == found, f"pyproject packages differ from the folders: {listed ^ found}"
    assert all(name.startswith("splitscope") for name in listed)


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
    return out


def test_profiler_uses_qtcore_only():
    for path in (ROOT / "profiler").rglob("*.py"):
        qt = {m for m in _imports(path) if m.startswith("PySide6")}
        assert qt <= {"PySide6.QtCore"}, f"{path.name} imports {qt}"


def test_code_imports_splitscope_not_bare_folders():
    for top in (*FOLDERS, "tests", "bench"):
        for path in (ROOT / top).rglob("*.py"):
            bare = {m for m in _imports(path) if m.split(".")[0] in ("engine", "gui", "profiler", "resources")}
            assert not bare, f"{path.relative_to(ROOT)} imports {bare}: use splitscope.{next(iter(bare))}"


def test_modules_stay_readable():
    for top in ("engine", "gui", "profiler"):
        for path in (ROOT / top).rglob("*.py"):
            n = len(path.read_text().splitlines())
            assert n <= MAX_LINES, f"{path.relative_to(ROOT)} has {n} lines: split it by concern"
