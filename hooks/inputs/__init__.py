"""A node's inputs on its machine: staging through the node cache, resource mounts."""
