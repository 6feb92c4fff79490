"""Showing the split: the planner, present mode and the report."""
