"""Draw the house: the code's rooms (sub-packages) and the imports between them, as a Mermaid flowchart.

Read from the source with ``ast`` (nothing is imported or run): every ``import``/``from ... import`` of a
``splitscope`` module, lazy ones inside functions included, counted once per importing module. A room is a
sub-package (``engine/split``, ``gui/canvas``); the loose modules of a folder are its room of their own
(``engine (top)``). An arrow ``a --> b`` reads "a imports b", labelled with how many of a's modules do.

    python docs/house.py                      # today's house, printed
    python docs/house.py --write              # ... and put into docs/architecture.md between its markers
    git archive REV | tar -x -C /tmp/old && python docs/house.py --source /tmp/old   # an older revision's
"""

from __future__ import annotations

import argparse
import ast
import re
from collections import Counter
from pathlib import Path

TOPS = ("engine", "profiler", "gui")
BEGIN, END = "<!-- house: begin -->", "<!-- house: end -->"


def room_of(rel: tuple[str, ...]) -> str:
    """The room of a module path relative to the root (``("engine", "split", "analyze")``)."""
    if len(rel) >= 3:
        return f"{rel[0]}/{rel[1]}"
    return f"{rel[0]} (top)" if rel[0] != "main" else "main"


def module_rooms(root: Path) -> dict[tuple[str, ...], str]:
    """Every module of the three folders (and ``main.py``), by its dotted parts, with its room."""
    out: dict[tuple[str, ...], str] = {("main",): "main"} if (root / "main.py").is_file() else {}
    for top in TOPS:
        for path in sorted((root / top).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
                if len(parts) >= 2:  # a package's __init__ belongs to the package's own room
                    out[parts] = f"{parts[0]}/{parts[1]}" if len(parts) >= 2 else f"{parts[0]} (top)"
                    continue
            out[parts] = room_of(parts)
    return out


def _targets(tree: ast.AST, here: tuple[str, ...]) -> set[tuple[str, ...]]:
    """The dotted module paths a file imports, without the ``splitscope`` prefix, relative imports resolved."""
    found: set[tuple[str, ...]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {tuple(a.name.split(".")) for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level] if node.level else ()
            mod = (*base, *(node.module or "").split(".")) if node.module else base
            found.add(mod)
            found |= {(*mod, a.name) for a in node.names}
    return {t[1:] if t and t[0] == "splitscope" else t for t in found}


def edges(root: Path) -> tuple[Counter[tuple[str, str]], Counter[str]]:
    """Arrows between rooms (how many modules of one import the other) and each room's lines of code."""
    rooms = module_rooms(root)
    arrows: Counter[tuple[str, str]] = Counter()
    lines: Counter[str] = Counter()
    for parts, room in rooms.items():
        path = root.joinpath(*parts).with_suffix(".py")
        if not path.is_file():
            path = root.joinpath(*parts, "__init__.py")
        text = path.read_text(encoding="utf-8")
        lines[room] += text.count("\n")
        package = parts if path.name == "__init__.py" else parts[:-1]
        seen = set()
        for t in _targets(ast.parse(text), (*package, "_")):
            while t and t not in rooms:
                t = t[:-1]
            if t and rooms[t] != room:
                seen.add(rooms[t])
        arrows.update((room, other) for other in seen)
    return arrows, lines


def mermaid(root: Path) -> str:
    """The house as a Mermaid flowchart, rooms grouped by their top folder; the foundation (rooms that half the
    others import) named under it rather than drawn with every arrow into it."""
    arrows, lines = edges(root)
    lines = Counter({r: n for r, n in lines.items() if n})
    into = Counter(b for a, b in arrows)
    base = sorted(r for r in lines if into[r] * 2 >= len(lines))
    drawn = {(a, b): n for (a, b), n in arrows.items() if b not in base and a in lines and b in lines}
    ident = {r: re.sub(r"\W", "_", r) for r in lines}
    out = ["```mermaid", "flowchart LR"]
    for top in ("main", *TOPS):
        members = sorted(r for r in lines if r.split("/")[0].split(" ")[0] == top)
        if top != "main":
            out.append(f"  subgraph {top}")
        out += [f'    {ident[r]}["{r}<br/>{lines[r]:,} lines"]' for r in members]
        if top != "main":
            out.append("  end")
    out += [f"  {ident[a]} -->|{n}| {ident[b]}" for (a, b), n in sorted(drawn.items())]
    out.append("```")
    total = sum(lines.values())
    head = f"{len(lines)} rooms, {total:,} lines, {len(arrows)} arrows between rooms."
    tail = f"Not drawn: the arrows into the foundation every other room uses ({', '.join(base)})."
    return f"{head}\n\n" + "\n".join(out) + f"\n\n{tail}\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", type=Path, default=Path(__file__).resolve().parents[1], help="a checkout's root")
    ap.add_argument("--write", action="store_true", help="replace the house in docs/architecture.md")
    args = ap.parse_args()
    text = mermaid(args.source)
    if not args.write:
        print(text)
        return
    page = Path(__file__).with_name("architecture.md")
    doc = page.read_text(encoding="utf-8")
    head, rest = doc.split(BEGIN, 1)
    page.write_text(f"{head}{BEGIN}\n{text}{rest[rest.index(END) :]}", encoding="utf-8")


if __name__ == "__main__":
    main()
