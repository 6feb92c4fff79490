"""The view model: the scope hierarchy and the compound layered layout of the canvas."""
