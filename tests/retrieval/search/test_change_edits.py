"""The anchor's texts edited by an LMM as a composed query's change says: the request holds the text and the change,
the model's decoded answer is the edited text, answers are cached beside the index (a second query asks no model),
and an answer that cannot be used leaves the text to the rule; through the real tiny Qwen2-VL and a real index of
the example clips."""

import shutil

import pytest
import torch

from bench.tiny.vlm import build_qwen_vl
from rerankers.prompts.edit import EDIT_TOKENS, edit_request, read_edit
from retrieval.api import Engine, QueryRequest
from retrieval.store.caches.edits import EDITS_NAME
from retrieval.store.catalog import Catalog
from retrieval.store.index_dir import CAPTIONER
from tests.retrieval.search.test_change_reading import example_set  # noqa: F401  (the indexed example clips)

CHANGE = "a cartoon animal in a meadow instead of a man in a car"
ANSWER = "A cartoon rabbit hops through a sunny meadow."


def test_the_request_holds_the_text_and_the_change():
    request = edit_request("A man sits inside a moving car.", CHANGE)
    assert "'A man sits inside a moving car.'" in request and f"'{CHANGE}'" in request
    with pytest.raises(ValueError):
        edit_request(" ", CHANGE)


@pytest.mark.parametrize("answer, expected, why", [
    (ANSWER, ANSWER, ""),
    (f'Edited description: "{ANSWER}"', ANSWER, ""),  # a label and quotes are not the text
    ("   ", None, "empty"),
    ("#### 1234 $$$ ((( ))) 99", None, "not words"),
    ("word " * 80, None, "too long"),
])
def test_an_answer_is_the_edited_text_unless_it_cannot_be(answer, expected, why):
    edited, said = read_edit(answer, "A man sits inside a moving car.", CHANGE)
    assert edited == expected and said.startswith(why)


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    return str(build_qwen_vl(tmp_path_factory.mktemp("edit-lmm") / "qwen2-vl-tiny"))


class Generate:
    """Stands in for the model's generate: records each prompt as the tokenizer decodes it and answers ``answer``'s
    tokens after the prompt's, as generate returns them."""

    def __init__(self, reranker, answer: str):
        self.tokenizer = reranker.processor.tokenizer
        self.answer = torch.tensor([self.tokenizer.encode(answer, add_special_tokens=False)])
        self.prompts: list[str] = []
        reranker.model.generate = self

    def __call__(self, input_ids, generation_config=None, **kwargs):
        assert generation_config.max_new_tokens == EDIT_TOKENS
        self.prompts.append(self.tokenizer.decode(input_ids[0].tolist()))
        return torch.cat([input_ids, self.answer.to(input_ids.dtype)], dim=1)


def _index(example_set, tmp_path, captioner: str | None = None):  # noqa: F811
    """A copy of the example set's index (what the test writes stays in it), ``captioner`` recorded as its own."""
    index = tmp_path / ".convis"
    shutil.copytree(example_set / ".convis", index)
    if captioner is not None:
        with Catalog(index / "catalog.duckdb") as catalog:
            catalog.set_setting(CAPTIONER, captioner)
    return index


def _query(engine, example_set, **kwargs):  # noqa: F811
    return engine.query(QueryRequest(example_set / "carphone_pristine.mp4", (), k=3, change=CHANGE, **kwargs))


def test_the_index_captioner_edits_the_anchor_texts_and_a_second_query_asks_no_model(example_set, tmp_path,  # noqa: F811
                                                                                     qwen):
    index = _index(example_set, tmp_path, captioner=qwen)
    engine = Engine(index)
    model = engine.reranker(qwen)
    generate = Generate(model, ANSWER)
    result = _query(engine, example_set)
    said = result.change
    texts = set(said["edited_by"])
    assert "caption" in texts and len(generate.prompts) == len(texts)  # one request a text
    assert all(CHANGE in p for p in generate.prompts)
    assert any("A man sits inside a moving car" in p for p in generate.prompts)  # the anchor's caption, asked about
    assert said["edited"] == {name: ANSWER for name in texts}  # the decoded answer is the edited text
    assert said["edited_by"] == {name: {"by": f"lmm:{model.model_id}", "cached": False} for name in texts}
    assert (index / EDITS_NAME).is_file()

    again = Engine(index)
    repeat = Generate(again.reranker(qwen), "never asked")
    second = _query(again, example_set)
    assert repeat.prompts == []  # every answer from the edit cache: no model call
    assert second.change["edited"] == said["edited"]
    assert second.change["edited_by"] == {name: {"by": f"lmm:{model.model_id}", "cached": True} for name in texts}
    assert [h.path for h in second.hits] == [h.path for h in result.hits]


def test_an_answer_that_is_not_words_leaves_the_text_to_the_rule_with_a_notice(example_set, tmp_path,  # noqa: F811
                                                                               qwen):
    engine = Engine(_index(example_set, tmp_path, captioner=qwen))
    Generate(engine.reranker(qwen), "#### 1234 $$$ ((( ))) 99")
    result = _query(engine, example_set)
    said = result.change
    assert said["edited_by"]["caption"] == {"by": "rule", "cached": False}
    assert said["edited"]["caption"].startswith("A cartoon animal sits inside a moving meadow")  # the rule's edit
    assert any("LMM's edit of the anchor's caption could not be used (not words); the rule edited it" in n
               for n in result.notices)


def test_a_model_that_fails_while_answering_leaves_the_texts_to_the_rule(example_set, tmp_path, qwen):  # noqa: F811
    engine = Engine(_index(example_set, tmp_path, captioner=qwen))

    def out_of_memory(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    engine.reranker(qwen).model.generate = out_of_memory
    result = _query(engine, example_set)
    assert result.change["edited_by"]["caption"] == {"by": "rule", "cached": False} and result.hits
    assert any("could not edit the anchor's texts (CUDA out of memory" in n for n in result.notices)


def test_the_query_reranker_edits_before_the_index_captioner(example_set, tmp_path, qwen):  # noqa: F811
    engine = Engine(_index(example_set, tmp_path, captioner="qwen2-vl:/no/such/folder"))
    model = engine.reranker(qwen)
    asked = []
    model.answer_text = lambda prompt, tokens: asked.append(prompt) or ANSWER
    result = _query(engine, example_set, reranker=qwen, rerank_top=1)
    assert asked and result.change["edited_by"]["caption"]["by"] == f"lmm:{model.model_id}"


def test_a_captioner_that_is_not_here_and_an_edit_cache_that_cannot_open_cost_notices_not_the_query(
        example_set, tmp_path, qwen):  # noqa: F811
    missing = Engine(_index(example_set, tmp_path / "a", captioner="qwen2-vl:/no/such/folder"))
    result = _query(missing, example_set)
    assert result.hits and result.change["edited_by"]["caption"]["by"] == "rule"
    assert any("could not edit the anchor's texts" in n and "the rule edits them" in n for n in result.notices)

    index = _index(example_set, tmp_path / "b", captioner=qwen)
    (index / EDITS_NAME).mkdir()  # a cache file that cannot be opened, as in a read-only index
    engine = Engine(index)
    generate = Generate(engine.reranker(qwen), ANSWER)
    result = _query(engine, example_set)
    assert result.hits and result.change["edited"]["caption"] == ANSWER and generate.prompts
    assert any(n.startswith(f"edit cache {index / EDITS_NAME} unavailable") for n in result.notices)
