"""The ``convis`` command line: the app (``app``), shared options, presentation, and one module per role."""
