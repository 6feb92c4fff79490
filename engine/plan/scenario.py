"""What-if scenarios: a plan for every custom node (and every pre/post-processing run at the graph's ends),
and what the split and the latency become.

Plans:

- ``write-plugin``: write a TensorRT plugin (IPluginV3); it runs inside the engine;
- ``shipped-plugin``: use a plugin TensorRT ships (:mod:`.catalog`), inside the engine;
- ``replace``: replace the node with ops TensorRT supports, inside the engine;
- ``outside-gpu``: run it outside the engine on the GPU (CUDA, DALI); the engine splits around it. This is
  *today* for a plugin node (ONNX Runtime's TensorRT provider hands it to CUDA);
- ``host``: run it on the host; the engine splits and its tensors cross PCIe both ways;
- ``engine``: (pre/post-processing runs only) leave it in the engine, *today* for a run TensorRT takes.

Partitions and boundary bytes are recomputed exactly (the same partitioning as the analysis, with the new
inside/outside of each node). Latency needs a profile and is a range, each figure with its source: a node
brought into the engine costs between its speed-of-light bound at the GPU's peaks (a perfect kernel) and its
measured time (a kernel no better than today's); a node left outside costs its measured time; host copies
cost their bytes over the measured pinned copy bandwidth (or the link's nominal peak, said so). Engine-switch
overheads beyond the copies are not priced, and are said not to be.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from splitscope.engine.model import GraphModel, Role, Status
from splitscope.engine.plan.catalog import match
from splitscope.engine.plan.outcome import LatencyPart, LatencyRange, ScenarioOutcome
from splitscope.engine.runtime.results import ProfileDoc
from splitscope.engine.split.partitions import find_partitions
from splitscope.engine.text import plural

PLANS = {
    "outside-gpu": "run outside the engine on the GPU (CUDA / DALI)",
    "write-plugin": "write a TensorRT plugin",
    "shipped-plugin": "use a plugin TensorRT ships",
    "replace": "replace with supported ops",
    "host": "run on the host",
    "engine": "leave it in the engine",
}
IN_ENGINE = frozenset({"write-plugin", "shipped-plugin", "replace", "engine"})
ASSUMED_PCIE_GBPS = 25.0
"""Host copy bandwidth when nothing was measured and the GPU is unknown: PCIe 4.0 x16's practical pinned rate."""


@dataclass(slots=True)
class Item:
    """Something the user plans for: one plugin node, or a pre/post-processing run at the graph's ends."""

    key: str
    """The node's name, or ``pre:<first node>`` / ``post:<first node>`` for a run."""
    label: str
    nodes: list[int]
    kind: str
    """``plugin``, ``pre-processing`` or ``post-processing``."""
    reason: str
    options: list[str]
    today: str
    matches: list[dict[str, Any]] = field(default_factory=list)
    flops: int = 0
    bytes: int = 0
    remedy: str = ""

    @property
    def suggested(self) -> str:
        """The plan to start from: a shipped plugin that serves it exactly, a rewrite where the remedy says so,
        else a plugin of our own (pre/post-processing runs: leave them where they are)."""
        if self.kind != "plugin":
            return self.today
        if self.matches and self.matches[0]["kind"] in ("exact", "op"):
            return "shipped-plugin"
        if self.remedy.startswith(("rewrite", "cast", "convert", "fix", "fold", "run an ONNX optimizer", "take ")):
            return "replace"
        return "write-plugin"

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "label": self.label,
            "kind": self.kind,
            "reason": self.reason,
            "remedy": self.remedy,
            "suggested": self.suggested,
            "options": self.options,
            "today": self.today,
            "matches": self.matches,
            "nodes": len(self.nodes),
            "flops": self.flops,
            "bytes": self.bytes,
        }


@dataclass(slots=True)
class Scenario:
    name: str
    plans: dict[str, str] = field(default_factory=dict)
    """Item key → plan; items not named keep today's."""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "plans": dict(self.plans)}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Scenario:
        return cls(str(doc["name"]), {str(k): str(v) for k, v in dict(doc.get("plans", {})).items()})


def items(gm: GraphModel) -> list[Item]:
    """The plugin nodes of the main graph, and its pre/post-processing runs that touch a graph input or
    output (maximal connected runs of nodes with that role)."""
    nodes = gm.nodes
    out: list[Item] = []
    pos = np.arange(len(nodes), dtype=np.int64)  # topological position (the node's index where not in the order)
    order = np.asarray(gm.order, dtype=np.int64)
    pos[order] = np.arange(len(order))
    for role, kind in ((Role.PRE_PROCESSING, "pre-processing"), (Role.POST_PROCESSING, "post-processing")):
        members = set(nodes.with_role(role))  # a column read in numpy: a million nodes hold no thread long
        for run in _runs(gm, members):
            if not _touches_ends(gm, run):
                continue
            first = nodes[min(run, key=lambda i: pos[i])]
            if any(nodes[i].status is Status.PLUGIN for i in run):  # its custom nodes are planned one by one
                continue
            out.append(
                Item(
                    f"{kind.split('-')[0]}:{first.name or first.index}",
                    f"{kind} ({plural(len(run), 'node')} from {first.label})",
                    sorted(run),
                    kind,
                    f"{kind} TensorRT takes today; it could move out to DALI or the host",
                    ["engine", "outside-gpu", "host"],
                    "engine",
                    flops=sum(nodes[i].flops or 0 for i in run),
                    bytes=sum(nodes[i].bytes or 0 for i in run),
                )
            )
    for i in nodes.with_status(Status.PLUGIN):
        n = nodes[i]
        found = [m.to_json() for m in match(n.op_type, n.domain)]
        opts = ["outside-gpu", "write-plugin"] + (["shipped-plugin"] if found else []) + ["replace", "host"]
        out.append(
            Item(
                n.name or str(n.index),
                f"{n.op_type} {n.name}".strip(),
                [n.index],
                "plugin",
                n.cause or n.reason,
                opts,
                "outside-gpu",
                found,
                n.flops or 0,
                n.bytes or 0,
                n.remedy,
            )
        )
    return out


def _runs(gm: GraphModel, members: set[int]) -> list[set[int]]:
    preds, succs = gm.graph.adj.preds, gm.graph.adj.succs
    seen: set[int] = set()
    runs = []
    for start in sorted(members):
        if start in seen:
            continue
        run, stack = set(), [start]
        while stack:
            i = stack.pop()
            if i in run:
                continue
            run.add(i)
            stack.extend(j for j in (*preds[i], *succs[i]) if j in members and j not in run)
        seen |= run
        runs.append(run)
    return runs


def _touches_ends(gm: GraphModel, run: set[int]) -> bool:
    g = gm.graph
    ends = {t for t in g.inputs} | {t for t in g.outputs}
    return any(t in ends for i in run for t in (*g.nodes[i].inputs, *g.nodes[i].outputs))


class Answer(Protocol):
    """The real parser's answer for a node with a generated plugin registered (the kernel workbench's
    :class:`~splitscope.engine.kernel.results.ParserAnswer`): ``taken``, ``mapped``, ``not-found``."""

    how: str


def evaluate(
    gm: GraphModel,
    scenario: Scenario,
    profile: ProfileDoc | None = None,
    all_items: list[Item] | None = None,
    answers: Mapping[str, Answer] | None = None,
) -> ScenarioOutcome:
    """The split and the cost under ``scenario``: partitions, boundary bytes, host copies and (with a profile)
    the estimated latency range. ``answers``:
    the real parser's answer with a generated plugin registered, by node label
    (:func:`splitscope.engine.kernel.plugin.parser_answers`), counted instead of the estimate."""
    answers = answers or {}
    its = all_items if all_items is not None else items(gm)
    nodes = gm.nodes
    inside = [n.status is Status.DELEGATE for n in nodes]
    host: set[int] = set()
    chosen: dict[str, str] = {}
    basis: dict[str, str] = {}
    for it in its:
        plan = scenario.plans.get(it.key, it.today)
        if plan not in it.options:
            plan = it.today
        chosen[it.key] = plan
        said = [answers.get(nodes[i].label) for i in it.nodes]
        if plan == "write-plugin" and all(said):
            basis[it.key] = "parser: " + "/".join(sorted({a.how for a in said if a}))
        elif plan == "write-plugin":
            basis[it.key] = "estimate"
        for i, answer in zip(it.nodes, said, strict=True):
            inside[i] = plan in IN_ENGINE
            if plan == "write-plugin" and answer is not None and answer.how == "not-found":
                inside[i] = False  # the real parser did not map the node to the plugin: it stays outside
            if plan == "host":
                host.add(i)
    parts = find_partitions(gm.graph, gm.order, gm.dims, inside)
    seen: dict[str, int] = {}
    for p in parts:
        for t in p.boundary_tensors:
            seen[t.name] = t.bytes or 0
    d2h, h2d = _host_bytes(gm, host)
    gbps, gbps_source = _copy_rate(profile)
    back = _copy_rate(profile, back=True)[0] if profile else gbps
    copy_ms = round((h2d / gbps + d2h / back) / 1e9 * 1e3, 6)
    return ScenarioOutcome(
        name=scenario.name,
        plans=chosen,
        partitions=len(parts),
        boundary_bytes=sum(seen.values()),
        boundary_tensors=len(seen),
        host_bytes_d2h=d2h,
        host_bytes_h2d=h2d,
        host_copy_ms=copy_ms,
        copy_gbps=gbps,
        copy_source=gbps_source,
        custom_work=tuple(sorted(k for k, v in chosen.items() if v == "write-plugin")),
        plugin_basis=basis,
        delegated_flops_share=_share(gm, inside),
        latency=_latency(gm, its, chosen, profile, copy_ms) if profile else None,
    )


def _share(gm: GraphModel, inside: list[bool]) -> float:
    total = sum(n.flops or 0 for n in gm.nodes)
    return round(sum(n.flops or 0 for n, ok in zip(gm.nodes, inside, strict=True) if ok) / total, 4) if total else 0.0


def _host_bytes(gm: GraphModel, host: set[int]) -> tuple[int, int]:
    """Bytes per inference that host nodes pull from the GPU (device to host) and push back to it (host to
    device), each tensor once. A model input a host node reads is on the host already, and a model output it
    makes stays there: neither is copied, nor is a weight, wherever the model keeps it."""
    if not host:
        return 0, 0
    from splitscope.engine.split.partitions import constant_nodes

    tensors = gm.graph.tensors
    const = constant_nodes(gm.graph, gm.order)  # a Constant node's output is a weight, as an initializer is
    d2h = h2d = 0
    seen: set[str] = set()
    for i in host:
        n = gm.nodes[i]
        for name in n.inputs:
            t = tensors.get(name) if name else None
            if t is None or name in seen or t.is_initializer or t.producer is None or const[t.producer]:
                continue
            if t.producer not in host:
                seen.add(name)
                d2h += t.nbytes(gm.dims) or 0
        for name in n.outputs:
            t = tensors.get(name) if name else None
            if t is None or name in seen:
                continue
            if any(c not in host for c in t.consumers):
                seen.add(name)
                h2d += t.nbytes(gm.dims) or 0
    return d2h, h2d


def _copy_rate(profile: ProfileDoc | None, back: bool = False) -> tuple[float, str]:
    """GB/s of pinned copies host to device (``back``: device to host): measured, else the link's peak."""
    if profile:
        rates = [m.d2h_pinned_gbps if back else m.h2d_pinned_gbps for m in profile.copies.measured]
        if any(rates):
            return max(rates), f"measured pinned host-to-device copies on {profile.device or 'the GPU'}"
        gpu = profile.gpu
        if gpu is not None and gpu.pcie_peak:
            return round(gpu.pcie_peak / 1e9, 2), f"estimate: the nominal peak of {gpu.name or 'the GPU'}'s link"
    return ASSUMED_PCIE_GBPS, "estimate: 25 GB/s assumed (PCIe 4.0 x16, pinned; no copy was measured)"


def _latency(
    gm: GraphModel, its: list[Item], chosen: dict[str, str], profile: ProfileDoc, host_copy_ms: float
) -> LatencyRange:
    """Today's measured latency, less what each item's plan changes: a range with the source of each part."""
    today = profile.latency.mean
    by_name = {r.name: r for r in profile.per_node}
    node_total = sum(r.ms for r in profile.per_node)
    # Per-node times come from separate profiled runs; where they add up to more than the timed latency
    # (the profiler's own overhead, a busy machine), they are scaled into it, so no plan saves more than all.
    fit = min(1.0, today / node_total) if node_total > 0 else 1.0
    low = high = today
    parts: list[LatencyPart] = []
    for it in its:
        plan = chosen[it.key]
        rows = [by_name.get(gm.nodes[i].name) for i in it.nodes]
        measured = sum(r.ms for r in rows if r) * fit
        sol = sum(r.sol_ms for r in rows if r and r.sol_ms is not None)
        has_sol = all(r and r.sol_ms is not None for r in rows)
        if plan == it.today or plan == "outside-gpu" or not any(rows):
            continue
        if plan in IN_ENGINE:
            lo_ms = min(sol, measured) if has_sol else 0.0
            low -= measured - lo_ms
            source = (
                "measured node time"
                + (f" (scaled by {fit:.2f} into the timed latency)" if fit < 1 else "")
                + (
                    "; the low end is the speed-of-light bound at the GPU's peaks"
                    if has_sol
                    else "; no GPU peaks known, so the low end assumes it is free"
                )
            )
            parts.append(LatencyPart(it.key, plan, round(measured, 4), source, round(lo_ms, 4), round(measured, 4)))
        elif plan == "host":
            on_cpu = profile.backend == "ort-cpu"
            source = (
                "measured on the CPU"
                if on_cpu
                else "its time on the host is not measured (profile with ort-cpu to price it)"
            )
            parts.append(LatencyPart(it.key, plan, round(measured, 4), source))
    low += host_copy_ms
    high += host_copy_ms
    return LatencyRange(
        today_ms=round(today, 4),
        low_ms=round(max(low, 0.0), 4),
        high_ms=round(high, 4),
        saves_at_most_ms=round(today - max(low, 0.0), 4),
        parts=tuple(parts),
        source=f"measured mean latency of {profile.backend or '?'} on {profile.device or '?'}",
        not_priced="engine switches beyond the copies, and kernel launches saved by fusion",
    )


def fmt_ms(v: float) -> str:
    """Milliseconds as people read them: ``0.38 ms``, ``6.1 ms``, ``120 ms`` (never ``1.2e+02``)."""
    if v >= 100:
        return f"{v:.0f} ms"
    if v >= 10:
        return f"{v:.1f} ms".replace(".0 ms", " ms")
    return f"{v:.2g} ms" if v >= 0.01 else f"{v * 1000:.2g} µs"


def range_text(lat: LatencyRange) -> str:
    """``0.97 ms – 1.5 ms``, or one figure when the plans change nothing priced."""
    return fmt_ms(lat.high_ms) if lat.exact else f"{fmt_ms(lat.low_ms)} – {fmt_ms(lat.high_ms)}"


def decision(its: list[Item], today: ScenarioOutcome | None, mine: ScenarioOutcome | None = None) -> str:
    """The decision in one sentence, for people who will not read a graph: how many ops need custom CUDA,
    whether TensorRT ships plugins for them, and what the chosen scenario changes against today."""
    plugins = [it for it in its if it.kind == "plugin"]
    if not plugins:
        return "TensorRT takes every node: no custom CUDA is needed."
    n = len(plugins)
    parts = [f"{n} ops need custom CUDA" if n > 1 else "1 op needs custom CUDA"]
    ships = sum(1 for it in plugins if it.matches and it.matches[0]["kind"] in ("exact", "op"))
    related = sum(1 for it in plugins if it.matches and it.matches[0]["kind"] == "related")
    if ships:
        parts.append(
            "TensorRT already ships a plugin for " + ("it" if n == 1 else "all of them" if ships == n else f"{ships}")
        )
    elif related:
        parts.append(f"TensorRT ships a related plugin for {'it' if n == 1 else related}")
    if mine is not None and today is not None and mine.name != today.name:
        effects = []
        gone = today.partitions - mine.partitions
        if gone > 0:
            effects.append(f"removes {gone} partition boundar{'y' if gone == 1 else 'ies'}")
        elif gone < 0:
            effects.append(f"adds {-gone} partition{'s' if gone < -1 else ''}")
        lat = mine.latency
        if lat and lat.saves_at_most_ms >= 0:
            effects.append(f"saves at most {fmt_ms(lat.saves_at_most_ms)} of {fmt_ms(lat.today_ms)}")
        elif lat:
            effects.append(f"adds at least {fmt_ms(-lat.saves_at_most_ms)} to {fmt_ms(lat.today_ms)}")
        elif mine.boundary_bytes != today.boundary_bytes:
            from splitscope.engine.text import format_bytes

            effects.append(
                f"takes the bytes crossing engines from {format_bytes(today.boundary_bytes)} to "
                f"{format_bytes(mine.boundary_bytes)} per inference"
            )
        work = len(mine.custom_work)
        if work:
            effects.insert(0, f"writes {work} plugin{'s' if work > 1 else ''}")
        if effects:
            parts.append(
                f"{mine.name} " + ", ".join(effects[:-1]) + (" and " if len(effects) > 1 else "") + effects[-1]
            )
    return "; ".join(parts) + "."


def work_share(gm: GraphModel, profile: ProfileDoc | None = None) -> tuple[float | None, str]:
    """The share of the work TensorRT takes, said honestly: of the measured node time when a profile says
    it, else of the FLOPs, naming the custom nodes whose FLOPs are unknown (then it is an upper bound)."""
    from splitscope.engine.report.stats import split_summary

    rows = profile.per_node if profile is not None else ()
    total = sum(r.ms for r in rows)
    if total > 0 and profile is not None:
        mine = sum(r.ms for r in rows if r.status == "delegate")
        return mine / total, f"of the measured node time runs in TensorRT's part ({profile.backend})"
    share = split_summary(gm)["delegate"]["flops_share"]
    unknown = sum(1 for n in gm.nodes if n.status is Status.PLUGIN and not n.flops)
    if unknown:
        return share, (
            f"of the known FLOPs TensorRT takes ({plural(unknown, 'custom node')} of unknown cost: "
            "profile to weigh them)"
        )
    return share, "of the work (FLOPs) TensorRT takes"
