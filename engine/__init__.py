"""Splitscope's engine: pure Python, no Qt. Sub-packages by concern (onnxio, split, view, report)."""
