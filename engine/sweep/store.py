"""Finished sweep cells, one JSON file a key in the cache folder (written atomically): what a re-run reuses."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from splitscope.engine.paths import cache_dir


def store_dir() -> Path:
    """Where finished cells are kept (Splitscope's cache folder, ``sweeps``)."""
    return cache_dir() / "sweeps"


def load(key: str, folder: Path | None = None) -> dict[str, Any] | None:
    """The finished result of ``key``, or None (never a failed or a damaged one)."""
    path = (folder or store_dir()) / f"{key}.json"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get("status") == "done" else None


def save(key: str, doc: dict[str, Any], folder: Path | None = None) -> None:
    """Keep a finished cell (only finished ones are kept: a failure runs again next time)."""
    if doc.get("status") != "done":
        return
    folder = folder or store_dir()
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{key}-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        os.replace(tmp, folder / f"{key}.json")
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
