"""The split summary's charts: stacked bars of the split by status and by role, drawn in the palette's colours,
each bar as long as its share, hidden until the first figures."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QColor
from splitscope.engine.model import Status
from splitscope.engine.report.stats import role_summary, split_summary
from splitscope.gui.canvas.bars import BarChart, BarRow

from tests.gui.conftest import wait_idle

DATA = Path(__file__).resolve().parents[1] / "data"


def _run_of(image, y: int, colour: QColor) -> int:
    """How many pixels of row ``y`` are ``colour``."""
    return sum(1 for x in range(image.width()) if image.pixelColor(x, y) == colour)


def test_a_bar_is_as_long_as_its_share_and_stacked_in_two_colours(qtbot):
    chart = BarChart("Share")
    qtbot.addWidget(chart)
    assert not chart.isVisible() and chart.isHidden()
    blue, orange = QColor("#0072B2"), QColor("#D55E00")
    chart.set_bars(
        [BarRow("nodes", 75.0, 25.0), BarRow("FLOPs", 50.0, 0.0)],
        full=100.0,
        axis_label="%",
        colours=(blue, orange),
        background=QColor("#fafafa"),
        text=QColor("#1b1b1b"),
    )
    chart.resize(400, 170)
    chart.show()
    qtbot.waitExposed(chart)
    image = chart.grab().toImage()
    rows = [y for y in range(image.height()) if _run_of(image, y, blue)]
    first = [y for y in rows if _run_of(image, y, orange)]  # the stacked bar
    second = [y for y in rows if not _run_of(image, y, orange)]
    assert first and second and max(first) < min(second)
    a, b = _run_of(image, first[len(first) // 2], blue), _run_of(image, first[len(first) // 2], orange)
    assert abs(a / b - 3.0) < 0.1  # 75 against 25
    assert abs(_run_of(image, second[len(second) // 2], blue) / a - 50 / 75) < 0.02
    chart.clear()
    assert chart.rows == [] and not chart.isHidden()  # keeps its place in the layout


def test_the_role_chart_scales_to_its_longest_bar():
    chart = BarChart("Roles")
    chart.rows = [BarRow("compute", 10, 2), BarRow("shape", 3, 0)]
    assert chart.scale() == 12
    chart.rows = []
    assert chart.scale() == 1.0


def test_the_summary_shows_the_model_split_in_its_charts(qtbot, window):
    window.open_model(DATA / "torch_two_stage.onnx")
    wait_idle(qtbot, window)
    gm = window.graph_model
    qtbot.waitUntil(lambda: window.summary.status_plot.rows != [])
    s, roles = split_summary(gm), role_summary(gm)
    status_rows = window.summary.status_plot.rows
    assert [r.label for r in status_rows] == ["nodes", "FLOPs"]
    assert status_rows[0].second == s[Status.PLUGIN.value]["node_share"] * 100 > 0  # the custom NMS
    role_rows = window.summary.role_plot.rows
    assert {r.label: (r.first, r.second) for r in role_rows} == {
        k: (v["delegate_nodes"], v["plugin_nodes"]) for k, v in roles.items()
    }


def test_a_chart_too_short_for_bars_draws_none(qtbot):
    chart = BarChart("Roles")
    qtbot.addWidget(chart)
    blue = QColor("#0072B2")
    rows = [BarRow(r, 3.0, 1.0) for r in ("compute", "shape", "data-movement", "pre", "post", "control")]
    chart.set_bars(rows, full=None, axis_label="nodes", colours=(blue, blue), background=QColor("white"),
                   text=QColor("black"))  # fmt: skip
    chart.setMinimumHeight(0)
    chart.resize(300, 30)
    image = chart.grab().toImage()
    assert not any(_run_of(image, y, blue) for y in range(image.height()))
