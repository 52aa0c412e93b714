"""Indexing: decode and embed jobs, the run that writes the catalog, distributors (processes, Ray)."""
