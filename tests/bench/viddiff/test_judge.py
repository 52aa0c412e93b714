"""Open-mode judges: VidDiff's prompts, reading answers, validating matchings, the sbert judge, scoring."""

import json
import re
from pathlib import Path

import pytest

from bench.loaders import BenchDataError
from bench.viddiff.data import VidDiffSample
from bench.viddiff.judge import (
    LmmJudge,
    SbertJudge,
    UnreadableAnswer,
    make_judge,
    matching_prompt,
    opposite_prompt,
    parse_matching,
    parse_opposites,
    score_open,
    validate_matching,
)

GT = {"0": "the stance is wider", "2": "the squat is deeper", "10": "the back is more upright"}
PRED = {"1": "feet further apart", "0": "arms higher"}


def test_matching_prompt_is_filled_as_do_matching_fills_it():
    prompt = matching_prompt("a squat", GT, PRED)
    assert prompt.startswith('You are analyzing videos of people performing a specific action described as '
                             '"a squat."')
    assert f"- Dictionary 0: {json.dumps(GT)}\n- Dictionary 1: {json.dumps(PRED)}\n" in prompt
    assert '- The keys are from Dictionary 0: ["0", "2", "10"].' in prompt  # numeric order, not text order
    assert '- The available keys from Dictionary 1 are: ["0", "1"].' in prompt
    assert '    "2" : "0"\n}' in prompt  # {final} = number of gt differences - 1
    assert prompt.endswith('Important: the keys in this dictionary should be" ["0", "2", "10"]\n')
    assert not re.search(r"\{(final|action_description|differences[01]|dict[01]_keys)\}", prompt)


def test_opposite_prompt_lists_the_pairs():
    prompt = opposite_prompt([("a is bigger", "a is smaller")])
    assert "[['a is bigger', 'a is smaller']]" in prompt and "{statements}" not in prompt


@pytest.mark.parametrize("answer", [
    '{"matches": [{"key_dict0": "0", "key_dict1": "1"}, {"key_dict0": "2", "key_dict1": "None"}]}',
    'Here it is:\n```json\n{"0": "1", "2": "None", "10": null}\n```',
    '{"0": 1, "2": "none"}',
])
def test_parse_matching_reads_both_shapes(answer):
    match = parse_matching(answer)
    assert {k: v for k, v in match.items() if v is not None} == {"0": "1"}


@pytest.mark.parametrize("answer", ["", "no idea", "[1, 2]", '{"0": {"x": 1}}', '{"matches": "0"} {'])
def test_parse_matching_refuses_what_it_cannot_read(answer):
    with pytest.raises(UnreadableAnswer):
        parse_matching(answer)


def test_parse_opposites():
    assert parse_opposites('{"results": ["1", "0"]}', 2) == [True, False]
    with pytest.raises(UnreadableAnswer):
        parse_opposites('{"results": ["1"]}', 2)
    with pytest.raises(UnreadableAnswer):
        parse_opposites('{"results": ["1", "yes"]}', 2)


def test_validate_matching_drops_unknown_and_duplicate_keys():
    raw = {"0": "1", "7": "0", "2": "1", "10": "5", "3": None}
    match, dropped = validate_matching(raw, {**GT, "3": "x"}, PRED)
    assert match == {"0": "1"}
    assert len(dropped) == 3
    assert any("'7'" in d for d in dropped)  # not a gt key
    assert any("'5'" in d for d in dropped)  # not a predicted key
    assert any("already matched" in d for d in dropped)  # "1" used twice, first use kept


def test_make_judge_specs():
    assert isinstance(make_judge("lmm:qwen2-vl"), LmmJudge) and make_judge("lmm:qwen2-vl").spec == "qwen2-vl"
    assert make_judge("lmm").spec == "qwen2.5-vl"
    assert make_judge("sbert").threshold == 0.5 and make_judge("sbert:0.7").threshold == 0.7
    for bad in ("gpt-4o", "sbert:high"):
        with pytest.raises(BenchDataError):
            make_judge(bad)


def sample(key, gt, descriptions):
    return VidDiffSample(sample_key=key, split="easy", domain="fitness", action="fitness_0",
                         action_description="a squat", videos=((Path("a.mp4"), None), (Path("b.mp4"), None)),
                         differences=descriptions, gt=gt, n_open=3)


class FakeLmm:
    """Answers the matching prompt with a fixed text and the reverse check with all-"0" except flagged pairs."""

    def __init__(self, matching: str, opposite_of: tuple[str, ...] = ()):
        self.matching, self.opposite_of, self.prompts = matching, opposite_of, []

    def answer_text(self, prompt: str, max_new_tokens: int) -> str:
        self.prompts.append(prompt)
        if "Dictionary 0" in prompt:
            return self.matching
        pairs = eval(prompt.split("following format:\n\n", 1)[1].split("\n\nImportant", 1)[0])
        return json.dumps({"results": ["1" if p[1] in self.opposite_of else "0" for p in pairs]})


SAMPLES = [sample("s0", {"0": "a", "1": "b", "2": "c"}, {"0": "wider stance", "1": "deeper", "2": "faster"})]
PREDS = [{"a": {"description": "stance is wider", "prediction": "a"},
          "b": {"description": "goes less deep", "prediction": "a"}}]


def test_score_open_with_an_lmm_judge_and_the_reverse_check():
    fake = FakeLmm('{"matches": [{"key_dict0": "0", "key_dict1": "a"}, {"key_dict0": "1", "key_dict1": "b"}]}',
                   opposite_of=("goes less deep",))
    lines = []
    result = score_open(SAMPLES, PREDS, LmmJudge("fake", model=fake), lines.append)
    # 0 matched to 'a' (right); 1 matched to 'b', said in reverse, so its 'a' flips to 'b' (right)
    assert result["overall"] == {"value": 100.0, "correct": 2, "scored": 2}
    assert result["matches"] == {"s0": {"0": "a", "1": "b"}}
    assert result["reverse_statement_check"].startswith("applied")
    assert "not comparable" in result["comparability"] and "gpt-4o" in result["comparability"]
    assert lines == []


def test_score_open_without_the_reverse_check_keeps_the_letter():
    fake = FakeLmm('{"0": "a", "1": "b", "2": "None"}', opposite_of=())
    result = score_open(SAMPLES, PREDS, LmmJudge("fake", model=fake), lambda line: None)
    assert result["overall"]["correct"] == 1 and result["errors"]["err_flippedpred"] == 50.0


def test_an_unreadable_judge_answer_is_reported_and_matches_nothing():
    lines = []
    result = score_open(SAMPLES, PREDS, LmmJudge("fake", model=FakeLmm("I think 0 goes with a")), lines.append)
    assert result["overall"]["correct"] == 0 and result["unmatched"] == 2
    assert lines == ["judge answer unreadable for sample s0; counted as no matches"]
    assert result["judge_problems"] == lines


def test_a_bad_matching_is_cut_down_and_reported():
    fake = FakeLmm('{"0": "a", "1": "a", "9": "b"}')
    lines = []
    result = score_open(SAMPLES, PREDS, LmmJudge("fake", model=fake), lines.append)
    assert result["matches"] == {"s0": {"0": "a"}}
    assert len(lines) == 2 and all(line.startswith("sample s0: dropped") for line in lines)


@pytest.fixture(scope="module")
def sbert():
    return SbertJudge(0.5)


def test_sbert_matches_paraphrases_and_leaves_unrelated_unmatched(sbert):
    gt = {"0": "the person's feet are wider apart", "1": "the diver makes a bigger splash",
          "2": "the violinist's bow moves faster"}
    pred = {"0": "the cellist is wearing a red shirt", "1": "a larger splash when entering the water",
            "2": "the stance is wider, feet further apart"}
    assert sbert.match("an action", gt, pred) == {"0": "2", "1": "1"}


def test_sbert_threshold_and_empty_sides(sbert):
    gt, pred = {"0": "the jump is higher"}, {"5": "the jump is higher"}
    assert sbert.match("a jump", gt, pred) == {"0": "5"}
    assert SbertJudge(1.01, encoder=sbert._encoder()).match("a jump", gt, pred) == {}
    assert sbert.match("a jump", gt, {}) == {} and sbert.match("a jump", {}, pred) == {}


def test_score_open_with_sbert_says_the_reverse_check_is_not_applied(sbert):
    result = score_open(SAMPLES, PREDS, sbert, lambda line: None)
    assert result["reverse_statement_check"].startswith("not applied")
    assert result["judge"] == "sbert:0.5" and result["matches"]["s0"].get("0") == "a"


def test_a_tiny_random_qwen_through_the_real_factory(tmp_path):
    from bench.tiny.vlm import build_qwen_vl

    folder = build_qwen_vl(tmp_path / "qwen2-vl-tiny")
    judge = make_judge(f"lmm:{folder}", device="cpu")
    judge.max_new_tokens = 16
    lines = []
    result = score_open(SAMPLES, PREDS, judge, lines.append)  # random weights: most likely unreadable
    match = result["matches"]["s0"]
    assert set(match) <= set(SAMPLES[0].differences) and set(match.values()) <= set(PREDS[0])
    assert len(set(match.values())) == len(match)
    assert all(line.startswith(("judge answer unreadable for", "sample s0: dropped")) for line in lines)
    assert match or lines == ["judge answer unreadable for sample s0; counted as no matches"]
    assert result["overall"]["scored"] == 2
