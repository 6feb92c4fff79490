"""Side panels: node inspector, ops table, split summary with charts."""

from __future__ import annotations

import html
from collections import Counter, defaultdict
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QSortFilterProxyModel, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QLineEdit,
    QTableView,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)
from splitscope.engine.model import GraphModel, Node, Status
from splitscope.engine.text import decided_by, format_bytes, node_op_label, plural, shape_at, shape_label
from splitscope.engine.view.hierarchy import Hierarchy
from splitscope.gui.canvas.bars import BarChart, BarRow
from splitscope.gui.shell.palette import STATUS_MARK, Palette, make_palette


def _fmt(n: int | None) -> str:
    if n is None:
        return "unknown"
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= div:
            return f"{n / div:.2f} {unit}"
    return str(n)


class Inspector(QTextBrowser):
    """What one node (or group) is, and why it has its status."""

    showing = Signal()
    """A node or a group is shown (from the canvas, a panel, a search): its dock comes to the front."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.gm: GraphModel | None = None
        self.hier: Hierarchy | None = None
        self.palette_: Palette = make_palette(False)
        self.setPlaceholderText("Select a node or a group on the canvas.")
        self.extras: list[Any] = []
        """Callables ``(node index) -> HTML`` whose sections follow the node's status (engine layers)."""

    def set_palette(self, pal: Palette) -> None:
        """Status colours follow the theme (one palette for canvas, charts and text)."""
        self.palette_ = pal

    def _status_color(self, status: Status) -> str:
        return self.palette_.status_border[status].name()

    def set_model(self, gm: GraphModel | None, hier: Hierarchy | None) -> None:
        """Use a new model; clears the view."""
        self.gm, self.hier = gm, hier
        self.clear()

    def _tensor_row(self, name: str) -> str:
        assert self.gm is not None
        t = self.gm.graph.tensors.get(name)
        if not name:
            return "<tr><td colspan=3><i>(optional input left out)</i></td></tr>"
        if t is None:
            return f"<tr><td>{html.escape(name)}</td><td colspan=2>?</td></tr>"
        shape = shape_label(t, self.gm.dims) + (f" = {shape_at(t)}" if shape_at(t) else "")
        size = t.nbytes(self.gm.dims)
        kind = " (weight)" if t.is_initializer else " (model input)" if t.is_input else ""
        assumed = " <i>assumed</i>" if name in self.gm.assumed_shapes else ""
        return (
            f"<tr><td>{html.escape(name)}{kind}</td><td>{t.dtype or '?'} {shape}{assumed}</td>"
            f"<td align=right>{format_bytes(size) if size is not None else '?'}</td></tr>"
        )

    def show_node(self, index: int) -> None:
        """Show a node of the main graph."""
        if self.gm is None or index < 0:
            self.clear()
            return
        self.showing.emit()
        n: Node = self.gm.nodes[index]
        status_color = self._status_color(n.status)
        rows = [
            f"<h3>{html.escape(n.label)}</h3>",
            f"<p><b>{html.escape(node_op_label(n))}</b>"
            f" &nbsp; <span style='color:{status_color}'>{STATUS_MARK[n.status]} {n.status.value}</span>"
            f" &nbsp; role: {n.role.value} &nbsp; source: {n.source.value}</p>",
            f"<p><b>Why:</b> {html.escape(n.reason)}</p>",
            *(
                [f"<p><b>Cause:</b> {html.escape(n.cause)}<br><b>Remedy:</b> {html.escape(n.remedy)}</p>"]
                if n.remedy
                else []
            ),
            "<table cellspacing=2>",
            f"<tr><td>FLOPs</td><td>{_fmt(n.flops)}</td></tr>",
            f"<tr><td>Bytes moved</td><td>{format_bytes(n.bytes) if n.bytes is not None else 'unknown'}</td></tr>",
            f"<tr><td>Scope</td><td>{html.escape('/'.join(n.scope)) or '(none)'}</td></tr>",
        ]
        folded = [i for i, host in (self.hier.folded.items() if self.hier is not None else ()) if host == index]
        if folded:
            ops = Counter(self.gm.nodes[i].op_type for i in folded)
            rows.append(
                f"<tr><td>Folded in (constants, shape arithmetic)</td><td>{len(folded)}: "
                f"{html.escape(', '.join(f'{op} ×{k}' for op, k in ops.most_common()))}"
                " (View › Fold Constants and Shape Arithmetic shows them)</td></tr>"
            )
        if n.table_status is not None:
            rows.append(f"<tr><td>Table predicted</td><td>{n.table_status.value}</td></tr>")
        if n.parser_status is not None:
            rows.append(f"<tr><td>Parser said</td><td>{n.parser_status.value}</td></tr>")
        rows.append("</table>")
        rows += [html_part for f in self.extras if (html_part := f(index))]  # e.g. what TensorRT made of it
        rows.append("<h4>Inputs</h4><table width=100% cellspacing=2>")
        rows += [self._tensor_row(i) for i in n.inputs]
        if n.implicit_inputs:
            rows.append("<tr><td colspan=3><i>read by its bodies from the enclosing graph:</i></td></tr>")
            rows += [self._tensor_row(i) for i in n.implicit_inputs]
        rows.append("</table><h4>Outputs</h4><table width=100% cellspacing=2>")
        rows += [self._tensor_row(o) for o in n.outputs]
        rows.append("</table>")
        if n.attributes:
            rows.append("<h4>Attributes</h4><table cellspacing=2>")
            for k, v in n.attributes.items():
                text = str(v)
                rows.append(f"<tr><td>{html.escape(k)}</td><td>{html.escape(text[:300])}</td></tr>")
            rows.append("</table>")
        bodies = [(f"Body {name}", sub) for name, sub in n.subgraphs.items()]
        if n.function is not None:
            bodies.append((f"Function {n.op_type}", n.function))
        for title, sub in bodies:
            plugin = sum(1 for x in sub.nodes if x.status is Status.PLUGIN)
            rows.append(f"<h4>{html.escape(title)}: {len(sub.nodes)} nodes, {plugin} plugin</h4><table cellspacing=2>")
            # Plugin nodes first: they are why the body matters.
            for x in sorted(sub.nodes, key=lambda x: x.status is not Status.PLUGIN)[:60]:
                color = self._status_color(x.status)
                rows.append(
                    f"<tr><td style='color:{color}'>{STATUS_MARK[x.status]}</td>"
                    f"<td>{html.escape(x.op_type)}</td><td>{html.escape(x.label)}</td>"
                    f"<td>{html.escape(x.reason[:160]) if x.status is Status.PLUGIN else ''}</td></tr>"
                )
            if len(sub.nodes) > 60:
                rows.append(f"<tr><td colspan=4>… and {len(sub.nodes) - 60} more</td></tr>")
            rows.append("</table>")
        self.setHtml("\n".join(rows))

    def show_group(self, gid: int) -> None:
        """Show a group (scope)."""
        if self.hier is None or self.gm is None or gid < 0:
            self.clear()
            return
        self.showing.emit()
        g = self.hier.groups[gid]
        ops: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        stack = [gid]
        while stack:
            x = self.hier.groups[stack.pop()]
            stack.extend(x.groups)
            for i in x.nodes:
                n = self.gm.nodes[i]
                ops[n.op_type][0] += 1
                ops[n.op_type][1] += n.status is Status.PLUGIN
        rows = [
            f"<h3>{html.escape(self.hier.full_label(gid) or g.label)}</h3>",
            f"<p>{g.size:,} {'node' if g.size == 1 else 'nodes'}, {g.plugin} plugin; "
            f"{g.delegate_share:.1%} of FLOPs delegated; "
            f"{_fmt(g.flops)} FLOPs</p><table cellspacing=2><tr><th align=left>op</th><th>count</th>"
            "<th>plugin</th></tr>",
        ]
        for op, (count, plugin) in sorted(ops.items(), key=lambda kv: -kv[1][0])[:40]:
            rows.append(f"<tr><td>{html.escape(op)}</td><td align=right>{count}</td><td align=right>{plugin}</td></tr>")
        rows.append("</table><p><i>Double-click the group on the canvas to expand or collapse it.</i></p>")
        self.setHtml("\n".join(rows))


class OpsModel(QAbstractTableModel):
    """One row per op type: count, status, FLOPs share."""

    HEADERS = ("Op type", "Count", "Status", "FLOPs share", "Role", "Remedy")

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[str, int, str, float | None, str, list[int], bool, str, str]] = []

    def set_rows(self, rows: list[dict[str, Any]]) -> None:
        """Show rows from :func:`splitscope.engine.report.stats.op_table`."""
        self.beginResetModel()
        self.rows = []
        for r in rows:
            plugin, count = r["plugin"], r["count"]
            status = "▲ plugin" if plugin == count else "● delegate" if not plugin else f"mixed ({plugin} ▲)"
            self.rows.append(
                (
                    r["op"],
                    count,
                    status,
                    r["flops_share"],
                    ", ".join(r["roles"]),
                    r["nodes"],
                    plugin > 0,
                    r.get("remedy", ""),
                    r.get("cause", ""),
                )
            )
        self.endResetModel()

    def rowCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: B008 - Qt API
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex = QModelIndex()) -> int:  # noqa: B008 - Qt API
        return len(self.HEADERS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self.HEADERS[section]
        return None

    def data(self, index: QModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        r = self.rows[index.row()]
        c = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            share = "unknown" if r[3] is None else f"{r[3]:.1%}"  # a dim without a value: no share to give
            return (r[0], f"{r[1]:,}", r[2], share, r[4], r[7])[c]  # 48,488 as the status bar writes it
        if role == Qt.ItemDataRole.UserRole:
            return (r[0], r[1], r[6], -1.0 if r[3] is None else r[3], r[4], r[7])[c]
        if role == Qt.ItemDataRole.ToolTipRole and r[7]:
            return f"{r[8]}: {r[7]}"
        if role == Qt.ItemDataRole.TextAlignmentRole and c in (1, 3):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None


class OpsPanel(QWidget):
    """The ops table with a filter; choosing a row highlights its nodes on the canvas."""

    op_chosen = Signal(list)
    """Node indices of the chosen op type."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = OpsModel()
        self.proxy = QSortFilterProxyModel(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(Qt.ItemDataRole.UserRole)
        self.proxy.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.proxy.setFilterKeyColumn(-1)
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter op types, status or role…")
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(self.proxy.setFilterFixedString)
        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.verticalHeader().hide()
        self.table.selectionModel().selectionChanged.connect(self._chosen)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addWidget(self.filter)
        lay.addWidget(self.table)

    def set_rows(self, rows: list[dict[str, Any]]) -> None:
        """Show op-table rows (computed in a worker); the table sizes its columns to them."""
        self.model.set_rows(rows)
        self.table.resizeColumnsToContents()
        header = self.table.horizontalHeader()
        header.setStretchLastSection(True)

    def _chosen(self) -> None:
        rows = self.table.selectionModel().selectedRows()
        if rows:
            src = self.proxy.mapToSource(rows[0])
            self.op_chosen.emit(list(self.model.rows[src.row()][5]))

    def select_op_of(self, node: Node) -> None:
        """Select the row of a node's op type without emitting op_chosen."""
        op = node_op_label(node)
        for r, row in enumerate(self.model.rows):
            if row[0] == op:
                idx = self.proxy.mapFromSource(self.model.index(r, 0))
                if idx.isValid():
                    sm = self.table.selectionModel()
                    sm.blockSignals(True)
                    self.table.selectRow(idx.row())
                    sm.blockSignals(False)
                    self.table.scrollTo(idx)
                    self.table.viewport().update()
                return


class SummaryPanel(QWidget):
    """The headline and bar charts of the split by status and by role."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.headline = QLabel("No model.")
        self.headline.setWordWrap(True)
        self.headline.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.status_plot = BarChart("Share delegated (blue) and plugin (orange)")
        self.role_plot = BarChart("Nodes by role")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(self.headline)
        layout.addWidget(self.status_plot)
        layout.addWidget(self.role_plot)
        layout.addStretch(1)

    def set_stats(self, gm: GraphModel | None, stats: dict[str, Any] | None, pal: Palette) -> None:
        """Redraw from :func:`splitscope.engine.report.stats.panel_stats` (computed in a worker)."""
        if gm is None or stats is None:
            if gm is not None and gm.preview:  # the structure read first: say what its colours are, and what follows
                self.headline.setText(
                    f"<b>{html.escape(plural(len(gm.nodes), 'node'))} read; analysing…</b><br>"
                    "Each op coloured by the operator table alone, until the split, FLOPs and bytes are known."
                )
            else:
                self.headline.setText("No model." if gm is None else "Analysing…")
            self.status_plot.clear(pal.background, pal.text)
            self.role_plot.clear(pal.background, pal.text)
            return
        src = decided_by(gm.parser, calls=False)
        work = stats["flops_text"]
        self.headline.setText(
            f"<b>{html.escape(stats['headline'])}.</b><br>{html.escape(work)}<br><i>Source: {html.escape(src)}</i>"
        )
        s = stats["summary"]
        look = {
            "colours": (pal.status_border[Status.DELEGATE], pal.status_border[Status.PLUGIN]),
            "background": pal.background,
            "text": pal.text,
        }
        flops = "known FLOPs" if gm.missing_dims else "FLOPs"  # a dim without a value: the share is of the rest
        shares = [
            BarRow(label, s["delegate"][key] * 100, s["plugin"][key] * 100)
            for label, key in (("nodes", "node_share"), (flops, "flops_share"))
        ]
        self.status_plot.set_bars(shares, full=100.0, axis_label="% of nodes, of FLOPs", **look)
        roles = [BarRow(r, v["delegate_nodes"], v["plugin_nodes"]) for r, v in stats["roles"].items()]
        self.role_plot.set_bars(roles, full=None, axis_label="nodes", **look)
