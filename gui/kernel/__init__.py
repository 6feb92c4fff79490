"""The kernel workbench in the window."""
