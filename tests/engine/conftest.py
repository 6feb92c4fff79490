from __future__ import annotations

import pytest
from splitscope.engine._optional import installed

needs_rtx = pytest.mark.skipif(
    not installed("tensorrt_rtx"), reason="TensorRT-RTX not installed (pip install 'splitscope[rtx]')"
)


@pytest.fixture
def save_model(tmp_path):
    """Save an onnx ModelProto under tmp_path and return its path."""
    import onnx

    def _save(model, name="model.onnx"):
        p = tmp_path / name
        onnx.save(model, p)
        return p

    return _save
