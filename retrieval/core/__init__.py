"""Leaf building blocks every layer may use: the model registry, frame rules and decode sizes, concepts."""
