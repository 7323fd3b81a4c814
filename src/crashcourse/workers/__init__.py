"""Worker programs the experiments start as real child processes."""
