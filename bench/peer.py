"""The peer revision the benchmarks measure against, checked out beside this one: ``with peer_tree(REV) as tree``
gives a ``git worktree`` of REV (removed after), and :func:`site` a folder whose ``splitscope`` package maps a
checkout's engine/, gui/, profiler/ and resources/ (as an editable install does), to put first on ``PYTHONPATH``."""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def peer_tree(rev: str) -> Iterator[Path]:
    tmp = Path(tempfile.mkdtemp(prefix="splitscope-peer-"))
    tree = tmp / "peer"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), rev], check=True)
    try:
        yield tree
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)


def site(src: Path, where: Path) -> Path:
    where.mkdir(parents=True)
    pkg = where / "splitscope"
    pkg.mkdir()
    (pkg / "__init__.py").write_text((src / "splitscope" / "__init__.py").read_text())
    for sub in ("engine", "gui", "profiler", "resources"):
        (pkg / sub).symlink_to(src / sub)
    return where
