"""Sweeps: a grid of profile cells (models x dims x backends x precisions x targets) run on Ray or in sequence."""
