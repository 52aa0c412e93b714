"""What is kept on disk: the DuckDB catalog, FAISS indices and their policy."""
