"""A stored record's fields of the wrong type are a ValueError in the record's own words, naming the field, never
converted into something the writer did not mean: a task id of null was "None" (every such task one id), token
ids of text were read character by character, 2.5 turns were 2, an infinite reward was averaged. Readers add the
file:line (tests/user_errors/test_data_paths.py) and skip the record.
"""

from __future__ import annotations

import math
import re

import pytest

from crossgym.environments.sources.loaders import RowMapper
from crossgym.protocol import Completion, Task, Verdict
from crossgym.protocol.episode import Rollout
from crossgym.protocol.errors import ConfigError
from crossgym.scoring import Provenance

np = pytest.importorskip("numpy")


def _task(tid: object) -> dict[str, object]:
    return {"id": tid, "prompt": "q", "verifier": "exact_match"}


@pytest.mark.parametrize(("tid", "want"), [("a", "a"), (3, "3"), (np.int64(4), "4"), (1.5, "1.5")])
def test_a_task_id_is_text_or_a_number(tid: object, want: str) -> None:
    assert Task.from_dict(_task(tid)).id == want


@pytest.mark.parametrize(("tid", "words"), [
    (None, "got null"), (True, "got true/false"), ([1], "got a list"), ({"a": 1}, "got an object"),
    (math.nan, "got nan"), (math.inf, "got inf"),
])
def test_a_task_id_that_is_no_name_is_refused(tid: object, words: str) -> None:
    with pytest.raises(ValueError, match=re.escape("'id' must be text or a finite number, " + words)):
        Task.from_dict(_task(tid))


def test_a_dataset_row_without_an_id_is_numbered_and_a_bad_one_named() -> None:
    rows = RowMapper("mine", verifier="exact_match")
    assert rows({"prompt": "q", "id": None}, 7, "f.jsonl:8").id == "mine-7"
    assert rows({"prompt": "q", "id": math.nan}, 7, "f.jsonl:8").id == "mine-7"  # pandas' missing value
    assert rows({"prompt": "q", "id": 12}, 7, "f.jsonl:8").id == "12"
    with pytest.raises(ConfigError, match=r"f\.jsonl:8: 'id' must be text or a finite number, got true/false"):
        rows({"prompt": "q", "id": True}, 7, "f.jsonl:8")


@pytest.mark.parametrize(("field", "value", "words"), [
    ("token_ids", "abc", "'token_ids' must be a list of integers, got text ('abc')"),
    ("token_ids", [1, 1.5], "'token_ids' must be a list of integers, got a number (1.5) at item 2"),
    ("token_ids", ["12"], "'token_ids' must be a list of integers, got text ('12') at item 1"),
    ("token_ids", [True], "'token_ids' must be a list of integers, got true/false (True) at item 1"),
    ("logprobs", ["a"], "'logprobs' must be a list of numbers, got text ('a') at item 1"),
    ("logprobs", 0.5, "'logprobs' must be a list of numbers, got a number (0.5)"),
])
def test_completion_numbers_of_another_type_are_named(field: str, value: object, words: str) -> None:
    with pytest.raises(ValueError, match=re.escape(words)):
        Completion.from_dict({"messages": [], field: value})


def test_completion_numbers_read_from_lists_and_arrays() -> None:
    c = Completion.from_dict({"messages": [], "token_ids": np.array([3, 4]), "logprobs": [-0.5, -math.inf, 0]})
    assert c.token_ids == (3, 4) and all(type(i) is int for i in c.token_ids)
    assert c.logprobs == (-0.5, -math.inf, 0.0)


def _rollout(**fields: object) -> dict[str, object]:
    doc: dict[str, object] = {"task": _task("t"), "completion": {"messages": []},
                              "verdict": {"reward": 1.0, "passed": True}}
    doc.update(fields)
    return doc


@pytest.mark.parametrize(("fields", "words"), [
    ({"turns": "x"}, "'turns' must be a whole number, got text ('x')"),
    ({"turns": 2.5}, "'turns' must be a whole number, got a number (2.5)"),
    ({"timings": {"gen": "slow"}}, "'timings' must hold numbers (seconds), got text ('slow') for 'gen'"),
    ({"timings": [1]}, "'timings' must be an object, got a list ([1])"),
    ({"provenance": "eval"}, "'provenance' must be an object, got text ('eval')"),
    ({"verdict": {"reward": 1e400, "passed": True}}, "a verdict's 'reward' must be finite, got inf"),
    ({"verdict": {"reward": 1.0, "passed": True, "components": {"a": "x"}}},
     "a verdict's component 'a' must be a number, got text ('x')"),
])
def test_a_rollout_field_of_another_type_is_named(fields: dict[str, object], words: str) -> None:
    with pytest.raises(ValueError, match=re.escape(words)):
        Rollout.from_dict(_rollout(**fields))


def test_a_rollout_reads_what_columnar_writers_store() -> None:
    r = Rollout.from_dict(_rollout(turns=2.0, timings=None, provenance=None,
                                   verdict={"reward": None, "passed": None, "components": {"a": None, "b": 1}}))
    assert r.turns == 2 and type(r.turns) is int and r.timings == {} and r.provenance == {}
    assert math.isnan(r.verdict.reward) and not r.verdict.passed
    assert math.isnan(r.verdict.components["a"]) and r.verdict.components["b"] == 1.0
    assert Verdict.from_dict({"reward": np.float64(0.5), "passed": np.bool_(False)}).reward == 0.5


@pytest.mark.parametrize(("prov", "words"), [
    ({"schema": "two"}, "provenance: 'schema' must be a whole number, got text ('two')"),
    ({"verifier": {"name": "x", "params": "abc"}}, "provenance: the verifier's 'params' must be an object"),
    ({"verifier": "x", "verifier_params": [1]}, "provenance: the verifier's 'params' must be an object"),
])
def test_a_provenance_of_another_type_is_named(prov: dict[str, object], words: str) -> None:
    with pytest.raises(ValueError, match=re.escape(words)):
        Provenance.from_dict(prov)


def test_a_provenance_schema_from_a_float_column_reads() -> None:
    assert Provenance.from_dict({"schema": 2.0}).schema == 2
