"""Jobs on another machine over SSH: targets, the connection, the remote job (same events as a local child)."""
