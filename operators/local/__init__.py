"""The local launcher's stages: stage_data, launch (a process per node), collect_logs."""
