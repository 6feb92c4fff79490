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


def _module_files() -> dict[str, Path]:
    """Every module of the installed layout (``splitscope.engine.onnxio.graph``) and its file here."""
    out: dict[str, Path] = {}
    for top in ("engine", "gui", "profiler"):
        for path in (ROOT / top).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(("splitscope", *parts))] = path
    return out


def _edges(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of ours it imports, anywhere in it (at the top, in a function, for type checking:
    each is a tie a reader follows)."""
    edges: dict[str, set[str]] = {}
    for name, path in mods.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                targets.add(node.module)
                targets.update(f"{node.module}.{a.name}" for a in node.names)
        edges[name] = {t for t in targets if t in mods and t != name and not name.startswith(t + ".")}
    return edges


def test_no_import_circles_anywhere():
    """No two modules import each other, directly or round a loop (Tarjan's strongly connected components)."""
    edges = _edges(_module_files())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    circles: list[list[str]] = []
    sys.setrecursionlimit(10_000)

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    for v in edges:
        if v not in index:
            visit(v)
    assert not circles, f"import circles: {circles}"


def test_only_the_shell_names_the_main_window():
    """The features (profile, calibrate, engine, show) are built with the controller and the Shell protocol."""
    edges = _edges(_module_files())
    naming = sorted(
        m for m, ts in edges.items() if "splitscope.gui.shell.window" in ts and not m.startswith("splitscope.gui.shell")
    )
    assert not naming, f"outside the shell, these name the main window: {naming}"


# Fields of the application state that may hold anything, each with its reason; the list only shrinks.
UNTYPED_FIELDS: dict[str, str] = {
    "queue.JobRecord.result": "a job of any kind: its kind's handler in the controller's registry reads it as its type",
    "queue.JobRecord.meta": "what the submitter keeps with a job (its model's path, an engine's files)",
    "profiling.ProfileRequest.target": "the SSH target as the child's arguments carry it (Target.to_json)",
}


def _signals_and_fields(path: Path) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """Every Qt signal of the module with its docstring, and every class field with its annotation."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    signals, fields = [], {}
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        for k, f in enumerate(cls.body):
            if isinstance(f, ast.AnnAssign) and isinstance(f.target, ast.Name):
                fields[f"{path.stem}.{cls.name}.{f.target.id}"] = ast.unparse(f.annotation)
            if isinstance(f, ast.Assign) and "Signal(" in ast.unparse(f.value):
                nxt = cls.body[k + 1] if k + 1 < len(cls.body) else None
                doc = nxt.value.value if isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant) else ""
                signals.append((f"{path.stem}.{cls.name}.{ast.unparse(f.targets[0])}", str(doc)))
    return signals, fields


def test_the_application_state_is_typed_and_the_untyped_list_only_shrinks():
    """No signal of profiler/ carries a dict (its docstring names the type it carries), and no field of its classes
    is ``Any`` or a ``dict[str, Any]`` except those listed with their reason."""
    untyped = set()
    for path in sorted((ROOT / "profiler").glob("*.py")):
        signals, fields = _signals_and_fields(path)
        for name, doc in signals:
            assert doc, f"{name} says nothing of what it carries"
            assert "dict" not in doc.lower() and "json" not in doc.lower(), f"{name} carries a document: {doc}"
        untyped |= {n for n, a in fields.items() if a in ("Any", "object") or "dict[str, Any]" in a}
    assert untyped <= set(UNTYPED_FIELDS), f"new untyped state: {untyped - set(UNTYPED_FIELDS)}"
    assert untyped == set(UNTYPED_FIELDS), f"typed now, take off UNTYPED_FIELDS: {set(UNTYPED_FIELDS) - untyped}"
