from __future__ import annotations

import os

import pytest

if os.environ.get("QT_QPA_PLATFORM") != "xcb":
    pytest.skip("screenshot tests run under Xvfb with QT_QPA_PLATFORM=xcb (.ci/run does this)", allow_module_level=True)
