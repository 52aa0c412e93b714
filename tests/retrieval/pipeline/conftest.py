import pytest

from retrieval.api import Engine


@pytest.fixture
def engine(tmp_path, tiny_models):
    """An engine on an empty index; ``spec`` is a tiny random DINOv2 to index with."""
    eng = Engine(tmp_path / "index")
    eng.spec = f"dinov2:{tiny_models['dinov2']}"
    return eng
