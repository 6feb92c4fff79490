"""Remote targets and sweeps in the window: the Targets dialog, the Sweep dialog and panel."""
