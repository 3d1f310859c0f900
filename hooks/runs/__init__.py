"""A run's files wherever its launcher keeps them (run_files), and what is read and written among
them: logs, metrics, progress, the abort flag, restarts, stops, checkpoints, the archive."""
