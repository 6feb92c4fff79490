"""Our own compound layered layout of a graph whose scopes expand and collapse in place.

Each expanded group is laid out as a box: its visible children (nodes,
collapsed groups drawn as blocks, and expanded subgroups as boxes of their own)
are placed in layers by a Sugiyama-style pass — layering by longest path over
the edges that go forward in topological order, barycentre sweeps to reduce
crossings, then x positions pulled toward their neighbours without overlap.
Boxes are laid out bottom-up and placed top-down, so frames never overlap and
expanding a group only re-lays the boxes that contain it.

Pure Python, no GPL layout library; it runs in a worker thread with progress
and cancel (a job generator like every engine job).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from splitscope.engine.jobs import CancelToken, Progress, gc_paused
from splitscope.engine.model import GraphModel
from splitscope.engine.view.context import LayoutContext
from splitscope.engine.view.hierarchy import Hierarchy

NODE_W, NODE_H = 170.0, 46.0
BLOCK_W, BLOCK_H = 210.0, 64.0
HGAP, VGAP = 28.0, 44.0
PAD, HEADER = 14.0, 30.0
SWEEPS = 4
WRAP_ASPECT = 1.4
"""Width to height a tall chain of layers is wrapped toward (a canvas's shape)."""
WRAP_MIN_LAYERS = 5
COLUMN_GAP = 90.0

KIND_NODE, KIND_BLOCK, KIND_FRAME = 0, 1, 2


def _g(gid: int) -> int:
    """Encode a group id among node ids (nodes >= 0, groups < 0)."""
    return -gid - 1


@dataclass(slots=True)
class Edge:
    """A drawn edge between two visible items, aggregating the graph edges it stands for."""

    src: int
    dst: int
    count: int
    boundary_bytes: int
    """Bytes per inference of the partition-boundary tensors it carries (0: none)."""
    boundary: bool
    tensor: str
    """One tensor it carries (the first), for labels."""


@dataclass(slots=True)
class Layout:
    """Positions of the visible items (scene units), frames of expanded groups, and edges."""

    kind: list[int]
    ref: list[int]
    """Node index (KIND_NODE) or group id (KIND_BLOCK, KIND_FRAME)."""
    x: list[float]
    y: list[float]
    w: list[float]
    h: list[float]
    depth: list[int]
    edges: list[Edge]
    node_item: list[int]
    """For each node: the item that shows it (itself, or the block of its collapsed group)."""
    group_item: dict[int, int]
    """For each visible group (block or frame): its item."""
    expanded: frozenset[int]
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    """Numpy copies of the above for culling and drawing (see ``_arrays``)."""

    @property
    def size(self) -> int:
        """Number of items."""
        return len(self.kind)

    def bounds(self) -> tuple[float, float, float, float]:
        """(x0, y0, x1, y1) of everything."""
        if not self.kind:
            return (0.0, 0.0, 1.0, 1.0)
        return (
            min(self.x),
            min(self.y),
            max(a + b for a, b in zip(self.x, self.w, strict=True)),
            max(a + b for a, b in zip(self.y, self.h, strict=True)),
        )


def _layered(
    n: int, widths: list[float], heights: list[float], rank: list[int], edges: list[tuple[int, int]]
) -> tuple[list[float], list[float]]:
    """Layered placement of n items; returns top-left x, y relative to (0, 0)."""
    if n == 0:
        return [], []
    order = sorted(range(n), key=lambda i: rank[i])
    succ, pred = _forward(n, rank, edges)
    layers = _layers(n, order, succ)
    _order_layers(layers, rank, succ, pred)
    xs = _pack_x(layers, widths)
    for _ in range(2):
        _pull_x(layers, widths, pred, xs)
    return _place_y(layers, widths, heights, xs)


def _forward(n: int, rank: list[int], edges: list[tuple[int, int]]) -> tuple[list[list[int]], list[list[int]]]:
    """Each item's successors and predecessors, every edge pointing from the lower rank to the higher."""
    succ: list[list[int]] = [[] for _ in range(n)]
    pred: list[list[int]] = [[] for _ in range(n)]
    for a, b in edges:
        if rank[a] < rank[b]:
            succ[a].append(b)
            pred[b].append(a)
        elif rank[b] < rank[a]:  # a back edge in the aggregated graph: layer it forward
            succ[b].append(a)
            pred[a].append(b)
    return succ, pred


def _layers(n: int, order: list[int], succ: list[list[int]]) -> list[list[int]]:
    """The items of each layer (longest path from the sources), in rank order."""
    layer = [0] * n
    for i in order:
        li = layer[i] + 1
        for s in succ[i]:
            if layer[s] < li:
                layer[s] = li
    layers: list[list[int]] = [[] for _ in range(max(layer) + 1)]
    for i in order:
        layers[layer[i]].append(i)
    return layers


def _order_layers(layers: list[list[int]], rank: list[int], succ: list[list[int]], pred: list[list[int]]) -> None:
    """Order each layer by the barycentre of its neighbours, :data:`SWEEPS` sweeps down and up (in place)."""
    pos = [0.0] * len(rank)
    for lay in layers:
        for k, i in enumerate(lay):
            pos[i] = float(k)
    n_layers = len(layers)
    for sweep in range(SWEEPS):
        down = sweep % 2 == 0
        seq = range(1, n_layers) if down else range(n_layers - 2, -1, -1)
        nb = pred if down else succ
        for li in seq:
            lay = layers[li]
            if len(lay) < 2:
                continue
            keys = {i: sum(pos[j] for j in nb[i]) / len(nb[i]) if nb[i] else pos[i] for i in lay}
            lay.sort(key=lambda i: (keys[i], rank[i]))
            for k, i in enumerate(lay):
                pos[i] = float(k)


def _pack_x(layers: list[list[int]], widths: list[float]) -> list[float]:
    """Each layer packed left to right and centred on 0."""
    xs = [0.0] * len(widths)
    for lay in layers:
        x = 0.0
        for i in lay:
            xs[i] = x
            x += widths[i] + HGAP
        shift = (x - HGAP) / 2
        for i in lay:
            xs[i] -= shift
    return xs


def _pull_x(layers: list[list[int]], widths: list[float], pred: list[list[int]], xs: list[float]) -> None:
    """Pull each item toward its predecessors' centres without overlap, keeping each layer's order (in place)."""
    for lay in layers[1:]:
        want = []
        for i in lay:
            ps = pred[i]
            c = sum(xs[j] + widths[j] / 2 for j in ps) / len(ps) if ps else xs[i] + widths[i] / 2
            want.append(c - widths[i] / 2)
        # left-to-right: no overlap, keep order
        placed = []
        prev_end = -1e18
        for i, wx in zip(lay, want, strict=True):
            x = max(wx, prev_end)
            placed.append(x)
            prev_end = x + widths[i] + HGAP
        # right-to-left: pull back toward wanted where space allows
        nxt = 1e18
        for k in range(len(lay) - 1, -1, -1):
            i = lay[k]
            x = min(placed[k], nxt - widths[i] - HGAP)
            x = max(x, want[k]) if x < want[k] and x + widths[i] + HGAP <= nxt else x
            placed[k] = x
            nxt = x
        for i, x in zip(lay, placed, strict=True):
            xs[i] = x


def _place_y(
    layers: list[list[int]], widths: list[float], heights: list[float], xs: list[float]
) -> tuple[list[float], list[float]]:
    """Each layer a band below the last, wrapped into columns where the layering is tall and narrow; x and y
    from (0, 0)."""
    n = len(widths)
    ys = [0.0] * n
    band = [max(heights[i] for i in lay) for lay in layers]
    x0 = min(xs)
    span = max(xs[i] + widths[i] for i in range(n)) - x0
    cols = _columns(band, span)
    y, col, col_h = 0.0, 0, (sum(band) + VGAP * len(layers)) / cols
    for li, lay in enumerate(layers):
        if cols > 1 and y > 0 and y + band[li] / 2 > col_h and col < cols - 1:
            y, col = 0.0, col + 1  # wrap: the next layers start a new column to the right
        for i in lay:
            ys[i] = y + (band[li] - heights[i]) / 2
            xs[i] += col * (span + COLUMN_GAP)
        y += band[li] + VGAP
    return [x - x0 for x in xs], ys


def _columns(band: list[float], span: float) -> int:
    """How many columns a tall, narrow layering wraps into, so that it is about :data:`WRAP_ASPECT` times
    as wide as it is high (a chain of 40 blocks is not fitted as a thread down the middle of the screen)."""
    height = sum(band) + VGAP * len(band)
    if len(band) < WRAP_MIN_LAYERS or height < WRAP_ASPECT * span * 1.5:
        return 1
    c = round((WRAP_ASPECT * height / (span + COLUMN_GAP)) ** 0.5)
    return max(1, min(c, len(band) // 3))


def compute_layout(
    ctx: LayoutContext, expanded: set[int] | frozenset[int], cancel: CancelToken | None = None
) -> Generator[Progress, None, Layout]:
    """Lay out the graph with the given groups expanded (the root always is).

    A job generator: yields progress every few hundred boxes, checks ``cancel``.
    """
    exp = frozenset(expanded) | {0}
    boxes = _visible_boxes(ctx.h, exp)
    box_size, local_pos = yield from _lay_boxes(ctx, boxes, exp, cancel)
    items = _Items()
    _place(ctx, boxes, exp, box_size, local_pos, items)
    group_item = items.group_item
    node_item = np.full(len(ctx.gm.nodes), -1, np.int64)
    if items.placed:
        node_item[np.fromiter(items.placed, np.int64, len(items.placed))] = np.fromiter(
            items.placed.values(), np.int64, len(items.placed)
        )
    _show_hidden(ctx, exp, node_item, group_item)
    edges = _visible_edges(ctx, node_item)
    node_item[ctx.folded_nodes] = node_item[ctx.folded_hosts]  # selecting or searching a folded node shows its host
    yield Progress("layout", len(boxes), len(boxes), "Layout done")
    layout = Layout(
        items.kind,
        items.ref,
        items.x,
        items.y,
        items.w,
        items.h,
        items.depth,
        edges,
        node_item.tolist(),
        group_item,
        exp,
    )
    layout.arrays = _arrays(ctx, layout)
    return layout


def _visible_boxes(h: Hierarchy, exp: frozenset[int]) -> list[int]:
    """The expanded groups visible from the root, in pre-order."""
    boxes: list[int] = []
    stack = [0]
    while stack:
        gid = stack.pop()
        boxes.append(gid)
        for c in reversed(h.groups[gid].groups):
            if c in exp:
                stack.append(c)
    return boxes


LocalPos = dict[int, tuple[list[int], list[float], list[float]]]


def _lay_boxes(
    ctx: LayoutContext, boxes: list[int], exp: frozenset[int], cancel: CancelToken | None
) -> Generator[Progress, None, tuple[dict[int, tuple[float, float]], LocalPos]]:
    """Bottom-up: each box laid out relative to its own origin; each box's size and its members' positions."""
    h, groups = ctx.h, ctx.h.groups
    total = len(boxes)
    box_size: dict[int, tuple[float, float]] = {}
    local_pos: LocalPos = {}
    for k, gid in enumerate(reversed(boxes)):
        if cancel is not None and k % 64 == 0:
            cancel.raise_if_cancelled()
        if k % 256 == 0:
            yield Progress("layout", k, total, f"Laying out {total} groups")
        g = groups[gid]
        members = [_g(c) for c in g.groups] + list(g.nodes)
        idx = {m: i for i, m in enumerate(members)}
        widths, heights, rank = [], [], []
        for m in members:
            if m >= 0:
                w, hh, r = NODE_W, NODE_H, h.topo_pos[m]
            else:
                cid = -m - 1
                w, hh = box_size[cid] if cid in exp else (BLOCK_W, BLOCK_H)
                r = groups[cid].first
            widths.append(w)
            heights.append(hh)
            rank.append(r)
        edges = [(idx[a], idx[b]) for (a, b) in ctx.local_edges(gid)]
        xs, ys = _layered(len(members), widths, heights, rank, edges)
        local_pos[gid] = (members, xs, ys)
        if members:
            w = max(x + wd for x, wd in zip(xs, widths, strict=True)) + 2 * PAD
            hh = max(y + ht for y, ht in zip(ys, heights, strict=True)) + 2 * PAD + HEADER
        else:
            w, hh = BLOCK_W, BLOCK_H
        box_size[gid] = (w, hh)
    return box_size, local_pos


class _Items:
    """A layout's items as they are placed: one entry per frame, block or node in each column."""

    def __init__(self) -> None:
        self.kind: list[int] = []
        self.ref: list[int] = []
        self.x: list[float] = []
        self.y: list[float] = []
        self.w: list[float] = []
        self.h: list[float] = []
        self.depth: list[int] = []
        self.group_item: dict[int, int] = {}
        self.placed: dict[int, int] = {}
        """The item of each node placed in an expanded group (the others are shown by a block, or folded)."""

    def add(self, kind: int, ref: int, x: float, y: float, w: float, h: float, depth: int) -> int:
        self.kind.append(kind)
        self.ref.append(ref)
        self.x.append(x)
        self.y.append(y)
        self.w.append(w)
        self.h.append(h)
        self.depth.append(depth)
        return len(self.kind) - 1


def _place(
    ctx: LayoutContext,
    boxes: list[int],
    exp: frozenset[int],
    box_size: dict[int, tuple[float, float]],
    local_pos: LocalPos,
    items: _Items,
) -> None:
    """Top-down: every frame, block and node at its absolute position."""
    groups = ctx.h.groups
    origin: dict[int, tuple[float, float]] = {0: (0.0, 0.0)}
    for gid in boxes:
        ox, oy = origin[gid]
        if gid != 0:
            bw, bh = box_size[gid]
            items.group_item[gid] = items.add(KIND_FRAME, gid, ox, oy, bw, bh, groups[gid].depth)
        members, xs, ys = local_pos[gid]
        bx, by = (ox + PAD, oy + PAD + HEADER) if gid != 0 else (ox, oy)
        for m, x, y in zip(members, xs, ys, strict=True):
            if m >= 0:
                items.placed[m] = items.add(KIND_NODE, m, bx + x, by + y, NODE_W, NODE_H, groups[gid].depth + 1)
                continue
            cid = -m - 1
            if cid in exp:
                origin[cid] = (bx + x, by + y)
            else:
                items.group_item[cid] = items.add(KIND_BLOCK, cid, bx + x, by + y, BLOCK_W, BLOCK_H, groups[cid].depth)


def _show_hidden(ctx: LayoutContext, exp: frozenset[int], node_item: np.ndarray, group_item: dict[int, int]) -> None:
    """Nodes inside collapsed groups are shown by their outermost collapsed ancestor's block (in place): each group's
    first collapsed group on its path from the root, found for every group at once."""
    table = ctx.path_table
    n = len(table)
    expanded = np.ones(n + 1, bool)  # the last entry stands for the padding: never a collapsed group
    expanded[:n] = False
    expanded[np.fromiter((g for g in exp if 0 <= g < n), np.int64)] = True
    rows = np.where(table >= 0, table, n)
    collapsed = ~expanded[rows]
    first = rows[np.arange(n), collapsed.argmax(axis=1)]
    item_of = np.full(n + 1, -1, np.int64)
    if group_item:
        item_of[np.fromiter(group_item, np.int64, len(group_item))] = np.fromiter(
            group_item.values(), np.int64, len(group_item)
        )
    shown = np.where(collapsed.any(axis=1), item_of[first], -1)
    hidden = (node_item < 0) & ~ctx.folded
    node_item[hidden] = shown[ctx.node_group[hidden]]


def _visible_edges(ctx: LayoutContext, node_item: np.ndarray | list[int]) -> list[Edge]:
    """The graph's edges between different items, aggregated per pair of items (in the order the graph's edges first
    give each pair), in numpy: a relayout of a million nodes reads a million and a half edges."""
    if not len(ctx.edge_src):
        return []
    item = np.asarray(node_item, np.int64)
    a, b = item[ctx.edge_src], item[ctx.edge_dst]
    idx = np.flatnonzero(ctx.edge_live & (a != b) & (a >= 0) & (b >= 0))
    if not idx.size:
        return []
    a, b = a[idx], b[idx]
    _, first, inv, count = np.unique(
        a * (int(item.max()) + 1) + b, return_index=True, return_inverse=True, return_counts=True
    )
    inv = inv.reshape(-1)
    bb, is_b = np.zeros(len(first), np.int64), np.zeros(len(first), bool)
    if ctx.edge_bytes is not None and ctx.edge_boundary is not None:
        np.add.at(bb, inv, ctx.edge_bytes[idx])
        np.logical_or.at(is_b, inv, ctx.edge_boundary[idx])
    table, rows, offsets = ctx.pairs.table, ctx.pairs.rows, ctx.pairs.offsets
    return [
        Edge(int(a[f]), int(b[f]), int(count[k]), int(bb[k]), bool(is_b[k]), table[rows[offsets[int(idx[f])]]])
        for k, f in ((k, first[k]) for k in np.argsort(first, kind="stable").tolist())
    ]


def _arrays(ctx: LayoutContext, L: Layout) -> dict[str, np.ndarray]:
    """Numpy views of a layout for culling and drawing, built in the worker, not on the UI thread."""
    from splitscope.engine.model import Status

    x = np.asarray(L.x, dtype=np.float64)
    y = np.asarray(L.y, dtype=np.float64)
    w = np.asarray(L.w, dtype=np.float64)
    h = np.asarray(L.h, dtype=np.float64)
    kind = np.asarray(L.kind, dtype=np.int8)
    nodes = ctx.gm.nodes
    groups = ctx.h.groups
    status = np.fromiter(
        (
            (nodes[r].status is Status.PLUGIN) if k == KIND_NODE else (groups[r].plugin > 0)
            for k, r in zip(L.kind, L.ref, strict=True)
        ),
        dtype=np.int8,
        count=L.size,
    )
    # Engine partitions at the level shown: the lowest and highest partition among each item's nodes.
    part_lo = np.full(L.size, -1, dtype=np.int32)
    part_hi = np.full(L.size, -1, dtype=np.int32)
    parts = ctx.gm.partitions
    if len(parts) > 1 and L.size:
        node_part = np.full(len(nodes), -1, dtype=np.int64)
        for k, part in enumerate(parts):
            node_part[np.asarray(part.nodes, dtype=np.int64)] = k
        items = np.asarray(L.node_item, dtype=np.int64)
        ok = (node_part >= 0) & (items >= 0)
        lo = np.full(L.size, np.iinfo(np.int64).max, dtype=np.int64)
        hi = np.full(L.size, -1, dtype=np.int64)
        np.minimum.at(lo, items[ok], node_part[ok])
        np.maximum.at(hi, items[ok], node_part[ok])
        has = hi >= 0
        part_lo[has], part_hi[has] = lo[has], hi[has]
    src = np.fromiter((e.src for e in L.edges), dtype=np.int64, count=len(L.edges))
    dst = np.fromiter((e.dst for e in L.edges), dtype=np.int64, count=len(L.edges))
    return {
        "x": x,
        "y": y,
        "w": w,
        "h": h,
        "kind": kind,
        "depth": np.asarray(L.depth, dtype=np.int32),
        "status": status,
        "part_lo": part_lo,
        "part_hi": part_hi,
        "ex0": x[src] + w[src] / 2,
        "ey0": y[src] + h[src],
        "ex1": x[dst] + w[dst] / 2,
        "ey1": y[dst],
        "boundary": np.fromiter((e.boundary for e in L.edges), dtype=bool, count=len(L.edges)),
    }


FIRST_VIEW_ITEMS = 150
"""The first view shows at most about this many items: a decision to read, not a hairball."""
MIN_LABEL_SCALE = 0.72
"""Scale at which block and node names are 9 px or more on screen (9.5 pt bold is 12.7 px at scale 1, 96 dpi)."""


OPEN_FROM = 200
"""A model of this many nodes or more never opens as fewer than 8 items."""


def expansion_levels(h: Hierarchy, budget: int = FIRST_VIEW_ITEMS) -> list[set[int]]:
    """Expansions from shallow to deep: the root alone; then, while fewer than 8 items show, the largest
    closed group (past the budget: a view of one box says nothing); then level by level, breadth-first,
    while the visible item count stays within ``budget``."""
    expanded: set[int] = {0}
    visible = len(h.root.groups) + len(h.root.nodes)
    levels = [set(expanded)]
    while visible < 8:
        shut = sorted(c for e in expanded for c in h.groups[e].groups if c not in expanded)  # in id order, as made
        closed = [g for c in shut if len((g := h.groups[c]).groups) + len(g.nodes) <= 4000]
        if not closed:
            break
        best = max(closed, key=lambda g: g.size)
        expanded.add(best.id)
        visible += len(best.groups) + len(best.nodes) - 1
        levels.append(set(expanded))
    frontier = sorted(
        (c for g in expanded for c in h.groups[g].groups if c not in expanded), key=lambda c: h.groups[c].first
    )
    while frontier:
        nxt = []
        for gid in frontier:
            g = h.groups[gid]
            extra = len(g.groups) + len(g.nodes) - 1
            if visible + extra <= budget:
                expanded.add(gid)
                visible += extra
                nxt.extend(g.groups)
        if expanded != levels[-1]:
            levels.append(set(expanded))
        frontier = nxt
    return levels


def fitted_scale(layout: Layout, viewport: tuple[int, int], margin: float = 40, top: float = 72) -> float:
    """The scale at which ``layout`` fits a viewport of ``(width, height)`` pixels below a ``top`` band (the
    legend), at most 1.5, as the canvas's Fit."""
    x0, y0, x1, y1 = layout.bounds()
    return min((viewport[0] - margin) / max(x1 - x0, 1.0), (viewport[1] - margin - top) / max(y1 - y0, 1.0), 1.5)


def first_layout(
    ctx: LayoutContext, viewport: tuple[int, int] | None, cancel: CancelToken | None = None
) -> Generator[Progress, None, Layout]:
    """The first view: the deepest expansion whose labels stay readable when the whole graph is fitted
    into ``viewport``, but never one of fewer items than ``few_items`` says (a root that holds nearly everything,
    a Hugging Face export's ``model`` or a JAX export's one function, or two runs of layers, ``model.0 … model.15``,
    are opened: one or two boxes say nothing; the canvas then opens at a readable zoom on the part that decides).
    If none is readable, the shallowest with that many items. Without a viewport, the deepest in budget."""
    levels = expansion_levels(ctx.h)
    if viewport is None:
        return (yield from compute_layout(ctx, levels[-1], cancel))
    layout = None
    enough: Layout | None = None
    need = few_items(len(ctx.gm.nodes))
    for exp in reversed(levels):
        layout = yield from compute_layout(ctx, exp, cancel)
        items = sum(1 for k in layout.kind if k != KIND_FRAME)  # boxes and nodes; a frame only holds them
        if items < need and enough is not None:
            return enough  # fewer items say less than a view that scrolls
        if fitted_scale(layout, viewport) >= MIN_LABEL_SCALE:
            return layout
        if items >= need:
            enough = layout
    assert layout is not None
    return enough if enough is not None else layout


def few_items(nodes: int) -> int:
    """The fewest items a first view may show of a model of ``nodes`` nodes (fewer, where a deeper level has
    more): 8 from ``OPEN_FROM`` nodes, 3 below."""
    return 8 if nodes >= OPEN_FROM else 3


@dataclass(slots=True)
class View:
    """Everything the canvas draws: the model, its group tree, the layout context and a layout."""

    gm: GraphModel
    hier: Hierarchy
    ctx: LayoutContext
    layout: Layout
    stats: dict[str, Any] | None = None
    """Panel figures (splitscope.engine.report.stats.panel_stats), when the analysis is final."""
    crumbs: tuple[str, ...] = ()
    """The way into the body this view shows (``If '/post/If' › then_branch``, ...); () for the main graph."""
    owner: tuple[int, str] | None = None
    """For a body: the index of the node that owns it in the graph it was opened from, and the body's name."""


def prepare_view(
    gm: GraphModel,
    expanded: set[int] | None = None,
    cancel: CancelToken | None = None,
    viewport: tuple[int, int] | None = None,
    fold: bool = True,
    like: View | None = None,
) -> Generator[Progress, None, View]:
    """Build the group tree and the first layout of an analysed model (a job generator); ``like``, a view of the same
    file (its preview), gives the groups to open: those whose scope path was open there."""
    from splitscope.engine.view.hierarchy import build_hierarchy

    yield Progress("layout", 0, 0, "Grouping nodes by scope")
    with gc_paused():
        order = gm.order
        hier = build_hierarchy(gm, order, fold=fold)
        if cancel is not None:
            cancel.raise_if_cancelled()
        if like is not None and expanded is None:
            was = like.hier
            opened = {was.full_label(g) for g in like.layout.expanded if 0 <= g < len(was.groups)}
            expanded = {g.id for g in hier.groups if g.parent != -1 and hier.full_label(g.id) in opened}
        ctx = LayoutContext(gm, hier)
        if expanded is not None:
            layout = yield from compute_layout(ctx, expanded, cancel)
        else:
            layout = yield from first_layout(ctx, viewport, cancel)
    return View(gm, hier, ctx, layout)


def relayout(view: View, expanded: set[int], cancel: CancelToken | None = None) -> Generator[Progress, None, View]:
    """A new layout of the same model with other groups expanded (a job generator)."""
    with gc_paused():
        layout = yield from compute_layout(view.ctx, expanded, cancel)
    return View(view.gm, view.hier, view.ctx, layout, crumbs=view.crumbs, owner=view.owner)
