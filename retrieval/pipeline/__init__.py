"""Indexing: the run that plans and writes the catalog, the decode and embed stages, and the executors that
run them (worker processes here, or a Ray cluster)."""
