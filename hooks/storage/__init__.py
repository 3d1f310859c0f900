"""The object store (a local folder or S3) and the byte-moving helpers under it."""
