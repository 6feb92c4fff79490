"""The shell: the main window, its menus, palette, exports and tools, and the app's launch."""
