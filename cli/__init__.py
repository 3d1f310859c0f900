"""The ``octotrain`` command: catalog setup, the demo, and the embedded default's launcher."""
