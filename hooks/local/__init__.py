"""The local launcher's hooks: a process per node on the worker, its admission rule, its
confinement."""
