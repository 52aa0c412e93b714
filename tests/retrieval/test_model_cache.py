"""The models an engine keeps: each built once, and a build holds up only the requests waiting for that model."""

import threading
from concurrent.futures import ThreadPoolExecutor, wait

from retrieval import model_cache
from retrieval.model_cache import ModelCache


class Built:
    frame_spec = None

    def __init__(self, spec: str):
        self.spec = spec


def test_a_model_being_built_holds_up_no_other_and_each_is_built_once(monkeypatch):
    release, building, made = threading.Event(), threading.Event(), []

    def create_indexer(spec, **_options):
        made.append(spec)
        if spec == "slow":
            building.set()
            assert release.wait(20)
        return Built(spec)

    monkeypatch.setattr(model_cache, "create_indexer", create_indexer)
    cache = ModelCache()
    with ThreadPoolExecutor(3) as pool:
        slow = [pool.submit(cache.indexer, "slow"), pool.submit(cache.indexer, "slow")]
        assert building.wait(20)
        other = pool.submit(cache.indexer, "quick")
        done, _ = wait([other], timeout=20)  # answered while "slow" is still being built
        still_building = not any(f.done() for f in slow)
        release.set()
        first, second = (f.result(timeout=20) for f in slow)
    assert other in done and still_building and other.result().spec == "quick"
    assert first is second and sorted(made) == ["quick", "slow"]  # asked twice at once, built once


class Captioning:
    def __init__(self, spec: str):
        self.spec = spec

    def captioner(self, protocol: str):
        return self


def test_only_the_hf_static_backend_asks_for_the_static_kv_cache(monkeypatch):
    # the static cache's compiled decode step costs minutes before the first caption: the default hf leaves it out
    from rerankers import factory

    monkeypatch.setattr(factory, "create_for_protocol", lambda spec, protocol, device, **_: Captioning(spec))
    assert not getattr(ModelCache().captioner("qwen"), "static_cache", False)
    assert ModelCache(captioner_backend="hf-static").captioner("qwen").static_cache is True
