"""Finished job results, saved per model in the data folder and found again when the model is reopened.

A model is known by a fast content hash (:func:`model_key`): its size and BLAKE2b over 64 evenly spaced
64 KiB windows and the last one, so a 2 GB file is keyed in milliseconds, a copy of the same file finds
the same results, and an edited file (another size or other bytes in any window) does not. Files are
written atomically; one that cannot be read is skipped, never fatal.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from splitscope.engine.paths import data_dir
from splitscope.engine.report.files import write_text_atomic

WINDOW = 64 * 1024
WINDOWS = 64


_KEYS: dict[tuple[str, int, int, int, int, int], str] = {}
"""Keys already computed in this process, by the file's path, size, device, inode, and modification and change
times (ns; a copy that keeps the modification time still changes the change time): a window's
handlers ask again on the UI thread for a key the analysis computed, and get it without reading the file. A file
changed in the last two seconds is not remembered (file times tick by milliseconds: a rewrite of the same size
inside one tick would look unchanged)."""


def content_key(path: str | os.PathLike[str] | None) -> str | None:
    """:func:`model_key` of a model that may be gone (None then): what a result stores to say which model it is of."""
    if path is None:
        return None
    try:
        return model_key(path)
    except OSError:
        return None


def model_key(path: str | os.PathLike[str]) -> str:
    """The model file's identity: 24 hex digits."""
    p = Path(path)
    st = p.stat()
    size = st.st_size
    memo = (str(p.resolve()), size, st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
    key = _KEYS.get(memo)
    if key is not None:
        return key
    h = hashlib.blake2b(digest_size=12)
    h.update(str(size).encode())
    with p.open("rb") as f:
        if size <= WINDOW * WINDOWS:
            h.update(f.read())
        else:
            step = (size - WINDOW) // (WINDOWS - 1)
            for k in range(WINDOWS):
                f.seek(k * step)
                h.update(f.read(WINDOW))
    key = h.hexdigest()
    if time.time() - max(st.st_mtime, st.st_ctime) > 2.0:
        _KEYS[memo] = key
    return key


def session_dir(path: str | os.PathLike[str]) -> Path:
    """The folder of one model's saved results."""
    d = data_dir() / "sessions" / model_key(path)
    d.mkdir(parents=True, exist_ok=True)
    return d


def save_result(path: str | os.PathLike[str], kind: str, result: dict[str, Any]) -> Path:
    """Save ``result`` of a ``kind`` job (``profile``) for the model at ``path``; returns the file."""
    d = session_dir(path)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    label = str(result.get("backend", "")).replace("/", "_")
    # Keyed by what the figures depend on besides the model: the backend, the dims and where the inputs came from.
    key = hashlib.blake2b(
        json.dumps([result.get("backend"), result.get("dims"), result.get("inputs")], sort_keys=True).encode(),
        digest_size=4,
    ).hexdigest()
    out = d / f"{kind}-{label}-{key}-{stamp}-{time.perf_counter_ns() % 10**6:06d}.json"
    doc = {"kind": kind, "model": str(path), "saved": time.strftime("%Y-%m-%dT%H:%M:%S"), "result": result}
    write_text_atomic(out, json.dumps(doc))
    return out


def load_results(path: str | os.PathLike[str], kind: str | None = None) -> list[dict[str, Any]]:
    """The saved results of the model at ``path``, oldest first (documents with ``kind``, ``saved``, ``result``)."""
    try:
        d = data_dir() / "sessions" / model_key(path)
    except OSError:
        return []
    out = []
    for f in sorted(d.glob("*.json")) if d.is_dir() else []:
        try:
            doc = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError):
            continue
        if isinstance(doc, dict) and isinstance(doc.get("result"), dict) and (kind is None or doc.get("kind") == kind):
            doc["file"] = str(f)
            out.append(doc)
    return sorted(out, key=lambda d: str(d.get("saved", "")))
