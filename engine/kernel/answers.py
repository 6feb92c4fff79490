"""The real parser's answers with generated plugins registered, read from the kernel workbench's results: light (no
ONNX, no numpy), for the planner, the report and the window's colours."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def parser_answers(kernels: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The real parser's answer with a generated plugin registered, by node label, from the workbench's results
    (each a kernel job's JSON; a later one for the same node wins): what the planner counts instead of its
    estimate, and what the canvas colours after."""
    out: dict[str, dict[str, Any]] = {}
    for doc in kernels:
        answer = (doc.get("plugin") or {}).get("parser")
        if answer and answer.get("how") in ("taken", "mapped", "not-found"):
            out.update({label: answer for label in doc.get("nodes", [])})
    return out
