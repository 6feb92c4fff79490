"""The complexity ratchet: no function over ruff's complexity 15 (C901) or 80 statements (PLR0915) but those
listed in .ci/complexity.txt, which may only shrink.

A new function over either limit fails: split it (or, where it must stay whole, list it with the reason in its
docstring). A listed function now within the limits fails too, until its line is taken out, so the list never
holds what is done.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIST = ROOT / ".ci" / "complexity.txt"


def _function_at(path: Path, row: int, cache: dict[Path, list[tuple[int, str]]]) -> str:
    """The qualified name of the function defined at ``row`` of ``path``."""
    if path not in cache:
        found: list[tuple[int, str]] = []

        def walk(node: ast.AST, prefix: str) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    name = f"{prefix}{child.name}"
                    if not isinstance(child, ast.ClassDef):
                        found.append((child.lineno, name))
                    walk(child, name + ".")
                else:
                    walk(child, prefix)

        walk(ast.parse(path.read_text(encoding="utf-8")), "")
        cache[path] = found
    return next((name for line, name in cache[path] if line == row), f"line {row}")


def offenders() -> set[str]:
    cmd = [sys.executable, "-m", "ruff", "check", "--select", "C901,PLR0915", "--output-format", "json", "--quiet"]
    cmd += ["--config", "lint.mccabe.max-complexity=15", "--config", "lint.pylint.max-statements=80", "."]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    cache: dict[Path, list[tuple[int, str]]] = {}
    found = set()
    for d in json.loads(out.stdout or "[]"):
        path = Path(d["filename"])
        rel = path.resolve().relative_to(ROOT).as_posix()
        found.add(f"{rel}::{_function_at(path, d['location']['row'], cache)} {d['code']}")
    return found


def main() -> int:
    listed = {ln.strip() for ln in LIST.read_text(encoding="utf-8").splitlines() if ln.strip() and ln[0] != "#"}
    now = offenders()
    new, done = sorted(now - listed), sorted(listed - now)
    for line in new:
        print(f"ci: {line}: over the limit (complexity 15, 80 statements): split it", file=sys.stderr)
    for line in done:
        print(f"ci: {line}: within the limits now: take its line out of .ci/complexity.txt", file=sys.stderr)
    return 1 if new or done else 0


if __name__ == "__main__":
    sys.exit(main())
