"""Profiling in the window: the Jobs and Profile panels, the Profile dialog, time-share colourings."""
