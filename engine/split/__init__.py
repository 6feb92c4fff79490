"""The split: the operator table, the real parser (in a child process), costs, roles, partitions, analysis."""
