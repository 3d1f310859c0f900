"""Code that runs beside the training process, in a pod or as the local launcher's wrapper.

Nothing here imports the project: these files are copied into images that do not have it.
"""
