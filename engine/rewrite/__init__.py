"""Rewriting a model on a copy, never the original: an ONNX optimizer pass now; Q/DQ and casts later."""
