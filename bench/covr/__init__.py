"""TF-CoVR (composed video retrieval, arXiv 2506.05274): its metric, computed as its released code does."""
