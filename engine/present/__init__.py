"""Showing the split to people: the HTML/PDF report, its SVG figures, Model Explorer node data."""
