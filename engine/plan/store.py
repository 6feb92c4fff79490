"""Scenarios saved with the model's session (``scenarios.json`` in its session folder, written atomically)."""

from __future__ import annotations

import json
import os

from splitscope.engine.plan.scenario import Scenario
from splitscope.engine.report.files import write_text_atomic
from splitscope.engine.runtime.store import session_dir

FILE = "scenarios.json"


def save_scenarios(model: str | os.PathLike[str], scenarios: list[Scenario]) -> None:
    """Replace the model's saved scenarios with ``scenarios``."""
    doc = {"schema": "splitscope.scenarios", "version": 1, "scenarios": [s.to_json() for s in scenarios]}
    write_text_atomic(session_dir(model) / FILE, json.dumps(doc, indent=1))


def load_scenarios(model: str | os.PathLike[str]) -> list[Scenario]:
    """The model's saved scenarios ([] when none, or when the file cannot be read)."""
    try:
        f = session_dir(model) / FILE
        doc = json.loads(f.read_text(encoding="utf-8")) if f.is_file() else {}
        out: list[Scenario] = []
        for s in doc.get("scenarios", []):
            sc = Scenario.from_json(s)
            taken = {x.name for x in out} | {"today"}
            base, k = sc.name, 2
            while sc.name in taken:  # "today" is the baseline's name; names stay unique
                sc.name, k = f"{base} ({k})", k + 1
            out.append(sc)
        return out
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return []
