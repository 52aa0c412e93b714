"""The import contract that keeps the CLI above the public face names every one of its modules."""

import configparser
import pkgutil

import retrieval.cli
from tests.paths import ROOT


def test_the_cli_contract_covers_every_module_of_the_cli():
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    contract = config["importlinter:contract:cli"]
    assert "ignore_imports" not in contract
    sources = set(contract["source_modules"].split())
    modules = {f"retrieval.cli.{m.name}" for m in pkgutil.iter_modules(retrieval.cli.__path__)}
    assert modules == sources  # a package (bench, present) counts with everything inside it
    for layers in ("importlinter:contract:layers", "importlinter:contract:acyclic", "importlinter:contract:cli"):
        assert "ignore_imports" not in config[layers]
