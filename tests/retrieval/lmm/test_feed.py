"""The feed: the next batch prepared while the model runs this one, in order, a failure costing its item only."""

import threading

import pytest

from retrieval.lmm.feed import Failed, Feed, ProcessWorkers, pinned


def tenfold(item: int) -> int:
    if item == 3:
        raise ValueError(f"item {item}   is  broken")
    return item * 10


def test_the_next_batch_is_prepared_before_the_model_finishes_this_one():
    events = []
    next_started = threading.Event()

    def prepare(item):
        events.append(("prepare", item))
        if item == 2:  # the first item of the second batch
            next_started.set()
        return item

    for ready in Feed(prepare)([[0, 1], [2, 3], [4]]):
        events.append(("model starts", tuple(ready.items)))
        if ready.items == [0, 1]:
            # a slow model: it finishes its first batch only once the next batch's preparation has begun (the wait
            # returns False, and the test fails, where preparation waits for the model instead)
            assert next_started.wait(timeout=60)
        events.append(("model ends", tuple(ready.items)))
    assert events.index(("prepare", 2)) < events.index(("model ends", (0, 1)))
    assert [e for e in events if e[0] == "model ends"] == [("model ends", (0, 1)), ("model ends", (2, 3)),
                                                            ("model ends", (4,))]


@pytest.mark.parametrize("distributor", [None, "processes"])
def test_answers_equal_the_sequential_path_and_a_failure_costs_its_item(distributor):
    batches = [[0, 1], [2, 3], [4, 5]]
    workers = ProcessWorkers(2) if distributor else None
    try:
        got = [(ready.items, ready.values) for ready in Feed(tenfold, distributor=workers)(batches)]
    finally:
        if workers is not None:
            workers.close()
    assert got == [([0, 1], [0, 10]), ([2, 3], [20, Failed("item 3 is broken")]), ([4, 5], [40, 50])]


def test_the_batch_inputs_are_collated_from_the_prepared_items_only():
    got = [ready.inputs for ready in Feed(tenfold, collate=lambda items, values: sum(values))([[1, 2], [3], [3, 4]])]
    assert got == [30, None, 40]


def test_a_consumer_that_leaves_stops_the_producer():
    prepared = []

    def prepare(item):
        prepared.append(item)
        return item

    with pytest.raises(KeyboardInterrupt):
        for ready in Feed(prepare, depth=1)([[i] for i in range(100)]):
            if ready.items == [1]:
                raise KeyboardInterrupt
    assert not [t for t in threading.enumerate() if t.name == "feed"]
    assert len(prepared) < 100  # bounded: at most the queue's depth and the batch in hand ahead


def test_an_error_outside_an_item_reaches_the_consumer():
    def batches():
        yield [1]
        raise OSError("the work list broke")

    with pytest.raises(OSError, match="work list broke"):
        list(Feed(tenfold)(batches()))


def test_pinning_leaves_host_values_as_they_are_without_cuda():
    torch = pytest.importorskip("torch")
    value = {"pixel_values": torch.zeros(2), "ids": [torch.ones(1)]}
    out = pinned(value)
    assert out["pixel_values"].is_pinned() == torch.cuda.is_available()
