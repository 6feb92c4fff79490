"""What TensorRT did, in the window: File › Import Engine Data… (and drag and drop), Compare With Engine
Data…, Tools › Build with TensorRT-RTX and Read Its Layers; the Engine panel; the canvas coloured by engine
layer, precision and the engine's time share; the inspector's engine section; an engine without its ONNX
model drawn as its own graph."""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QSettings, Qt
from PySide6.QtWidgets import QDialog, QFileDialog, QTableWidget, QTableWidgetItem, QVBoxLayout
from splitscope.engine.errors import SplitscopeError
from splitscope.engine.trtdata.doc import EngineComparison, EngineDoc
from splitscope.engine.trtdata.lint import engine_doc
from splitscope.engine.view.layout import View
from splitscope.engine.view.rollup import sums_up, values_up
from splitscope.gui.canvas.render import Heat
from splitscope.gui.engine.panel import EnginePanel
from splitscope.gui.shell.exports import add_csv_menu
from splitscope.gui.shell.palette import COLOURS
from splitscope.profiler.controller import EngineOutcome, EngineRequest

if TYPE_CHECKING:
    from splitscope.engine.trtdata.importer import EngineData
    from splitscope.gui.shell.host import Shell

LAYER_COLOURS = tuple(COLOURS["series"])
PRECISION_COLOURS = dict(COLOURS["precision"])


def precision_heat(view: View, data: EngineData) -> Heat:
    """Nodes by the precision their layer really runs in; a block by its nodes' one precision, else mixed."""
    from splitscope.engine.trtdata.precision import precision_family

    keys = list(PRECISION_COLOURS)
    index = {p: float(k) for k, p in enumerate(keys)}
    fam: dict[str, str] = {}
    nodes: dict[int, float] = {}
    for i, p in data.node_precision().items():
        f = fam.get(p)
        if f is None:
            f = fam[p] = precision_family(p)
        if f in index:
            nodes[i] = index[f]
    gvals = {g: (next(iter(s)) if len(s) == 1 else index["mixed"]) for g, s in values_up(view.hier, nodes).items()}
    seen = sorted({keys[int(v)] for v in nodes.values()}, key=keys.index)
    return Heat(
        nodes,
        gvals,
        "precision (as the engine runs it)",
        palette=tuple(PRECISION_COLOURS.values()),
        items=tuple((p, PRECISION_COLOURS[p]) for p in seen),
    )


def layer_heat(view: View, data: EngineData) -> Heat:
    """Nodes fused into one engine layer share a colour (neighbouring layers differ); a block takes its
    layer's colour when it holds one layer only."""
    m = data.mapping
    nodes: dict[int, float] = {}
    if m is not None:
        for k, ids in enumerate(m.layer_nodes):
            for i in ids:
                nodes.setdefault(i, float(k % len(LAYER_COLOURS)))
    gvals = {g: next(iter(s)) for g, s in values_up(view.hier, nodes).items() if len(s) == 1}
    return Heat(
        nodes,
        gvals,
        "engine layer (one colour a layer; grey: not in one layer, or many)",
        palette=LAYER_COLOURS,
        items=(("fused into one layer", LAYER_COLOURS[0]), ("the next layer", LAYER_COLOURS[1])),
    )


def time_heat(view: View, data: EngineData) -> Heat | None:
    ms = data.node_ms()
    if not ms:
        return None
    top = max(ms.values()) or 1.0
    groups = sums_up(view.hier, ms)
    gtop = max((v for g, v in groups.items() if g != 0), default=1.0) or 1.0
    total = sum(data.layer_ms().values()) or 1.0
    return Heat(
        {i: v / top for i, v in ms.items()},
        {g: v / gtop for g, v in groups.items()},
        "time share (imported engine profile)",
        False,
        "0%",
        f"{top / total:.1%} (a node)",
    )


def diff_heat(view: View, cmp: EngineComparison) -> Heat | None:
    nodes = {
        r.index: max(-1.0, min(1.0, math.log2(r.b_ms / r.a_ms) / 2))
        for r in cmp.by_node
        if r.index is not None and r.a_ms > 0 and r.b_ms > 0
    }
    if not nodes:
        return None
    return Heat(nodes, {}, "engine B vs A", True, "B 4x faster", "B 4x slower")


def heats(kind: str, view: View, data: EngineData, comparison: EngineComparison | None) -> Heat | None:
    """The colouring ``kind`` of ``view`` from an import."""
    if kind == "precision":
        return precision_heat(view, data)
    if kind == "layer":
        return layer_heat(view, data)
    if kind == "time":
        return time_heat(view, data)
    return diff_heat(view, comparison) if comparison else None


class EngineUi(QObject):
    """What TensorRT did, in the window: importing, comparing and building engines (the controller runs the
    jobs and keeps each model's engine), the Engine panel, the inspector's engine section, the colourings."""

    def __init__(self, shell: Shell) -> None:
        super().__init__(shell.window())
        self.shell = shell
        self.controller = c = shell.controller
        self.panel = EnginePanel()
        self.dock = shell.add_dock("Engine", self.panel)
        self.comparison: EngineComparison | None = None
        self.heat_cache: dict[tuple[str, int], Heat | None] = {}
        """Colourings made in the import's worker for the view then on screen (the UI thread only paints)."""
        self.pending: list[str] | None = None
        """Files to map once the engine's own graph, opened for them, is ready."""
        self.panel.layer_chosen.connect(self._layer_chosen)
        self.panel.nodes_chosen.connect(self._nodes_chosen)
        shell.inspector.extras.append(self.inspector_html)
        shell.canvas.node_selected.connect(self._node_selected)
        c.model_ready.connect(self._model_ready)
        c.engine_ready.connect(self._finished)
        c.engine_graph_ready.connect(self._graph_written)
        self.last_paths: list[str] = []
        self.on_engine_graph = False
        """Whether the last import was drawn as the engine's own graph (no ONNX model yet)."""
        for key, text, kind in (
            ("precision", "&Precision (imported engine)", "precision"),
            ("layer", "&Engine Layer (imported engine)", "layer"),
            ("engine-time", "Time Share (imported &engine profile)", "time"),
            ("engine-diff", "Comparison of Two E&ngines", "diff"),
        ):
            shell.colours.add(key, text, self._heat(kind))

    @property
    def data(self) -> EngineData | None:
        """The open model's engine (imported or built)."""
        return self.controller.results.engine

    @property
    def doc(self) -> EngineDoc | None:
        """Its document (the CLI's ``engine --json``, with the lint), read as its type."""
        data = self.controller.results.engine
        return engine_doc(data) if data is not None else None

    def add_file_actions(self, file_menu: Any) -> None:
        """File › Import Engine Data…, Compare With Engine Data…."""
        self.shell.add_action(file_menu, "Import &Engine Data…", self.ask_import, "Ctrl+Shift+I").setToolTip(
            "trtexec's --exportLayerInfo, --exportProfile and --exportTimes files of one engine (TensorRT 8 to 11)"
        )
        self.shell.add_action(file_menu, "Compare With Engine Data…", self.ask_compare)

    def add_actions(self, tools: Any, _view: Any = None) -> None:
        """Tools › Build with TensorRT-RTX…, Tools › Verify the Split by Building"""
        self.shell.add_action(tools, "&Verify the Split by Building…", self.ask_verify).setToolTip(
            "Build each engine partition with TensorRT-RTX at the shapes in force (it builds without a GPU); the "
            "nodes the builder rejects though the parser imports them become plugin (source: builder)"
        )
        self.shell.add_action(tools, "&Build with TensorRT-RTX and Read Its Layers", self.build_rtx).setToolTip(
            "Build the open model here (TensorRT-RTX builds without a GPU, in a process of its own) and show what "
            "its builder fused"
        )

    def ask_verify(self) -> int | None:
        """The budget and the ranges to build over, asked; then :meth:`verify`."""
        from splitscope.gui.engine.verify_dialog import VerifyDialog

        gm = self.controller.graph_model
        if gm is None:
            self.shell.show_message("Open a model first.", 5000)
            return None
        dialog = VerifyDialog(gm, self.shell.window())
        if dialog.exec() != VerifyDialog.DialogCode.Accepted:
            return None
        return self.verify(*dialog.values())

    def verify(self, budget: float | None = None, ranges: dict[str, tuple[int, int]] | None = None) -> int | None:
        """Queue a verifying build of the open model (progress and Cancel in the Jobs panel): within ``budget``
        seconds (the one last given by default), over ``ranges`` (name -> (min, max)) where given."""
        from splitscope.engine._optional import installed

        if not installed("tensorrt_rtx"):
            self.shell.show_failure("Verifying by building needs TensorRT-RTX: pip install 'splitscope[rtx]'.")
            return None
        if budget is None:
            budget = float(QSettings().value("verify/budget", 300))
        try:
            jid = self.controller.submit_verify(budget, ranges or {})
        except SplitscopeError as e:
            self.shell.show_failure(str(e))
            return None
        if jid is None:
            self.shell.show_message("Open a model (not an engine's own graph) first.", 5000)
        return jid

    def _heat(self, kind: str) -> Any:
        def make(view: View) -> Heat | None:
            if self.data is None or self.data.mapping is None:
                return None
            cached = self.heat_cache.get((kind, id(view.hier)))
            if cached is not None:
                return cached
            heat = heats(kind, view, self.data, self.comparison)
            self.heat_cache[(kind, id(view.hier))] = heat
            return heat

        return make

    # ------------------------------------------------------------ import
    def ask_import(self) -> None:
        settings = QSettings()
        names, _ = QFileDialog.getOpenFileNames(
            self.shell.window(),
            "Import engine data (the files of one engine)",
            str(settings.value("engine/dir", str(Path.home()))),
            "trtexec JSON (*.json);;All files (*)",
        )
        if names:
            settings.setValue("engine/dir", str(Path(names[0]).parent))
            self.import_files(names)

    def import_files(self, paths: list[str]) -> int | None:
        """Import one engine's files onto the open model (or, with none open, draw the engine's own graph)."""
        if self.controller.graph_model is None:
            return self.controller.submit_engine_graph(list(paths))
        return self._submit(f"Import {', '.join(Path(p).name for p in paths)}", paths, "import")

    def ask_compare(self) -> None:
        if self.data is None:
            self.shell.show_message("Import an engine first, then compare another with it.", 6000)
            return
        names, _ = QFileDialog.getOpenFileNames(
            self.shell.window(),
            "Engine data to compare with",
            str(QSettings().value("engine/dir", str(Path.home()))),
            "trtexec JSON (*.json);;All files (*)",
        )
        if names:
            self._submit(f"Compare with {Path(names[0]).name}", names, "compare")

    def build_rtx(self) -> int | None:
        gm = self.controller.graph_model
        if gm is None or gm.path is None:
            self.shell.show_message("Open a model first.", 5000)
            return None
        return self._submit(f"Build {gm.path.name} with TensorRT-RTX", [str(gm.path)], "build")

    def _submit(self, title: str, paths: list[str], kind: str) -> int:
        if kind == "import":
            self.last_paths = list(paths)
        view = self.controller.view

        def prepare(data: EngineData) -> dict[str, Any]:  # in the job's worker: 50k nodes take 30 ms a colouring
            if view is None or data.mapping is None or kind == "compare":
                return {}
            return {(k, id(view.hier)): heats(k, view, data, None) for k in ("precision", "layer", "time")}

        return self.controller.submit_engine(EngineRequest(kind, list(paths), title), prepare)

    def _finished(self, _jid: int, res: EngineOutcome) -> None:
        data = res.report.data
        if res.kind == "compare":
            from splitscope.engine.trtdata.compare import compare

            if self.data is not None:
                self.comparison = EngineComparison.from_json(compare(self.data, data))
                self.heat_cache = {k: v for k, v in self.heat_cache.items() if k[0] != "diff"}
                self._show_comparison(self.comparison)
                self.controller.set_colour_mode("engine-diff")
            return
        self.heat_cache = dict(res.heat)
        doc = engine_doc(data)
        self.panel.set_data(doc, res.title)
        self.dock.raise_()
        self.controller.set_colour_mode("precision" if doc.has_precision else "layer")
        share = doc.mapped_data_node_share
        self.shell.show_message(
            f"{len(doc.layers)} engine layers imported"
            + (f"; {share:.0%} of the model's data-path nodes mapped" if share is not None else ""),
            8000,
        )

    def _graph_written(self, _jid: int, path: Any, paths: list[str]) -> None:
        self.pending = list(paths)
        self.pending_graph = Path(path)
        self.controller.model_ready.connect(self._pending_ready, Qt.ConnectionType.SingleShotConnection)
        self.shell.open_model(path)

    def _pending_ready(self, gm: Any = None, *_: Any) -> None:
        graph = getattr(self, "pending_graph", None)
        if gm is not None and graph is not None and (gm.path is None or Path(gm.path) != graph):
            self.pending = None  # the engine's graph did not open (it failed): never import onto another model
            return
        if self.pending:
            paths, self.pending = self.pending, None
            self.on_engine_graph = True
            self._submit(f"Import {', '.join(Path(p).name for p in paths)}", paths, "import")

    def _model_ready(self, gm: Any, _view: Any) -> None:
        """The ONNX model opened after an engine seen on its own graph: the engine maps onto it now. (Nothing is
        imported here: an import on the UI thread waits for the interpreter while a worker holds it, 0.3-0.5 s at
        200k nodes.)"""
        self.heat_cache = {}
        self.comparison = None
        is_engine = gm.engine_graph
        if self.on_engine_graph and not is_engine and self.last_paths and self.pending is None:
            self.on_engine_graph = False
            paths = list(self.last_paths)
            self._submit(
                f"Map {', '.join(Path(p).name for p in paths)} onto {gm.path.name if gm.path else ''}", paths, "import"
            )
        elif self.doc is not None:
            self.panel.set_data(self.doc, "Engine (kept with this model)")
        else:
            self.panel.clear()

    # ------------------------------------------------------------ views
    def _show_comparison(self, cmp: EngineComparison) -> None:
        dlg = QDialog(self.shell.window())
        dlg.setWindowTitle(f"Compare engines: A {cmp.a_total_ms:.4f} ms, B {cmp.b_total_ms:.4f} ms of layer time")
        dlg.resize(820, 520)
        rows = cmp.largest_changes
        t = QTableWidget(len(rows) + len(cmp.by_layer_type), 5)
        t.setHorizontalHeaderLabels(["Node / layer type", "A ms", "B ms", "A precision", "B precision"])
        add_csv_menu(t, "engine-comparison")
        r = 0
        for row in cmp.by_layer_type:
            for c, v in enumerate((f"[type] {row.name}", f"{row.a_ms:.4f}", f"{row.b_ms:.4f}", "", "")):
                t.setItem(r, c, QTableWidgetItem(v))
            r += 1
        for row in rows:
            for c, v in enumerate((row.name, f"{row.a_ms:.4f}", f"{row.b_ms:.4f}", row.a_precision, row.b_precision)):
                t.setItem(r, c, QTableWidgetItem(v))
            r += 1
        t.resizeColumnsToContents()
        lay = QVBoxLayout(dlg)
        lay.addWidget(t)
        dlg.show()
        self.compare_dialog = dlg

    def inspector_html(self, index: int) -> str:
        """The inspector's section for a node: the engine layer(s) it ended in, with type, precision, tactic,
        formats and time."""
        if self.data is None or self.data.mapping is None or self.doc is None:
            return ""
        ks = self.data.mapping.node_layers.get(index, [])
        if not ks:
            return "<h4>Engine</h4><p>Not in any layer of the imported engine (TensorRT folded or removed it).</p>"
        parts = ["<h4>Engine</h4>"]
        rows = self.data.rows
        for k in ks[:4]:
            d, layer = self.doc.layers[k], rows[k]
            fmts = ", ".join(sorted({t.format for t in (*layer.inputs, *layer.outputs) if t.format}))[:300]
            ms = f"{d.ms:.4f} ms ({d.share or 0:.1%})" if d.ms is not None else "no profile"
            parts.append(
                f"<p><b>{html.escape(d.name)}</b><br>{html.escape(d.type)} · "
                f"{html.escape(d.precision or 'precision not recorded')} · {ms}<br>"
                f"tactic: {html.escape(layer.tactic or '—')}<br>formats: {html.escape(fmts or '—')}<br>"
                f"holds {len(d.onnx_nodes)} ONNX node{'s' if len(d.onnx_nodes) != 1 else ''}</p>"
            )
        return "".join(parts)

    def _layer_chosen(self, k: int) -> None:
        if self.data is None or self.data.mapping is None:
            return
        nodes = self.data.mapping.layer_nodes[k]
        w = self.shell
        if nodes:
            w.highlight(nodes)
            w.canvas.select_node(nodes[0])
            w.inspector.show_node(nodes[0])

    def _nodes_chosen(self, names: list[str]) -> None:
        gm = self.controller.graph_model
        if gm is None:
            return
        by = {n.name: n.index for n in gm.nodes}
        ids = [by[n] for n in names if n in by]
        if ids:
            self.shell.highlight(ids)

    def _node_selected(self, index: int) -> None:
        view = self.controller.view
        if view is not None and view.crumbs:
            return  # a node of a body: the engine's layers map onto the main graph's nodes
        if self.data is not None and self.data.mapping is not None:
            ks = self.data.mapping.node_layers.get(index)
            if ks:
                self.panel.select_layer(ks[0])
