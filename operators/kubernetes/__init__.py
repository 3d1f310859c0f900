"""The Kubernetes launcher's stages: stage_data (prepare_pods), launch (a pod per node),
collect_logs, delete_service."""
