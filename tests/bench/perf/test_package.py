"""``bench.perf``'s names are imported at first use, and each is the function or class it names whatever
submodules were imported before."""

import importlib
import pkgutil
import types

import bench.perf


def test_every_exported_name_is_the_object_not_a_submodule():
    for module in pkgutil.iter_modules(bench.perf.__path__):
        importlib.import_module(f"bench.perf.{module.name}")  # each sets bench.perf.<name> to itself
    for name in bench.perf.__all__:
        value = getattr(bench.perf, name)
        assert not isinstance(value, types.ModuleType), name
        assert value is getattr(importlib.import_module(bench.perf._WHERE[name]), name)
