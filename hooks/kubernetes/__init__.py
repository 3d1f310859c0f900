"""The Kubernetes launcher's hooks: pods, the API, Kueue, and what the image does inside a pod."""
