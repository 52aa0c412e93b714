"""The import contract that keeps the CLI's commands above the engine names every one of them."""

import configparser
import pkgutil

import retrieval.cli
from tests.paths import ROOT

# what the user sees may read the shapes below the engine: the contract exempts these and no other module
PRESENTATION = {"retrieval.cli.present", "retrieval.cli.options"}


def test_the_cli_contract_covers_every_module_of_the_cli_but_its_presentation():
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    contract = config["importlinter:contract:cli"]
    assert "ignore_imports" not in contract
    sources = set(contract["source_modules"].split())
    modules = {f"retrieval.cli.{m.name}" for m in pkgutil.iter_modules(retrieval.cli.__path__)}
    assert modules - PRESENTATION == sources  # a package (bench) counts with everything inside it
    for layers in ("importlinter:contract:layers", "importlinter:contract:acyclic", "importlinter:contract:cli"):
        assert "ignore_imports" not in config[layers]
