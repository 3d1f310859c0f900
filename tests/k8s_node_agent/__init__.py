"""A node agent for the real control plane of ``tests.k8s_control_plane``: nodes whose pods
run as processes on this machine (``agent.NodeAgent``), since no container runtime can run
here. Test equipment, never a product feature."""
