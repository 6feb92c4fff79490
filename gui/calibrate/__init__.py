"""Calibration in the window: the Calibrate dialog, the Calibration panel, the plan's colouring."""
