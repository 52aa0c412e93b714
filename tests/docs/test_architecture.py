"""The architecture page's floors are the import-linter layers, in their order."""

import configparser
import re

from tests.paths import ROOT


def linter_layers() -> list[str]:
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    return [line.strip() for line in config["importlinter:contract:layers"]["layers"].splitlines() if line.strip()]


def page_floors() -> list[str]:
    text = (ROOT / "docs/architecture.md").read_text()
    section = text.split("## Floors", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\d+\. `([^`]+)`", section, re.M)


def test_the_floors_are_the_import_linter_layers():
    assert page_floors() == linter_layers()
