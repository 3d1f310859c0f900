"""The catalog: what Octotrain knows about projects, algorithms, data, models, tasks and runs."""
