"""The built-in families are registered by path: listing and resolving them imports no model code."""

import subprocess
import sys

from indexers.base import INDEXERS
from indexers.factory import available_indexers, has_text_tower


def test_listing_and_resolving_families_imports_no_torch():
    probe = ("import sys; from indexers.factory import has_text_tower; "
             "from retrieval.cli.present.models import model_rows; "
             "rows = model_rows('paper'); assert has_text_tower('clip:openai/clip-vit-base-patch32'); "
             "print(len(rows), sorted(m for m in ('torch', 'transformers', 'open_clip') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert int(out[0]) >= len(available_indexers()) and out[1:] == ["[]"]


def test_every_family_builder_resolves_to_a_function_of_its_module():
    import importlib

    for name in available_indexers():
        builder = INDEXERS.entry(name).builder
        module, _, function = builder.partition(":")
        assert callable(getattr(importlib.import_module(module), function)), name


def test_text_towers_are_known_before_building():
    towers = {"clip", "internvideo", "pe", "siglip2", "text", "qwen3-vl-embedding"}
    assert {n for n in available_indexers() if has_text_tower(n)} == towers
