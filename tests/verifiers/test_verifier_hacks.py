"""Issue 20 against the verifiers: truncated observations, text that does not encode, tool names with spaces
around them, nested strings under ``strings: normalized``, and tools given as dicts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crossgym.protocol.episode import Rollout
from crossgym.protocol.messages import Message, ToolCall, ToolSpec
from crossgym.protocol.task import Completion, Task, Verdict, VerifierSpec
from crossgym.rollout.store import RolloutStore, read_rollouts
from crossgym.sandbox import Limits
from crossgym.verifiers.code import CodeOutput, CodeTests
from crossgym.verifiers.shell import Shell
from crossgym.verifiers.tool_call import ToolCallVerifier

CAP = Limits().output_bytes


def task(name: str, answer: object, **kw: object) -> Task:
    return Task(id=name, prompt="do it", answer=answer, verifier=VerifierSpec(name), **kw)  # type: ignore[arg-type]


def encodes(verdict: Verdict) -> None:
    json.dumps(verdict.to_dict(), ensure_ascii=False).encode("utf-8")


# ---------------------------------------------------------------------------------------------- truncation
def test_code_output_fails_output_cut_at_the_capture_limit() -> None:
    """An expected output of the capture limit's size keeps up to twice as much (code_output 7), so output past
    it is judged whole (and fails), and output past the raised limit is cut and fails as truncated."""
    expected = "x" * CAP
    t = task("code_output", {"cases": [{"stdin": "", "stdout": expected}]})
    cheat = Completion.from_text(f"```python\nimport sys\nsys.stdout.write('x' * {CAP} + 'WRONG' * 1000)\n```")
    v = CodeOutput(compare="exact").verify(t, cheat)
    assert v.reward == 0.0 and "truncated" not in v.reason, v
    flood = Completion.from_text(f"```python\nimport sys\nsys.stdout.write('x' * {3 * CAP})\n```")
    v = CodeOutput(compare="exact").verify(t, flood)
    assert v.reward == 0.0 and "truncated" in v.reason, v
    honest = Completion.from_text(f"```python\nimport sys\nsys.stdout.write('x' * {CAP})\n```")
    assert CodeOutput(compare="exact").verify(t, honest).reward == 1.0


@pytest.mark.parametrize(("language", "crash"), [
    ("python", "raise SystemExit(3)"),
    ("python", "import os; os.kill(os.getpid(), 9)"),
    ("python", "x = [0] * 10 ** 10"),  # the memory limit after the answer
    ("shell", "kill -9 $$"),
])
def test_code_output_fails_a_run_that_crashed_after_the_right_output(language: str, crash: str) -> None:
    """A runtime error is a failed case, as judges count it; a shell script's status is its last command's, so only
    a signal fails it there."""
    t = task("code_output", {"cases": [{"stdin": "3 4\n", "stdout": "7\n"}]})
    lang, head = ("python", "a, b = map(int, input().split())\nprint(a + b, flush=True)") if language == "python" \
        else ("bash", "read a b; echo $((a + b))")
    v = CodeOutput(language=language).verify(t, Completion.from_text(f"```{lang}\n{head}\n{crash}\n```"))
    assert v.reward == 0.0 and "the output matched" in v.reason, v
    assert CodeOutput(language=language).verify(t, Completion.from_text(f"```{lang}\n{head}\n```")).reward == 1.0
    if language == "shell":
        last_false = Completion.from_text(f"```bash\n{head}\n[ $a -gt 5 ] && echo big\n```")
        assert CodeOutput(language="shell").verify(t, last_false).reward == 1.0


@pytest.mark.parametrize("printed", [
    "print(7, file=sys.stderr)",  # the answer on the other stream
    "print('\\ufeff7')", "print('\\x1b[32m7\\x1b[0m')", "print('7\\x00')", "print('99\\r7')",  # BOM, ANSI, NUL, CR
    "print('\\uff17')", "print('7\\u0301')",  # a fullwidth 7, a combining accent
    "import os\nif os.fork() == 0:\n    import time; time.sleep(0.2); print(7, flush=True)\nos._exit(0)",  # after exit
])
def test_code_output_matches_only_the_text_itself(printed: str) -> None:
    """Normalisation forgives trailing spaces and final newlines only: what merely looks like the answer fails."""
    t = task("code_output", {"cases": [{"stdin": "", "stdout": "7\n"}]})
    v = CodeOutput().verify(t, Completion.from_text(f"```python\nimport sys\n{printed}\n```"))
    assert v.reward == 0.0, (printed, v)
    assert CodeOutput().verify(t, Completion.from_text("```python\nprint('7  ')\n```")).reward == 1.0


def test_shell_fails_a_snapshot_cut_at_its_caps() -> None:
    t = task("shell", {"files": {"out.txt": "ok", "secret.txt": None}},
             metadata={"files": {"secret.txt": "do not keep"}})
    flood = Limits().max_files
    cheat = Completion.from_text(f"```bash\necho ok > out.txt\nfor i in $(seq -w 1 {flood}); do : > p$i; done\n```")
    v = Shell().verify(t, cheat)
    assert v.reward == 0.0 and "truncated" in v.reason, v
    honest = Completion.from_text("```bash\necho ok > out.txt\nrm secret.txt\n```")
    assert Shell().verify(t, honest).reward == 1.0


def test_shell_judges_the_last_snapshot_not_a_cut_one_before_it() -> None:
    """A work area of more files than a snapshot keeps, removed by a later command, failed the run ("the directory
    was truncated") though the directory it left was whole and right; a cut snapshot before the last one matters
    only where every change is judged (forbid_extra)."""
    t = task("shell", {"files": {"out.txt": "ok"}})
    flood = Limits().max_files + 10
    session = Completion(messages=tuple(
        Message(role="assistant", content="", tool_calls=(ToolCall(id=f"c{i}", name="run", arguments={"command": c}),))
        for i, c in enumerate([f"mkdir tmp && cd tmp && seq 1 {flood} | xargs touch", "rm -r tmp && echo ok > out.txt"])))
    assert Shell().verify(t, session).reward == 1.0
    v = Shell(forbid_extra=True).verify(t, session)
    assert v.reward == 0.0 and "truncated" in v.reason, v


def test_shell_fails_output_cut_at_the_capture_limit() -> None:
    t = task("shell", {"output": "x" * CAP})
    cheat = Completion.from_text(f"```bash\nhead -c {CAP} /dev/zero | tr '\\0' x; echo WRONG\n```")
    v = Shell().verify(t, cheat)
    assert v.reward == 0.0 and "truncated" in v.reason, v


@pytest.mark.parametrize("cheat", [
    "true",  # a directory's name: the snapshot lists its files, never the directory itself
    "rm build/a.o build/b.o",  # the files gone, the directory kept
    "rm -r build; ln -s /usr build",  # a link in its place
    "rm -r build; mkfifo build",  # a fifo in its place
])
def test_shell_must_not_exist_sees_directories_links_and_fifos(cheat: str) -> None:
    """``{"build": null}`` passed without the commands doing anything: the check looked for a regular file only."""
    t = task("shell", {"files": {"build": None, "keep.txt": "k"}},
             metadata={"files": {"build/a.o": "x", "build/b.o": "y", "keep.txt": "k"}})
    v = Shell().verify(t, Completion.from_text(f"```bash\n{cheat}\n```"))
    assert v.reward == 0.0 and "build should not exist" in v.reason, v
    assert Shell().verify(t, Completion.from_text("```bash\nrm -r build\n```")).reward == 1.0


def test_shell_compares_paths_as_the_snapshot_writes_them() -> None:
    """``./junk.txt: null`` never matched the snapshot's ``junk.txt``, so it passed whatever was left there; a
    content check on ``./out.txt`` failed the honest answer."""
    t = task("shell", {"files": {"./junk.txt": None, "d//out.txt": "ok"}}, metadata={"files": {"junk.txt": "j"}})
    assert Shell().verify(t, Completion.from_text("```bash\nmkdir d; echo ok > d/out.txt\n```")).reward == 0.0
    assert Shell().verify(t, Completion.from_text("```bash\nrm junk.txt; mkdir d; echo ok > d/out.txt\n```")).passed
    for bad in ({"../x": None}, {"/etc/passwd": None}, {"a.txt": "1", "./a.txt": "2"}, {"": "x"}):
        v = Shell().verify(task("shell", {"files": bad}), Completion.from_text("```bash\ntrue\n```"))
        assert v.error_kind == "exception" and "answer['files']" in (v.error or ""), (bad, v)


# ------------------------------------------------------------------------------- text that must serialise
def test_a_lone_surrogate_from_the_solution_serialises_everywhere(tmp_path: Path) -> None:
    t = task("code_tests", {"tests": ["assert add(1, 2) == 3"]})
    comp = Completion.from_text("```python\ndef add(a, b):\n    raise ValueError('\\ud800 bad \\udfff')\n```")
    v = CodeTests().verify(t, comp)
    assert v.reward == 0.0 and "bad" in v.reason
    encodes(v)
    (group,) = CodeTests().verify_group(t, [comp])
    encodes(group)
    with RolloutStore(tmp_path / "r.jsonl") as store:
        store.append([Rollout(task=t, completion=comp, verdict=v)])
    (back,) = read_rollouts(tmp_path / "r.jsonl")
    assert back.verdict.reason == v.reason


def test_a_file_name_that_is_not_utf8_serialises() -> None:
    t = task("shell", {"files": {"out.txt": "ok"}})
    comp = Completion.from_text("```bash\necho ok > out.txt\n: > \"$(printf 'bad\\377name')\"\n```")
    v = Shell(forbid_extra=True).verify(t, comp)
    assert v.reward == 0.0 and "bad" in v.reason, v
    encodes(v)


def test_verdict_scrubs_its_text() -> None:
    v = Verdict(reward=0.0, passed=False, components={"k\ud800": 1.0}, reason="r\udfff", error="exception: \ud800")
    encodes(v)
    assert v.reason == "r\\udfff" and v.error == "exception: \\ud800" and list(v.components) == ["k\\ud800"]
    assert Verdict.ok(1.0, reason="plain é") .reason == "plain é"


# ------------------------------------------------------------------------------------------------ tool_call
WEATHER = {"name": "get_weather", "description": "weather",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                           "stops": {"type": "array"},
                                                           "where": {"type": "object"}},
                          "required": ["city"]}}
TIME = {"name": "get_time", "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]}}


@pytest.mark.parametrize("name", [" get_weather", "get_weather\n", "\tget_weather ", "get_weather "])
@pytest.mark.parametrize("with_tools", [True, False])
def test_tool_names_compare_exactly(name: str, with_tools: bool) -> None:
    t = task("tool_call", {"name": "get_weather", "arguments": {"city": "Paris"}},
             tools=[WEATHER] if with_tools else [])
    text = '<tool_call>{"name": ' + json.dumps(name) + ', "arguments": {"city": "Paris"}}</tool_call>'
    v = ToolCallVerifier().verify(t, Completion.from_text(text))
    assert v.reward == 0.0 and v.error is None and "exactly" in v.reason, v
    exact = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    assert ToolCallVerifier().verify(t, Completion.from_text(exact)).reward == 1.0


def test_tools_given_as_dicts_are_tool_specs() -> None:
    t = task("tool_call", {"name": "get_weather", "arguments": {"city": "Paris"}}, tools=[WEATHER])
    assert all(isinstance(s, ToolSpec) for s in t.tools) and t.tools[0].name == "get_weather"
    assert Task.from_dict(t.to_dict()) == t
    ok = ToolCallVerifier().verify(t, Completion.from_text('get_weather(city="Paris")'))
    assert ok.reward == 1.0 and ok.error is None


def test_normalized_strings_reach_every_depth() -> None:
    answer = {"name": "get_weather", "arguments": {"city": "Paris", "stops": [["Lyon", "Saint  Etienne"]],
                                                   "where": [{"country": "France", "tags": ["Old Town"]}]}}
    t = task("tool_call", answer, tools=[WEATHER])
    got = ('get_weather(city="paris", stops=["lyon", "saint etienne"], '
           'where={"country": "FRANCE", "tags": ["old  town"]})')
    assert ToolCallVerifier().verify(t, Completion.from_text(got)).reward == 1.0
    assert ToolCallVerifier(strings="exact").verify(t, Completion.from_text(got)).reward == 0.0
    wrong = got.replace("lyon", "nice")
    assert ToolCallVerifier().verify(t, Completion.from_text(wrong)).reward == 0.0


@pytest.mark.parametrize("body", [
    '{"name": "delete_all", "name": "get_weather", "arguments": {"city": "Paris"}}',  # which name is called?
    '{"name": "get_weather", "arguments": {"city": "London", "city": "Paris"}}',
    '{"name": "get_weather", "arguments": "{\\"city\\": \\"London\\", \\"city\\": \\"Paris\\"}"}',
])
def test_a_key_given_twice_is_malformed(body: str) -> None:
    """Parsers differ on which of two equal keys counts (Python's json: the last; others: the first), so the
    verifier's reading and the tool executor's may not agree: refused, as a keyword given twice in Python syntax."""
    t = task("tool_call", {"name": "get_weather", "arguments": {"city": "Paris"}}, tools=[WEATHER])
    v = ToolCallVerifier().verify(t, Completion.from_text(f"<tool_call>{body}</tool_call>"))
    assert v.reward == 0.0 and v.error_kind == "malformed" and "duplicate key" in (v.error or v.reason), v
    python = ToolCallVerifier().verify(t, Completion.from_text('get_weather(city="London", city="Paris")'))
    assert python.reward == 0.0 and python.error_kind == "malformed"


@pytest.mark.parametrize("text", [
    '<tool_call>{"name": "get_w\\u0435ather", "arguments": {"city": "Paris"}}</tool_call>',  # a Cyrillic e
    '<tool_call>{"name": "get_weather\\u200b", "arguments": {"city": "Paris"}}</tool_call>',  # zero-width space
    '<tool_call>{"name": "get_weather", "arguments": {"city": "\\uff30aris"}}</tool_call>',  # a fullwidth P
    '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "unit": NaN}}</tool_call>',
    '<tool_call>{"name": "get_weather", "arguments": "\\"{\\\\\\"city\\\\\\": \\\\\\"Paris\\\\\\"}\\""}</tool_call>',
    '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>',  # the right call, twice
])
def test_confusables_constants_nested_strings_and_repeats_earn_nothing(text: str) -> None:
    t = task("tool_call", {"name": "get_weather", "arguments": {"city": "Paris"}}, tools=[WEATHER])
    for strings in ("normalized", "exact"):
        v = ToolCallVerifier(strings=strings).verify(t, Completion.from_text(text))
        assert v.reward == 0.0, (strings, v)
        encodes(v)


def test_allowed_extra_calls_are_no_licence_to_guess() -> None:
    """With allow_extra_calls, calls to other functions are allowed, but more calls to an expected function than
    expected are guesses: spraying get_weather over four cities found Paris and scored 1.0 (a wrong guess: 0)."""
    t = task("tool_call", {"name": "get_weather", "arguments": {"city": "Paris"}}, tools=[WEATHER, TIME])
    call = '<tool_call>{{"name": "get_weather", "arguments": {{"city": "{}"}}}}</tool_call>'
    spray = "".join(call.format(c) for c in ("London", "Rome", "Paris", "Berlin"))
    lenient = ToolCallVerifier(allow_extra_calls=True)
    v = lenient.verify(t, Completion.from_text(spray))
    assert v.reward == 0.0 and not v.passed and "more call" in v.reason, v
    fraction = ToolCallVerifier(allow_extra_calls=True, reward="fraction").verify(t, Completion.from_text(spray))
    strict = ToolCallVerifier(reward="fraction").verify(t, Completion.from_text(spray))
    assert fraction.reward == strict.reward == 0.25  # what the four calls earn without allow_extra_calls
    other = call.format("Paris") + '<tool_call>{"name": "get_time", "arguments": {"tz": "UTC"}}</tool_call>'
    assert lenient.verify(t, Completion.from_text(other)).reward == 1.0
    assert ToolCallVerifier().verify(t, Completion.from_text(other)).reward == 0.0


CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'


@pytest.mark.parametrize("text", [
    f"<think>I will call {CALL} now.</think>The weather in Paris is mild.",  # the call only in the reasoning
    f"<think>Maybe {CALL}</think>",
    f"<think>Let me call {CALL} and wait",  # a reasoning that never ends
])
def test_a_call_in_the_reasoning_is_not_made(text: str) -> None:
    """A server's reasoning parser takes ``<think>...</think>`` out of the content before its tool parser runs, so a
    call written there is never executed: it earned the reward of a made call."""
    t = task("tool_call", {"name": "get_weather", "arguments": {"city": "Paris"}}, tools=[WEATHER])
    v = ToolCallVerifier().verify(t, Completion.from_text(text))
    assert v.reward == 0.0, v
    none = task("tool_call", [], tools=[WEATHER])  # "answer without a tool": a call in the reasoning is no call
    if "</think>" in text:
        assert ToolCallVerifier().verify(none, Completion.from_text(text)).reward == 1.0
    for made in (f"<think>Paris, so</think>\n{CALL}", '<think>hmm</think>\nget_weather(city="Paris")'):
        assert ToolCallVerifier().verify(t, Completion.from_text(made)).reward == 1.0, made
    # the reasoning ends at its first </think>, as a server's reasoning parser reads it: one in an argument is content
    run = task("shell", {"files": {"page.html": "<think></think>"}})
    html = '<tool_call>{"name": "run", "arguments": {"command": "printf \'<think></think>\' > page.html"}}</tool_call>'
    assert Shell().verify(run, Completion.from_text(f"<think>plan</think>{html}")).reward == 1.0


@pytest.mark.parametrize("body", [
    '{"name": "delete_all", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}',
    '{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}, "arguments": {"city": "London"}}',
    '{"name": "get_weather", "arguments": {"city": "Paris"}, "parameters": {"city": "London"}}',
])
def test_a_call_that_parsers_read_two_ways_is_malformed(body: str) -> None:
    """vLLM's hermes parser reads the top-level name and arguments; crossgym took the OpenAI ``function`` object
    (or ``arguments`` over ``parameters``, as some parsers do the other way round): the call judged and the call
    executed could differ."""
    t = task("tool_call", {"name": "get_weather", "arguments": {"city": "Paris"}}, tools=[WEATHER])
    v = ToolCallVerifier().verify(t, Completion.from_text(f"<tool_call>{body}</tool_call>"))
    assert v.reward == 0.0 and v.error_kind == "malformed", v
    same = '{"name": "get_weather", "arguments": {"city": "Paris"}, "parameters": {"city": "Paris"}}'
    assert ToolCallVerifier().verify(t, Completion.from_text(f"<tool_call>{same}</tool_call>")).reward == 1.0


def test_a_run_call_in_the_reasoning_is_not_replayed() -> None:
    t = task("shell", {"files": {"out.txt": "ok"}})
    run = '<tool_call>{"name": "run", "arguments": {"command": "echo ok > out.txt"}}</tool_call>'
    hidden = Shell().verify(t, Completion.from_text(f"<think>first {run}</think>Done, the file is written."))
    assert hidden.reward == 0.0 and hidden.error_kind == "malformed", hidden
    assert Shell().verify(t, Completion.from_text(f"<think>plan</think>{run}")).reward == 1.0


@pytest.mark.parametrize("verifier", ["code_tests", "code_output", "shell"])
def test_code_drafted_in_the_reasoning_is_not_the_answer(verifier: str) -> None:
    """A reply whose answer says "done" and whose code sits only in ``<think>`` earned full reward: the reasoning is
    never shown as the answer, and every other verifier ignores it."""
    block, answer = {
        "code_tests": ("```python\ndef add(a, b):\n    return a + b\n```", {"tests": ["assert add(1, 2) == 3"]}),
        "code_output": ("```python\nprint(7)\n```", {"cases": [{"stdin": "", "stdout": "7\n"}]}),
        "shell": ("```bash\necho ok > out.txt\n```", {"files": {"out.txt": "ok"}}),
    }[verifier]
    v = {"code_tests": CodeTests, "code_output": CodeOutput, "shell": Shell}[verifier]()
    t = task(verifier, answer)
    for hidden in (f"<think>\n{block}\n</think>\nDone, it works.", f"<think>\n{block}\nstill checking"):
        got = v.verify(t, Completion.from_text(hidden))
        assert got.reward == 0.0 and got.error_kind == "malformed", (hidden, got)
    assert v.verify(t, Completion.from_text(f"<think>\nplan it\n</think>\n{block}")).reward == 1.0


@pytest.mark.parametrize("junk", ["mkdir -p junk/deeper", "ln -s data.txt link", "mkfifo pipe", "ln -s /etc etc"])
def test_shell_forbid_extra_sees_directories_links_and_fifos(junk: str) -> None:
    """forbid_extra compared regular files only: what the commands left besides (an empty directory, a link, a
    fifo) was no extra change."""
    t = task("shell", {"files": {"moved/data.txt": "d", "data.txt": None}}, metadata={"files": {"data.txt": "d"}})
    honest = "mkdir moved && mv data.txt moved/"
    v = Shell(forbid_extra=True).verify(t, Completion.from_text(f"```bash\n{honest}\n{junk}\n```"))
    assert v.reward == 0.0 and "unexpected changes" in v.reason, (junk, v)
    assert Shell(forbid_extra=True).verify(t, Completion.from_text(f"```bash\n{honest}\n```")).reward == 1.0
    assert Shell().verify(t, Completion.from_text(f"```bash\n{honest}\n{junk}\n```")).reward == 1.0


def test_a_shell_episode_is_judged_on_what_the_environment_ran() -> None:
    """The shell environment runs ``run(command=...)`` only: it answers ``bash(...)`` or ``run(cmd=...)`` with an
    error and ends the episode on a reply without a call, so a final ```bash block never runs. The verifier replayed
    all of them: reward for commands the episode refused."""
    from crossgym.protocol.messages import Message, ToolCall

    def episode(*calls: tuple[str, dict[str, str]], final: str = "Done.") -> Completion:
        msgs = [Message(role="assistant", content="", tool_calls=(ToolCall(id=f"c{i}", name=n, arguments=a),))
                for i, (n, a) in enumerate(calls)]
        return Completion(messages=(*msgs, Message(role="assistant", content=final)))

    cmd = "echo ok > out.txt"
    t = task("shell", {"files": {"out.txt": "ok"}}, env="shell")
    for refused in (episode(("bash", {"command": cmd})), episode(("run", {"cmd": cmd})),
                    episode(final=f"```bash\n{cmd}\n```")):
        assert Shell().verify(t, refused).reward == 0.0, refused
    assert Shell().verify(t, episode(("run", {"command": cmd}))).reward == 1.0
    single = task("shell", {"files": {"out.txt": "ok"}})  # a single-turn task takes every form, as documented
    assert all(Shell().verify(single, c).reward == 1.0 for c in (
        episode(("bash", {"command": cmd})), episode(("run", {"cmd": cmd})), Completion.from_text(f"```bash\n{cmd}\n```")))
