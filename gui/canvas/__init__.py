"""The graph canvas, the painter it and the exports share, and the model panels (inspector, ops, summary)."""
