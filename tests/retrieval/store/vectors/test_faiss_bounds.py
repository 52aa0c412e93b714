"""FAISS factory strings are checked from the string, before FAISS allocates anything: an IVF of 10^8 lists took
150 s and 16 GB to build empty, and was then stored as the index's setting."""

import shutil
import time

import numpy as np
import pytest
from typer.testing import CliRunner

from retrieval.cli.app import app
from retrieval.store.catalog import Catalog
from retrieval.store.vectors.faiss_index import MAX_IVF_LISTS, VectorIndex, check_factory
from retrieval.store.vectors.policy import FAISS_FACTORY, FAISS_PARAMS, build_index


@pytest.mark.parametrize("factory, says", [
    ("IVF99999999,Flat", "asks for 99,999,999 inverted lists"),
    (f"IVF{MAX_IVF_LISTS + 1},Flat", "inverted lists"),
    ("IVF1024(IVF99999999,Flat),Flat", "inverted lists"),
    ("IVF99999999_HNSW32,Flat", "inverted lists"),
    ("IMI2x16,Flat", r"2\^32 inverted lists"),
    ("HNSW100000,Flat", "neighbours a vector"),
    ("PQ99999999", "larger than any FAISS setting"),
])
def test_oversized_factories_are_refused_from_the_string(factory, says):
    started = time.monotonic()
    with pytest.raises(ValueError, match=says):
        VectorIndex.build(np.zeros(0, np.int64), np.zeros((0, 8), np.float32), 0, factory)
    assert time.monotonic() - started < 1.0


@pytest.mark.parametrize("factory", ["Flat", "HNSW32,Flat", "IVF4096,Flat", f"IVF{MAX_IVF_LISTS},Flat",
                                     "IMI2x10,Flat", "IVF256,PQ16"])
def test_factories_within_the_bounds_pass(factory):
    check_factory(factory)


def test_the_cli_refuses_one_before_anything_loads_or_is_stored(example_index, example_videos, tmp_path):
    index = tmp_path / "index"
    shutil.copytree(example_index, index)
    started = time.monotonic()
    ran = CliRunner().invoke(app, ["index", str(example_videos), "--index-dir", str(index), "--faiss-index",
                                   "IVF99999999,Flat"])
    assert ran.exit_code == 2, ran.output
    assert ran.stderr.strip().splitlines() == ["error: --faiss-index 'IVF99999999,Flat': IVF99999999 asks for "
                                               "99,999,999 inverted lists; at most 1,048,576"]
    assert time.monotonic() - started < 10
    with Catalog(index / "catalog.duckdb", read_only=True) as cat:
        assert not cat.setting(FAISS_FACTORY)


def test_an_oversized_setting_stored_earlier_falls_back_to_the_automatic_index(example_index, tmp_path):
    index = tmp_path / "index"
    shutil.copytree(example_index, index)
    with Catalog(index / "catalog.duckdb") as cat:
        cat.set_setting(FAISS_FACTORY, "IVF99999999,Flat")
        (row,) = cat.indexers()
        started = time.monotonic()
        built = build_index(cat, row.indexer)
    assert built.factory == "Flat" and built.size > 0 and time.monotonic() - started < 5


def test_index_resets_an_oversized_setting_stored_earlier_to_automatic_with_a_note(example_index, example_videos,
                                                                                    tmp_path):
    index = tmp_path / "index"
    shutil.copytree(example_index, index)
    with Catalog(index / "catalog.duckdb") as cat:  # as an older convis stored them, with that factory's parameters
        cat.set_setting(FAISS_FACTORY, "IVF99999999,Flat")
        cat.set_setting(FAISS_PARAMS, "nprobe=64")
    ran = CliRunner().invoke(app, ["index", str(example_videos), "--index-dir", str(index)])
    assert ran.exit_code == 0, ran.output
    assert "note: this index's FAISS index 'IVF99999999,Flat' is past what convis builds (IVF99999999 asks for " \
           "99,999,999 inverted lists; at most 1,048,576); it now uses the automatic index, without the search " \
           "parameters 'nprobe=64' set for it (--faiss-index chooses another)" in " ".join(ran.stderr.split())
    with Catalog(index / "catalog.duckdb", read_only=True) as cat:
        assert cat.setting(FAISS_FACTORY) == "" and cat.setting(FAISS_PARAMS) == ""
    again = CliRunner().invoke(app, ["index", str(example_videos), "--index-dir", str(index)])
    assert again.exit_code == 0 and "FAISS" not in again.stderr, again.output
