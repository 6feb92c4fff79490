"""Why a node needs custom work, in a few words, and the fix that removes most such nodes.

The table of causes and fixes is data (``resources/remedies.json``, each entry with its source);
the first entry that matches a node wins. Shown beside the reason in the inspector, the ops table
and the CLI summary, and used to group plugin nodes by cause in the headline.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

from splitscope.engine.model import GraphModel, Node, Status
from splitscope.engine.sample import resource

REMEDIES_PATH = resource("remedies.json")


@dataclass(frozen=True, slots=True)
class Remedy:
    """One entry of the remedies table."""

    id: str
    cause: str
    remedy: str
    source: str
    op_types: frozenset[str]
    reasons: tuple[str, ...]
    custom_domain: bool

    def matches(self, node: Node) -> bool:
        """Whether this entry explains ``node``."""
        if self.custom_domain and node.is_custom_domain:
            return True
        if self.op_types and node.op_type in self.op_types and not node.is_custom_domain:
            return True
        return any(r in node.reason for r in self.reasons)


@functools.cache
def load_remedies(path: Path = REMEDIES_PATH) -> tuple[Remedy, ...]:
    """The remedies table, in matching order."""
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for e in data["remedies"]:
        m = e.get("match", {})
        out.append(
            Remedy(
                e["id"],
                e["cause"],
                e["remedy"],
                e.get("source", ""),
                frozenset(m.get("op_types", ())),
                tuple(m.get("reason", ())),
                bool(m.get("custom_domain", False)),
            )
        )
    return tuple(out)


def remedy_for(node: Node) -> Remedy | None:
    """The first entry of the table that explains a plugin node, or None."""
    if node.status is not Status.PLUGIN:
        return None
    return next((r for r in load_remedies() if r.matches(node)), None)


def _inner_culprit(node: Node) -> Node | None:
    """For a node rejected because of its body (If/Loop/Scan, a local function): the first body node
    TensorRT rejects that is not itself such a node."""
    bodies = [*node.subgraphs.values(), *([node.function] if node.function is not None else [])]
    for body in bodies:
        for _, inner in body.walk():
            if inner.status is Status.PLUGIN and not inner.subgraphs and inner.function is None:
                return inner
    return None


def explain(node: Node) -> tuple[str, str]:
    """(cause, remedy) of a plugin node; a node rejected for its body takes its body node's, said so."""
    r = remedy_for(node)
    if r is None:
        return "", ""
    if r.id == "body":
        inner = _inner_culprit(node)
        ir = remedy_for(inner) if inner is not None else None
        if inner is not None and ir is not None and ir.id != "body":
            kind = "function body" if node.function is not None and not node.subgraphs else f"{node.op_type} body"
            return f"{ir.cause} in its {kind}", f"{ir.remedy} ({inner.label} in the {kind})"
    return r.cause, r.remedy


def assign_remedies(gm: GraphModel) -> None:
    """Set ``cause`` and ``remedy`` on every plugin node of the main graph (cleared on the others)."""
    for node in gm.nodes:
        node.cause, node.remedy = explain(node)
