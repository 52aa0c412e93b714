"""`convis serve` builds the models requests need behind the listening server, and /health says what is warm."""

import json
import threading
import time
import urllib.request

import pytest
from fastapi.testclient import TestClient

from indexers.errors import ModelUnavailableError
from retrieval.api import Engine, SearchRequest
from retrieval.model_cache import ModelCache
from retrieval.serve.server import create_app
from retrieval.serve.warmup import PLANNING
from tests.indexes import CAPTIONS, indexed_copies
from tests.retrieval.serve.browser import serving

LOCAL = "http://localhost"  # the app answers loopback host names only


@pytest.fixture(scope="module")
def captioned(tmp_path_factory):
    """One example clip indexed with EfficientNet-Lite0 and its caption: a visual signal and a text one."""
    return indexed_copies(tmp_path_factory.mktemp("warm"), ("cup.mp4",), ["efficientnet-lite0"],
                          captions=CAPTIONS) / ".convis"


@pytest.fixture
def gated(monkeypatch):
    """Builds that wait for ``gate``, then fail for specs in ``missing``; ``asked``: the specs, in order."""
    gate, asked, missing = threading.Event(), [], set()

    def build(self, spec, protocol="fast", notices=None):
        asked.append(spec)
        assert gate.wait(30)
        if spec.split(":")[0] in missing:
            raise ModelUnavailableError(f"{spec}: weights not found")
        return object()

    monkeypatch.setattr(ModelCache, "indexer", build)
    monkeypatch.setattr(ModelCache, "text_tower", build)
    return gate, asked, missing


def warm_state(client) -> tuple[dict, list, list]:
    data = client.get("/health").json()
    return data["warm"], data["warming"], data["notices"]


def test_text_towers_come_first_and_requests_then_build_nothing(captioned):
    engine = Engine(captioned)
    steps = engine.warm_plan()
    assert [s.label for s in steps] == ["text tower text", "indexer efficientnet-lite0", "indexer text"]
    done = []
    engine.warm(steps, [], lambda step, built: done.append(built))
    assert done == [True, True, True]
    built, towers = set(engine.models.indexers()), engine.models.text_towers()
    engine.search(SearchRequest("a hand holding a cup", k=1))
    assert set(engine.models.indexers()) == built  # the search found its text tower warm
    assert engine.models.text_towers() == towers and type(towers[0]).__name__ == "OnnxTextTower"


def test_health_says_what_is_warming_and_what_is_warm(captioned, gated):
    gate, asked, _ = gated
    with TestClient(create_app(captioned), base_url=LOCAL) as client:
        state = client.app.state.convis
        assert warm_state(client)[:2] == ({"text_towers": {}, "indexers": {}}, [])  # not warming: built when asked
        state.warmup.start()
        deadline = time.monotonic() + 30
        while not asked:  # the index read, the first model being built
            assert time.monotonic() < deadline
            time.sleep(0.01)
        warm, warming, _ = warm_state(client)  # answered while a model is being built
        assert warm == {"text_towers": {"text": False}, "indexers": {"efficientnet-lite0": False, "text": False}}
        assert warming == ["text tower text", "indexer efficientnet-lite0", "indexer text"]
        gate.set()
        state.warmup.join(30)
        warm, warming, notices = warm_state(client)
    assert warm == {"text_towers": {"text": True}, "indexers": {"efficientnet-lite0": True, "text": True}}
    assert warming == [] and notices == []


def test_a_model_that_cannot_be_built_is_a_notice(captioned, gated):
    gate, _, missing = gated
    missing.add("efficientnet-lite0")
    gate.set()
    with TestClient(create_app(captioned), base_url=LOCAL) as client:
        client.app.state.convis.warmup.start()
        client.app.state.convis.warmup.join(30)
        warm, warming, notices = warm_state(client)
        assert client.get("/videos").status_code == 200  # the server goes on
    assert warm["indexers"] == {"efficientnet-lite0": False, "text": True} and warming == []
    assert notices == ["indexer efficientnet-lite0 not warmed: efficientnet-lite0:package:efficientnet-lite0-pytorch-"
                       "model: weights not found"]


def test_the_server_warms_once_it_listens(captioned, gated):
    gate, asked, _ = gated

    def health(url):
        with urllib.request.urlopen(url + "/health", timeout=10) as answer:
            return json.loads(answer.read())

    with serving(captioned) as url:
        assert health(url)["warming"] in ([PLANNING], ["text tower text", "indexer efficientnet-lite0", "indexer text"])
        gate.set()
        deadline = time.monotonic() + 30
        while (data := health(url))["warming"]:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    assert all(data["warm"]["indexers"].values()) and asked[0].startswith("text:")
