"""The public face: every name in ``retrieval.api.__all__`` is there, the engine re-exports nothing, and importing
the face is light (the names that need DuckDB, FAISS or NumPy load when first asked for)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

import retrieval.api as api
from retrieval.api import Engine
from tests.paths import ROOT


def test_every_public_name_resolves_to_the_object_its_module_defines():
    assert len(set(api.__all__)) == len(api.__all__)
    for name in api.__all__:
        assert getattr(api, name) is not None, name
    assert api.Engine is Engine
    assert set(api._LAZY) <= set(api.__all__)
    assert set(api.__all__) <= set(dir(api))


def test_the_lazy_names_are_the_ones_named_for_type_checkers():
    tree = ast.parse((ROOT / "retrieval" / "api.py").read_text())
    checked = next(node for node in tree.body if isinstance(node, ast.If))  # `if TYPE_CHECKING:`
    named = {alias.asname or alias.name for node in checked.body for alias in node.names}
    assert named == set(api._LAZY)


def test_an_unknown_name_is_an_attribute_error():
    try:
        api.not_a_name  # noqa: B018
    except AttributeError as exc:
        assert "not_a_name" in str(exc)
    else:
        raise AssertionError("retrieval.api.not_a_name resolved")


def test_importing_the_face_loads_no_catalog_index_or_arrays():
    probe = ("import json, sys; import retrieval.api; from retrieval.api import DEFAULT_K, ConvisError, format_span; "
             "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & {'duckdb', 'faiss', 'numpy'})))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == []


def test_the_engine_module_re_exports_nothing():
    tree = ast.parse((ROOT / "retrieval" / "engine.py").read_text())
    laundered = [alias.name for node in tree.body if isinstance(node, ast.ImportFrom) for alias in node.names
                 if alias.asname == alias.name]
    assert laundered == []
