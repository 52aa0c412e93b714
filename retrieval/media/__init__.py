"""Reading videos: finding files, probing and decoding sampled frames."""
