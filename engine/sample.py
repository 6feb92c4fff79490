"""Where the bundled sample model lives (a module of its own so the GUI can name it without importing onnx)."""

from __future__ import annotations

from pathlib import Path

SAMPLE_MODEL = Path(__file__).resolve().parent.parent / "resources" / "sample.onnx"
