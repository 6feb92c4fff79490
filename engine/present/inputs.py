"""The files a report is given (a profile, an engine, a calibration, a generation, a sweep, a kernel result): each
read through its kind's codec, and held to the model it is shown on (its content, its node names, its dims)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from splitscope.engine import codec
from splitscope.engine.errors import SplitscopeError
from splitscope.engine.model import GraphModel


def load_doc(path: str | os.PathLike[str], what: str) -> dict[str, Any]:
    """A JSON file given to the report (a saved session file's ``result`` is unwrapped)."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SplitscopeError(f"--{what} {p}: no such file.") from None
    except (OSError, ValueError, UnicodeDecodeError) as e:
        raise SplitscopeError(
            f"--{what} {p}: not a JSON file ({str(e)[:80]}); give the file "
            f"'splitscope {what if what != 'calibration' else 'calibrate'} --json' wrote."
        ) from None
    if isinstance(doc, dict) and isinstance(doc.get("result"), dict) and "kind" in doc:
        doc = doc["result"]
    if not isinstance(doc, dict):
        raise SplitscopeError(f"--{what} {p}: not a Splitscope {what} document.")
    keys = {
        "profile": "latency_ms",
        "engine": "layers",
        "calibration": "accuracy",
        "kernel": "extract",
        "generation": "generation",
        "sweep": "cells",
    }[what]
    doc = codec.read(what, doc, f"--{what} {p}")  # another kind's, or a later release's: said
    if keys not in doc:
        raise SplitscopeError(
            f"--{what} {p}: no '{keys}' in it: is it the JSON of 'splitscope "
            f"{what if what != 'calibration' else 'calibrate'}'?"
        )
    return doc


def check_same_model(gm: GraphModel, doc: dict[str, Any], what: str, path: str | os.PathLike[str]) -> None:
    """Refuse ``doc`` when it was made for another model: by the model's content key where the result stores one
    (a profile, a calibration, a kernel result, an engine mapped onto its model), else by the node names it speaks
    of; and one taken at other dims than those in force."""
    from splitscope.engine.runtime.store import content_key

    key, ours = doc.get("model_key"), content_key(gm.path)
    here = gm.path.name if gm.path else "this model"
    if key and ours and key != ours:
        other = Path(str(doc.get("model") or "another model")).name
        raise SplitscopeError(
            f"--{what} {Path(path).name} is of another model ({other}: not the content of {here}); "
            f"give this model's {what}."
        )
    taken = {k: v for k, v in (doc.get("dims") or {}).items() if k in gm.dims and gm.dims[k] != v}
    if taken:
        at = ", ".join(f"{k}={v}" for k, v in sorted(taken.items()))
        now = ", ".join(f"{k}={gm.dims[k]}" for k in sorted(taken))
        raise SplitscopeError(
            f"--{what} {Path(path).name} was taken at {at}, not at {now} as here: give the same --dim, or "
            f"make the {what} again at these dims."
        )
    if what == "kernel":  # the nodes it worked on, whatever its key says: they must be here to be shown
        if set(doc.get("nodes", [])) - {n.label for n in gm.nodes}:
            other = Path(str(doc.get("model") or "another model")).name
            raise SplitscopeError(
                f"--kernel {Path(path).name} is of another model ({other}): its nodes are not in {here}; "
                "give this model's kernel JSON."
            )
        return
    if key and key == ours:
        return
    names: set[str] = set()
    if what == "profile":  # rows of nodes the runtime made itself (ORT splits HardSwish, say) name no model node
        names = {r["name"] for r in doc.get("per_node", []) if r.get("name") and r.get("index") is not None}
    elif what == "calibration":
        names = set(doc.get("quantized", [])) | set(doc.get("excluded", []))
    elif what == "engine":
        names = {n for r in doc.get("layers", []) for n in r.get("onnx_nodes", [])}
    if not names:
        return
    ours = {n.name for n in gm.nodes}
    hit = len(names & ours)
    if hit < 0.5 * len(names):
        other = Path(str(doc.get("model") or "another model")).name
        raise SplitscopeError(
            f"--{what} {Path(path).name} is of another model ({other}: {hit} of its {len(names)} "
            f"nodes are in {gm.path.name if gm.path else 'this model'}); give this model's {what}."
        )
