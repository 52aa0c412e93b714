"""Importing this module registers every built-in indexer family."""

from indexers import clip, dinov2, efficientnet, internvideo, text, videomae  # noqa: F401
