"""The ifeval task source: IFEval-format rows (key, prompt, instruction_id_list, kwargs) as instructions tasks.

Every row here is written for these tests in IFEval's format; none is IFEval's data."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

import crossgym
from crossgym.api import load_verifier
from crossgym.cli import main
from crossgym.environments.sources.ifeval import MAPPING, UNSUPPORTED, constraint_for
from crossgym.protocol.errors import ConfigError
from crossgym.protocol.task import Completion, Task

#: every instruction id the source maps: (kwargs as IFEval writes them, the constraint expected)
CASES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("keywords:existence", {"keywords": ["harbor", "lantern"]},
     {"type": "keywords_include", "keywords": ["harbor", "lantern"]}),
    ("keywords:forbidden_words", {"forbidden_words": ["very", "really"]},
     {"type": "keywords_exclude", "keywords": ["very", "really"]}),
    ("keywords:frequency", {"keyword": "tide", "frequency": 3, "relation": "at least"},
     {"type": "keyword_frequency", "keyword": "tide", "min": 3}),
    ("keywords:letter_frequency", {"letter": "Q", "let_frequency": 4, "let_relation": "less than"},
     {"type": "letter_frequency", "letter": "q", "max": 3}),
    ("length_constraints:number_words", {"num_words": 120, "relation": "less than"},
     {"type": "word_count", "max": 119}),
    ("length_constraints:number_sentences", {"num_sentences": 6, "relation": "at least"},
     {"type": "sentence_count", "min": 6}),
    ("length_constraints:number_paragraphs", {"num_paragraphs": 3},
     {"type": "paragraph_count", "separator": "***", "exactly": 3}),
    ("length_constraints:nth_paragraph_first_word", {"num_paragraphs": 4, "nth_paragraph": 2, "first_word": "Tide"},
     {"type": "first_word_of_paragraph", "n": 2, "word": "tide", "paragraphs": 4}),
    ("detectable_content:number_placeholders", {"num_placeholders": 2}, {"type": "placeholders", "min": 2}),
    ("detectable_content:postscript", {"postscript_marker": "P.P.S"}, {"type": "postscript", "marker": "P.P.S"}),
    ("detectable_format:number_bullet_lists", {"num_bullets": 4}, {"type": "bullet_count", "exactly": 4}),
    ("detectable_format:number_highlighted_sections", {"num_highlights": 2},
     {"type": "highlighted_sections", "min": 2}),
    ("detectable_format:multiple_sections", {"section_spliter": "Part", "num_sections": 3},
     {"type": "sections", "marker": "Part", "min": 3}),
    ("detectable_format:json_format", {}, {"type": "json_format"}),
    ("detectable_format:title", {}, {"type": "title"}),
    ("combination:two_responses", {}, {"type": "two_responses"}),
    ("combination:repeat_prompt", {"prompt_to_repeat": "Describe a harbor at dawn. "},
     {"type": "starts_with", "prefix": "Describe a harbor at dawn."}),
    ("startend:end_checker", {"end_phrase": "Any other questions?"},
     {"type": "ends_with", "suffix": "Any other questions?"}),
    ("startend:quotation", {}, {"type": "quotation"}),
    ("change_case:capital_word_frequency", {"capital_frequency": 2, "capital_relation": "at least"},
     {"type": "capital_word_frequency", "min": 2}),
    ("change_case:english_capital", {}, {"type": "uppercase", "language": "en"}),
    ("change_case:english_lowercase", {}, {"type": "lowercase", "language": "en"}),
    ("punctuation:no_comma", {}, {"type": "no_commas"}),
    ("detectable_format:constrained_response", {},
     {"type": "contains_any", "phrases": ["My answer is yes.", "My answer is no.", "My answer is maybe."],
      "case_sensitive": True, "only_one": True}),
    ("language:response_language", {"language": "sw"}, {"type": "language", "code": "sw"}),
]


def write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def row(key: Any, ids: list[str], kwargs: list[Any], prompt: str = "Write about a harbor.") -> dict[str, Any]:
    return {"key": key, "prompt": prompt, "instruction_id_list": ids, "kwargs": kwargs}


def score(task: Task, text: str) -> Any:
    return load_verifier(task.verifier).verify(task, Completion.from_text(text))


def test_every_supported_id_is_mapped_and_tested() -> None:
    assert {c[0] for c in CASES} == set(MAPPING)
    assert not set(MAPPING) & set(UNSUPPORTED)
    assert not UNSUPPORTED  # every IFEval id is judged (language:response_language with langdetect installed)


def without_langdetect(monkeypatch: pytest.MonkeyPatch) -> None:
    """``import langdetect`` raises ImportError for the rest of the test."""
    import sys

    from crossgym.verifiers import constraints

    monkeypatch.setattr(constraints, "_LANGDETECT", None)
    for mod in [m for m in sys.modules if m == "langdetect" or m.startswith("langdetect.")]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "langdetect", None)


@pytest.mark.parametrize(("iid", "kwargs", "expected"), CASES, ids=[c[0] for c in CASES])
def test_each_instruction_id_maps_to_one_constraint(tmp_path: Path, iid: str, kwargs: dict[str, Any],
                                                    expected: dict[str, Any]) -> None:
    assert constraint_for(iid, kwargs) == expected
    # a Hugging Face export writes every kwarg of every instruction, the unused ones null
    hf = {**dict.fromkeys(("num_words", "relation", "keyword", "language", "end_phrase")), **kwargs}
    assert constraint_for(iid, hf) == expected
    tasks = crossgym.load_tasks("ifeval", path=str(write(tmp_path / "one.jsonl", [row(7, [iid], [hf])])))
    assert tasks[0].answer == [expected] and tasks[0].metadata["kwargs"] == [kwargs]


def test_a_row_becomes_a_task_with_one_constraint_per_instruction_in_order(tmp_path: Path) -> None:
    pytest.importorskip("langdetect")
    rows = [row(1001, ["punctuation:no_comma", "length_constraints:number_words", "change_case:english_lowercase"],
                [{}, {"relation": "less than", "num_words": 6}, {}], prompt="Describe the sea briefly."),
            row("b-2", ["keywords:frequency"], [{"keyword": "tide", "frequency": 2, "relation": "at least"}])]
    tasks = crossgym.load_tasks("ifeval", path=str(write(tmp_path / "ifeval.jsonl", rows)))
    t = tasks[0]
    assert [x.id for x in tasks] == ["1001", "b-2"]
    assert [(m.role, m.content) for m in t.prompt] == [("user", "Describe the sea briefly.")]
    assert t.verifier.name == "instructions" and t.verifier.params == {} and t.env == "single_turn"
    assert t.answer == [{"type": "no_commas"}, {"type": "word_count", "max": 5}, {"type": "lowercase", "language": "en"}]
    assert t.metadata == {"source": "ifeval", "key": 1001, "kwargs": rows[0]["kwargs"],
                          "instruction_id_list": rows[0]["instruction_id_list"]}
    v = score(t, "the sea is calm today")  # 5 words: "less than 6" is at most 5
    assert v.passed and v.components == {"0:no_commas": 1.0, "1:word_count": 1.0, "2:lowercase": 1.0}
    v = score(t, "the sea, calm and grey today")
    assert v.components == {"0:no_commas": 0.0, "1:word_count": 0.0, "2:lowercase": 1.0}
    assert v.reward == pytest.approx(1 / 3)
    assert score(tasks[1], "The tide rose; the tide fell.").passed  # "at least 2" is at least 2
    assert not score(tasks[1], "The tide rose.").passed
    prompt_level = crossgym.load_tasks("ifeval", path=str(tmp_path / "ifeval.jsonl"), reward="all",
                                       system_prompt="Follow every instruction.")
    assert prompt_level[0].verifier.params == {"reward": "all"}
    assert prompt_level[0].prompt[0].content == "Follow every instruction."
    assert score(prompt_level[0], "the sea, calm").reward == 0.0


def test_ifevals_relations_and_its_nth_paragraph_check(tmp_path: Path) -> None:
    """IFEval's "less than N" is count < N, "at least N" count >= N; nth_paragraph_first_word also wants exactly
    num_paragraphs paragraphs (separated by a blank line)."""
    rows = [row(1, ["keywords:letter_frequency"], [{"letter": "z", "let_frequency": 2, "let_relation": "less than"}]),
            row(2, ["length_constraints:nth_paragraph_first_word"],
                [{"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "summary"}]),
            row(3, ["keywords:letter_frequency"], [{"letter": "#", "let_frequency": 3, "let_relation": "at least"}])]
    lf, fw, hashtags = crossgym.load_tasks("ifeval", path=str(write(tmp_path / "r.jsonl", rows)))
    assert score(lf, "a lazy fox").passed and not score(lf, "jazz").passed
    assert score(fw, "Poppy seeds.\n\nSummary: they are tasty.").passed
    assert not score(fw, "Poppy seeds.\n\nSummary: tasty.\n\nMore.").passed  # three paragraphs
    assert not score(fw, "Poppy seeds.\n\nIn short, tasty.").passed
    assert score(hashtags, "#sea #sun #sand").passed and not score(hashtags, "#sea #sun").passed


def test_constrained_response_and_response_language_are_judged(tmp_path: Path) -> None:
    """IFEval's last two ids: one of its three phrases (case-sensitive, as IFEval's; one option only, where IFEval
    passes a reply naming all three) and langdetect's language (seeded; a text it cannot read fails, where IFEval
    passes it)."""
    pytest.importorskip("langdetect")
    rows = [row(1, ["detectable_format:constrained_response"], [{}]),
            row(2, ["language:response_language", "punctuation:no_comma"], [{"language": "fr"}, {}])]
    choice, french = crossgym.load_tasks("ifeval", path=str(write(tmp_path / "r.jsonl", rows)))
    assert score(choice, "Pikachu is no Avenger. My answer is no.").passed
    assert not score(choice, "Pikachu is no Avenger, so my answer is no.").passed  # IFEval fails it too
    assert not score(choice, "My answer is yes. My answer is no. My answer is maybe.").passed
    v = score(french, "Le vieux port était calme ce matin et les pêcheurs préparaient leurs bateaux.")
    assert v.passed and v.components == {"0:language": 1.0, "1:no_commas": 1.0}, v
    v = score(french, "The old harbor was quiet this morning and the fishermen prepared their boats.")
    assert v.components == {"0:language": 0.0, "1:no_commas": 1.0} and "detected language 'en'" in v.reason, v
    assert score(french, "12345 !!!").components["0:language"] == 0.0
    capital, = crossgym.load_tasks("ifeval", path=str(write(tmp_path / "c.jsonl", [
        row(3, ["change_case:english_capital"], [{}])])))
    assert score(capital, "THE OLD HARBOR WAS QUIET THIS MORNING AND THE FISHERMEN PREPARED THEIR BOATS.").passed
    assert not score(capital, "The old harbor was quiet this morning.").passed
    v = score(capital, "LE VIEUX PORT ÉTAIT CALME CE MATIN ET LES PÊCHEURS PRÉPARAIENT LEURS BATEAUX.")
    assert not v.passed and "detected language" in v.reason, v  # in capitals, but not English (IFEval fails it too)


def test_without_langdetect_a_language_row_stops_the_load_or_is_dropped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    without_langdetect(monkeypatch)
    rows = [row(1, ["punctuation:no_comma"], [{}]),
            row(2, ["punctuation:no_comma", "language:response_language"], [{}, {"language": "fr"}]),
            row(3, ["detectable_format:constrained_response"], [{}]),
            row(4, ["language:response_language"], [{"language": "de"}]),
            row(5, ["change_case:english_capital"], [{}])]
    p = write(tmp_path / "mixed.jsonl", rows)
    with pytest.raises(ConfigError) as exc:
        crossgym.load_tasks("ifeval", path=str(p))
    msg = str(exc.value)
    assert "mixed.jsonl:2" in msg and "key 2" in msg and "'language:response_language'" in msg
    assert "needs langdetect" in msg and "pip install 'crossgym[verifiers]'" in msg and "pip install langdetect" in msg
    assert "skip_unsupported=True" in msg
    with caplog.at_level(logging.WARNING, logger="crossgym.environments.sources.ifeval"):
        tasks = crossgym.load_tasks("ifeval", path=str(p), skip_unsupported=True)
    assert [t.id for t in tasks] == ["1", "3"]
    assert "dropped 3 rows" in caplog.text and "2 with language:response_language" in caplog.text
    assert "1 with change_case:english_capital" in caplog.text
    assert "needs langdetect" in caplog.text
    assert [t.id for t in crossgym.load_tasks("ifeval", path=str(p), skip_unsupported=True, limit=1)] == ["1"]
    assert [t.id for t in crossgym.load_tasks("ifeval", path=str(p), skip_unsupported=True, n=1)] == ["1"]
    # a bad language row is reported as one, langdetect or not
    with pytest.raises(ConfigError, match="argument 'code' must be a language code"):
        crossgym.load_tasks("ifeval", path=str(write(tmp_path / "b.jsonl", [
            row(5, ["language:response_language"], [{"language": "French"}])])), skip_unsupported=True)
    # a language task made where langdetect was installed: one clear exception Verdict naming the fix
    task = Task(id="x", prompt=tasks[0].prompt, answer=[{"type": "language", "code": "fr"}],
                verifier=tasks[0].verifier)
    v = score(task, "Bonjour")
    assert v.error_kind == "exception" and "needs langdetect" in v.error and "pip install" in v.error, v


def test_an_unsupported_id_stops_the_load_or_drops_its_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    """UNSUPPORTED is empty now; an id put there (one IFEval may add) is refused or, with skip_unsupported, dropped."""
    from crossgym.environments.sources import ifeval

    monkeypatch.setitem(ifeval.UNSUPPORTED, "startend:quotation", "it is refused for this test")
    p = write(tmp_path / "u.jsonl", [row(1, ["punctuation:no_comma"], [{}]), row(2, ["startend:quotation"], [{}])])
    with pytest.raises(ConfigError) as exc:
        crossgym.load_tasks("ifeval", path=str(p))
    assert "key 2" in str(exc.value) and "it is refused for this test" in str(exc.value)
    assert "skip_unsupported=True" in str(exc.value)
    with caplog.at_level(logging.WARNING, logger="crossgym.environments.sources.ifeval"):
        assert [t.id for t in crossgym.load_tasks("ifeval", path=str(p), skip_unsupported=True)] == ["1"]
    assert "dropped 1 rows" in caplog.text and "1 with startend:quotation" in caplog.text


@pytest.mark.parametrize(("line", "words"), [
    (row(5, ["punctuation:no_comma"], [{}]) | {"kwargs": None}, ["bad.jsonl:1", "no 'kwargs' field"]),
    ({"prompt": "x", "instruction_id_list": [], "kwargs": []}, ["bad.jsonl:1", "no 'key' field"]),
    (row(5, [], []), ["key 5", "'instruction_id_list' must be a non-empty list"]),
    (row(5, ["punctuation:no_comma"], [{}, {}]), ["key 5", "one object per instruction (1), got 2 items"]),
    (row(5, ["punctuation:no_comma"], [{}], prompt="  "), ["key 5", "'prompt' must be a non-blank string"]),
    (row(True, ["punctuation:no_comma"], [{}]), ["'key' must be an integer or a non-blank string"]),
    (row(5, ["keywords:rhymes"], [{}]), ["key 5", "instruction 1", "unknown IFEval instruction id 'keywords:rhymes'"]),
    (row(5, ["punctuation:no_comma", "length_constraints:number_words"], [{}, {"num_words": 5, "relation": "most"}]),
     ["key 5", "instruction 2", "kwarg 'relation' must be 'less than' or 'at least', got 'most'", "kwargs[1]"]),
    (row(5, ["length_constraints:number_words"], [{"num_words": "5", "relation": "at least"}]),
     ["kwarg 'num_words' must be a non-negative integer, got '5'"]),
    (row(5, ["length_constraints:number_words"], [{"relation": "at least"}]), ["missing kwarg 'num_words'"]),
    (row(5, ["length_constraints:number_words"], [{"num_words": 0, "relation": "less than"}]),
     ["'less than 0' (num_words) can never be met"]),
    (row(5, ["detectable_format:title"], [{"num_words": 5}]), ["unknown kwarg 'num_words' (it takes none)"]),
    (row(5, ["keywords:existence"], [{"keywords": "harbor"}]),
     ["kwarg 'keywords' must be a non-empty list of non-blank strings"]),
    (row(5, ["keywords:letter_frequency"], [{"letter": "ab", "let_frequency": 2, "let_relation": "at least"}]),
     ["key 5", "argument 'letter' must be one letter"]),
    (row(5, ["length_constraints:nth_paragraph_first_word"],
         [{"num_paragraphs": 2, "nth_paragraph": 3, "first_word": "so"}]), ["n 3 is over paragraphs 2"]),
    (row(5, ["punctuation:no_comma"], ["none"]), ["kwargs must be an object, got str"]),
    (row(5, ["language:response_language"], [{}]), ["key 5", "missing kwarg 'language'"]),
    (row(5, ["language:response_language"], [{"language": "French"}]),
     ["key 5", "argument 'code' must be a language code langdetect returns", "kwargs[0]"]),
    (row(5, ["detectable_format:constrained_response"], [{"language": "fr"}]),
     ["unknown kwarg 'language' (it takes none)"]),
    ([1, 2], ["an IFEval row must be a JSON object, got list"]),
    ("{not json", ["bad.jsonl:1", "not valid JSON"]),
])
def test_a_bad_row_is_one_error_naming_the_row_and_the_field(tmp_path: Path, line: Any, words: list[str]) -> None:
    p = write(tmp_path / "bad.jsonl", [line])
    with pytest.raises(ConfigError) as exc:
        crossgym.load_tasks("ifeval", path=str(p))
    assert "(fix: " in str(exc.value)
    for w in words:
        assert w in str(exc.value), (w, str(exc.value))


@pytest.mark.parametrize(("params", "words"), [
    ({}, ["is not a file"]),
    ({"limit": -1}, ["limit must be an integer"]),
    ({"n": 10**7}, ["n must be at most 1000000"]),
    ({"system_prompt": 3}, ["system_prompt must be a string"]),
    ({"skip_unsupported": "yes"}, ["skip_unsupported must be true or false"]),
    ({"reward": "most"}, ["reward must be 'fraction' or 'all'"]),
])
def test_bad_params_are_config_errors(tmp_path: Path, params: dict[str, Any], words: list[str]) -> None:
    path = tmp_path / "missing.jsonl" if not params else write(tmp_path / "ok.jsonl", [row(1, ["startend:quotation"],
                                                                                          [{}])])
    with pytest.raises(ConfigError) as exc:
        crossgym.load_tasks("ifeval", path=str(path), **params)
    for w in words:
        assert w in str(exc.value)


def test_the_cli_writes_ifeval_tasks_and_reports_a_bad_row_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "good.jsonl", [row(1, ["startend:quotation"], [{}]), row(2, ["detectable_format:title"], [{}])])
    with pytest.raises(SystemExit) as done:
        main(["tasks", "ifeval", "--params", '{"path": "good.jsonl"}', "--n", "1", "--out", "t.jsonl"])
    assert done.value.code == 0
    capsys.readouterr()
    assert [json.loads(x)["id"] for x in (tmp_path / "t.jsonl").read_text().splitlines()] == ["1"]
    write(tmp_path / "bad.jsonl", [row(9, ["language:response_language"], [{"language": "de"}])])
    without_langdetect(monkeypatch)
    with pytest.raises(SystemExit) as exc:
        main(["tasks", "ifeval", "--params", '{"path": "bad.jsonl"}'])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "Traceback" not in err and len(err.splitlines()) == 1, err
    assert "key 9" in err and "skip_unsupported=True" in err and "pip install langdetect" in err
