"""Figures as self-contained SVG text (no fonts or images fetched, no Qt): the split overview from the same
layout as the canvas's first view (scope blocks, not every node, so a 50k-node model stays a page), bar
charts with ranges, the roofline, and where the time goes. Colours are the app's light palette (Okabe-Ito
status colours), with a shape cue for status as on the canvas."""

from __future__ import annotations

import math
from html import escape
from typing import Any

from splitscope.engine.palette import colour_table, theme
from splitscope.engine.view.layout import KIND_BLOCK, KIND_FRAME, KIND_NODE, View

FONT = "font-family:'DejaVu Sans','Segoe UI',Helvetica,Arial,sans-serif"
_LIGHT = theme(False)
DELEGATE_FILL, DELEGATE_LINE = _LIGHT["status_fill"]["delegate"], _LIGHT["status_border"]["delegate"]
PLUGIN_FILL, PLUGIN_LINE = _LIGHT["status_fill"]["plugin"], _LIGHT["status_border"]["plugin"]
FRAME_FILL, FRAME_LINE = _LIGHT["frame_fill"][0], _LIGHT["frame_border"]
EDGE, BOUNDARY, TEXT, MUTED = _LIGHT["edge"], _LIGHT["boundary"], _LIGHT["text"], _LIGHT["muted"]
PARTS = tuple(colour_table()["partitions"])
"""The canvas's engine-partition colours (the same palette entry), so engine 1 is green in both."""
BARS = tuple(colour_table()["okabe_ito"][:6])
ON_BAR = colour_table()["chart"]["on_bar"]


def _n(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".")


def _clip(text: str, width: float, size: float) -> str:
    most = max(int(width / (size * 0.58)), 3)
    return text if len(text) <= most else text[: most - 1] + "…"


def overview(view: View, width: int = 1000, height: int = 470) -> str:
    """The split at the level the canvas first shows: frames of expanded scopes, blocks (with their share
    bar: delegate blue, plugin orange), nodes (plugin nodes labelled with their op and name), edges (partition
    boundaries in magenta) and each item's engine partition as a coloured outline."""
    L = view.layout
    gm, groups = view.gm, view.hier.groups
    x0, y0, x1, y1 = L.bounds()
    pad = 20.0
    s = min(width / max(x1 - x0 + 2 * pad, 1.0), height / max(y1 - y0 + 2 * pad, 1.0), 1.3)
    W, H = (x1 - x0 + 2 * pad) * s, (y1 - y0 + 2 * pad) * s

    def X(v: float) -> str:
        return _n((v - x0 + pad) * s)

    def Y(v: float) -> str:
        return _n((v - y0 + pad) * s)

    a = L.arrays
    part_lo = a.get("part_lo")
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_n(W)} {_n(H)}" width="{_n(W)}" '
        f'height="{_n(H)}" role="img" aria-label="Split overview" style="{FONT}">'
    ]
    fs = max(9.0, 12.0 * s)
    order = sorted(range(L.size), key=lambda i: (L.kind[i] != KIND_FRAME, L.depth[i]))
    frames = [i for i in order if L.kind[i] == KIND_FRAME]
    for i in frames:
        out.append(
            f'<rect x="{X(L.x[i])}" y="{Y(L.y[i])}" width="{_n(L.w[i] * s)}" height="{_n(L.h[i] * s)}" '
            f'rx="6" fill="{FRAME_FILL}" stroke="{FRAME_LINE}"/>'
        )
    for e, ex0, ey0, ex1, ey1 in zip(L.edges, a["ex0"], a["ey0"], a["ex1"], a["ey1"], strict=True):
        colour, dash = (BOUNDARY, ' stroke-dasharray="5 3"') if e.boundary else (EDGE, "")
        my = (float(ey0) + float(ey1)) / 2
        out.append(
            f'<path d="M{X(ex0)} {Y(ey0)} C{X(ex0)} {Y(my)} {X(ex1)} {Y(my)} {X(ex1)} {Y(ey1)}" fill="none" '
            f'stroke="{colour}" stroke-width="{_n(max(1.0, 1.4 * s))}"{dash}/>'
        )
    for i in frames:  # headers over the edges, on the frame's colour: no edge runs through their text
        label = _clip(groups[L.ref[i]].label, L.w[i] * s - 12, fs)
        out.append(
            f'<rect x="{_n(float(X(L.x[i])) + 3)}" y="{_n(float(Y(L.y[i])) + 2)}" '
            f'width="{_n(min(len(label) * fs * 0.6 + 6, L.w[i] * s - 6))}" height="{_n(fs + 4)}" '
            f'fill="{FRAME_FILL}"/>'
            f'<text x="{_n(float(X(L.x[i])) + 6)}" y="{_n(float(Y(L.y[i])) + fs + 3)}" font-size="{_n(fs)}" '
            f'fill="{MUTED}">{escape(label)}</text>'
        )
    for i in order:
        k = L.kind[i]
        if k == KIND_FRAME:
            continue
        x, y, w, h = float(X(L.x[i])), float(Y(L.y[i])), L.w[i] * s, L.h[i] * s
        part = int(part_lo[i]) if part_lo is not None and part_lo[i] >= 0 and len(gm.partitions) > 1 else -1
        if part >= 0:
            hi = int(a["part_hi"][i])
            colour = PARTS[part % len(PARTS)]
            dash = ' stroke-dasharray="4 3"' if hi != part else ""
            tag = f"engine {part + 1}" if hi == part else f"engines {part + 1}–{hi + 1}"
            out.append(
                f'<rect x="{_n(x - 3)}" y="{_n(y - 3)}" width="{_n(w + 6)}" height="{_n(h + 6)}" rx="8" '
                f'fill="none" stroke="{colour}" stroke-width="2.5"{dash}/>'
                f'<text x="{_n(x + w)}" y="{_n(y - 6)}" font-size="{_n(fs * 0.8)}" text-anchor="end" '
                f'fill="{colour}">{tag}</text>'
            )
        if k == KIND_BLOCK:
            g = groups[L.ref[i]]
            share = g.bar_share
            plugin = g.plugin > 0
            out.append(
                f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(w)}" height="{_n(h)}" rx="5" '
                f'fill="{PLUGIN_FILL if plugin else DELEGATE_FILL}" '
                f'stroke="{PLUGIN_LINE if plugin else DELEGATE_LINE}"/>'
                f'<rect x="{_n(x + 4)}" y="{_n(y + h - 8)}" width="{_n((w - 8) * share)}" height="4" '
                f'fill="{DELEGATE_LINE}"/><rect x="{_n(x + 4 + (w - 8) * share)}" y="{_n(y + h - 8)}" '
                f'width="{_n((w - 8) * (1 - share))}" height="4" fill="{PLUGIN_LINE}"/>'
            )
            if h >= fs + 10:  # a box too small for its name shows its colour and bar (the table names it)
                out.append(
                    f'<text x="{_n(x + 6)}" y="{_n(y + fs + 4)}" font-size="{_n(fs)}" font-weight="bold" '
                    f'fill="{TEXT}">{escape(_clip(g.label, w - 12, fs))}</text>'
                )
            if h >= 2 * fs + 12:  # the count fits between the name and the share bar, clipped to the box
                count = f"{g.size:,} node{'' if g.size == 1 else 's'}" + (f", {g.plugin} custom" if plugin else "")
                out.append(
                    f'<text x="{_n(x + 6)}" y="{_n(y + 2 * fs + 7)}" font-size="{_n(fs * 0.85)}" fill="{MUTED}">'
                    f"{escape(_clip(count, w - 12, fs * 0.85))}</text>"
                )
        elif k == KIND_NODE:
            n = gm.nodes[L.ref[i]]
            plugin = n.status.value == "plugin"
            mark = "▲ " if plugin else ""
            out.append(
                f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(w)}" height="{_n(h)}" rx="5" '
                f'fill="{PLUGIN_FILL if plugin else DELEGATE_FILL}" '
                f'stroke="{PLUGIN_LINE if plugin else DELEGATE_LINE}" stroke-width="{2 if plugin else 1}"/>'
                f'<text x="{_n(x + 6)}" y="{_n(y + fs + 4)}" font-size="{_n(fs)}" font-weight="bold" '
                f'fill="{PLUGIN_LINE if plugin else TEXT}">{escape(_clip(mark + n.op_type, w - 12, fs))}</text>'
            )
            if h >= 2 * fs + 8:  # the name under the op, where the box has room for it
                out.append(
                    f'<text x="{_n(x + 6)}" y="{_n(y + 2 * fs + 6)}" font-size="{_n(fs * 0.8)}" '
                    f'fill="{MUTED}">{escape(_clip(n.name, w - 12, fs * 0.8))}</text>'
                )
    out.append("</svg>")
    return "".join(out)


def bars(
    rows: list[dict[str, Any]],
    value: str,
    label: str,
    unit: str,
    low: str | None = None,
    high: str | None = None,
    width: int = 640,
) -> str:
    """Horizontal bars of ``row[value]`` (with a whisker from ``row[low]`` to ``row[high]`` where given)."""
    rows = [r for r in rows if r.get(value) is not None]
    if not rows:
        return ""
    top = (
        max(max(float(r.get(high) or r[value]) for r in rows), 1e-12)
        if high
        else max(max(float(r[value]) for r in rows), 1e-12)
    )
    left, bar_h, gap = 170, 22, 10
    H = len(rows) * (bar_h + gap) + 40
    plot = width - left - 170  # room for the value written after the bar
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {H}" width="{width}" height="{H}" '
        f'role="img" aria-label="{escape(label)}" style="{FONT}">'
    ]
    for k, r in enumerate(rows):
        y = 10 + k * (bar_h + gap)
        v = float(r[value])
        colour = BARS[k % len(BARS)]
        out.append(
            f'<text x="{left - 8}" y="{y + 15}" font-size="12" text-anchor="end" fill="{TEXT}">'
            f"{escape(_clip(str(r['name']), left - 10, 12))}</text>"
        )
        txt = f"{v:.3g} {unit}"
        if (
            low
            and high
            and r.get(low) is not None
            and r.get(high) is not None
            and abs(float(r[high]) - float(r[low])) > 1e-9
        ):  # a range: solid to the low end, pale to the high
            lo, hi = float(r[low]), float(r[high])
            out.append(
                f'<rect x="{left}" y="{y}" width="{_n(plot * lo / top)}" height="{bar_h}" fill="{colour}"/>'
                f'<rect x="{_n(left + plot * lo / top)}" y="{y}" width="{_n(plot * (hi - lo) / top)}" '
                f'height="{bar_h}" fill="{colour}" fill-opacity="0.3"/>'
            )
            txt = f"{lo:.3g}–{hi:.3g} {unit}"
        else:
            out.append(f'<rect x="{left}" y="{y}" width="{_n(plot * v / top)}" height="{bar_h}" fill="{colour}"/>')
        w = plot * v / top
        end = float((r.get(high) if high else None) or v)
        out.append(
            f'<text x="{_n(left + max(w, plot * end / top) + 6)}" y="{y + 15}" '
            f'font-size="12" fill="{TEXT}">{escape(txt)}</text>'
        )
    out.append(f'<text x="{left}" y="{H - 8}" font-size="11" fill="{MUTED}">{escape(label)}</text></svg>')
    return "".join(out)


def roofline(profile: dict[str, Any], width: int = 640, height: int = 360) -> str:
    """Achieved FLOP/s against arithmetic intensity per node (log-log), with the GPU's roofs when known."""
    pts = [
        (float(r["intensity"]), float(r["achieved_flops"]), r["status"] == "plugin", r["name"])
        for r in profile.get("per_node", [])
        if r.get("intensity") and r.get("achieved_flops")
    ]
    if not pts:
        return ""
    gpu = profile.get("gpu") or {}
    peak = max((gpu.get("peak_flops") or {}).values(), default=0.0)
    bw = float(gpu.get("peak_bandwidth") or 0.0)
    xs = [p[0] for p in pts]
    ys = [p[1] for p in pts] + ([peak] if peak else [])
    lx0, lx1 = math.floor(math.log10(min(xs))), math.ceil(math.log10(max(xs) * 1.01))
    ly0, ly1 = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys) * 1.01))
    lx1, ly1 = max(lx1, lx0 + 1), max(ly1, ly0 + 1)
    left, bottom, right, top = 64, 40, 16, 14
    pw, ph = width - left - right, height - top - bottom

    def px(v: float) -> float:
        return left + pw * (math.log10(v) - lx0) / (lx1 - lx0)

    def py(v: float) -> float:
        return top + ph * (1 - (math.log10(max(v, 10**ly0)) - ly0) / (ly1 - ly0))

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="100%" role="img" '
        f'aria-label="Roofline" style="{FONT}"><rect x="{left}" y="{top}" width="{pw}" height="{ph}" '
        f'fill="none" stroke="{FRAME_LINE}"/>'
    ]
    for e in range(lx0, lx1 + 1):
        out.append(
            f'<text x="{_n(px(10**e))}" y="{height - bottom + 16}" font-size="11" text-anchor="middle" '
            f'fill="{MUTED}">1e{e}</text>'
        )
    for e in range(ly0, ly1 + 1):
        out.append(
            f'<text x="{left - 6}" y="{_n(py(10**e) + 4)}" font-size="11" text-anchor="end" fill="{MUTED}">1e{e}</text>'
        )
    if peak and bw:
        ridge = peak / bw
        xa, xb = 10**lx0, 10**lx1
        pts_line = [
            (xa, min(bw * xa, peak)),
            (min(max(ridge, xa), xb), min(bw * min(max(ridge, xa), xb), peak)),
            (xb, peak),
        ]
        d = " ".join(f"{'M' if k == 0 else 'L'}{_n(px(x))} {_n(py(y))}" for k, (x, y) in enumerate(pts_line))
        out.append(f'<path d="{d}" fill="none" stroke="{TEXT}" stroke-width="1.5" stroke-dasharray="6 3"/>')
    for x, y, plugin, name in pts:
        colour = PLUGIN_LINE if plugin else DELEGATE_LINE
        out.append(
            f'<circle cx="{_n(px(x))}" cy="{_n(py(y))}" r="3.5" fill="{colour}" fill-opacity="0.75">'
            f"<title>{escape(name)}</title></circle>"
        )
    out.append(
        f'<text x="{left + pw / 2}" y="{height - 6}" font-size="12" text-anchor="middle" fill="{TEXT}">'
        f'FLOP per byte</text><text x="14" y="{top + ph / 2}" font-size="12" fill="{TEXT}" '
        f'transform="rotate(-90 14 {top + ph / 2})" text-anchor="middle">achieved FLOP/s</text></svg>'
    )
    return "".join(out)


def time_split(parts: list[tuple[str, float | None, str]], width: int = 640) -> str:
    """One stacked bar of where the time goes: (label, ms, colour) parts; a part of ``None`` ms was not
    measured: it takes no width and its legend says so."""
    shown = [(label, ms, colour) for label, ms, colour in parts if ms is not None]
    missing = [label for label, ms, _ in parts if ms is None]
    total = sum(p[1] for p in shown)
    if total <= 0:
        return ""
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} 64" width="100%" role="img" '
        f'aria-label="Where the time goes" style="{FONT}">'
    ]
    x = 0.0
    for _label, ms, colour in shown:
        w = width * ms / total
        out.append(f'<rect x="{_n(x)}" y="4" width="{_n(w)}" height="28" fill="{colour}"/>')
        if w > 60:
            out.append(f'<text x="{_n(x + 6)}" y="23" font-size="12" fill="{ON_BAR}">{ms / total:.0%}</text>')
        x += w
    x = 0.0
    for label, ms, colour in shown:
        out.append(
            f'<rect x="{_n(x)}" y="44" width="10" height="10" fill="{colour}"/><text x="{_n(x + 14)}" y="53" '
            f'font-size="11" fill="{TEXT}">{escape(label)} {ms:.3g} ms</text>'
        )
        x += 14 + 7 * (len(label) + 10)
    for label in missing:
        out.append(f'<text x="{_n(x)}" y="53" font-size="11" fill="{MUTED}">{escape(label)}: not measured</text>')
        x += 7 * (len(label) + 16)
    out.append("</svg>")
    return "".join(out)
