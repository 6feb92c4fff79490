from __future__ import annotations

import pytest
from PySide6.QtCore import QCoreApplication, QSettings, QThreadPool


@pytest.fixture(autouse=True)
def _isolated_settings(tmp_path, qapp):
    """Keep tests' QSettings (recent files, geometry) out of the user's."""
    QCoreApplication.setOrganizationName("SplitscopeTests")
    QCoreApplication.setApplicationName("SplitscopeTests")
    QSettings.setPath(QSettings.Format.NativeFormat, QSettings.Scope.UserScope, str(tmp_path / "settings"))
    QSettings().clear()
    yield
    # No worker may outlive its test.
    assert QThreadPool.globalInstance().waitForDone(30000), "a worker thread is still running"


@pytest.fixture
def window(qtbot):
    from splitscope.gui.shell.window import MainWindow

    w = MainWindow(parser="table")
    qtbot.addWidget(w)
    w.resize(1200, 800)
    w.show()
    yield w
    w.cancel_jobs()
    w.close()


def wait_idle(qtbot, w, timeout=60000):
    """Wait until the analysis and the layout are both done."""
    qtbot.waitUntil(
        lambda: (
            w.view is not None and not w.runner.running and not w.layout_runner.running and w.graph_model is not None
        ),
        timeout=timeout,
    )
