"""shell: replay the model's shell commands in a sandboxed scratch directory seeded with the task's files, then
compare the final files (and the last command's output) with the expected state.

Commands are the ``command`` arguments of the completion's ``run``/``shell``/``bash`` tool calls, in order, each run
as its own step of a sandbox ShellSession (files carry over between commands; the working directory and variables
do not, exactly as in the environment). Without tool calls, the last ```bash block of the final message (after its
reasoning, the last ``</think>``) runs as one script. For a task of the ``shell`` environment (``task.env ==
"shell"``) only what that environment executes is replayed: ``run`` calls with a ``command``, never a ```bash
block, and of one message only the calls within the environment's per-turn cap. The seed files are
``task.metadata["files"]``.
"""

from __future__ import annotations

from typing import Any

from crossgym.protocol.errors import CrossgymError, VerifierError
from crossgym.protocol.messages import ToolCall
from crossgym.protocol.task import Completion, Example, Task, Verdict
from crossgym.text import MalformedToolCall, extract_fenced, parse_tool_calls
from crossgym.verifiers.base import BadTask, BaseVerifier, Malformed, clip, time_left
from crossgym.verifiers.code import answer_text

#: tool names whose ``command`` argument is a shell command
SHELL_TOOLS = ("run", "shell", "bash", "run_command", "execute")
SHELL_LANGS = ("bash", "sh", "shell", "console", "")
MAX_COMMANDS = 64


def extract_commands(completion: Completion, *, env: str | None = None) -> list[str]:
    """The commands the completion ran (see the module docstring); Malformed when there are none. ``env="shell"``
    (a completion from the shell environment): only what that environment executed, ``run`` calls with a
    ``command`` (it answers other tools and a ``cmd`` key with an error, and a ```bash block in the final message
    ends the episode without running it)."""
    episode = env == "shell"
    tools, keys = (("run",), ("command",)) if episode else (SHELL_TOOLS, ("command", "cmd"))
    commands: list[str] = []
    assistant = [m for m in completion.messages if m.role == "assistant"]
    for m in assistant:
        calls = list(m.tool_calls)
        if any(c.error is not None for c in calls):  # arguments that are not one JSON object: the environment
            calls = []  # refused the message with an error and ran none of its calls, as for a bad Hermes block
        elif not calls and "<tool_call>" in (m.content or ""):
            try:
                calls = parse_tool_calls(m)
            except MalformedToolCall:
                calls = []  # the environment answered it with an error and ran nothing
        for c in _executed(calls, episode):
            if c.name in tools:
                cmd = next((c.arguments[k] for k in keys if k in c.arguments), None)
                if isinstance(cmd, str) and cmd.strip():
                    commands.append(cmd)
    if commands:
        if len(commands) > MAX_COMMANDS:
            raise Malformed(f"more than {MAX_COMMANDS} commands")
        return commands
    if assistant and not episode:
        body = extract_fenced(answer_text(assistant[-1].content), SHELL_LANGS)
        if body is not None and body.strip():
            return [body]
    if episode:
        raise Malformed("no run(command) call in the episode (the shell environment runs nothing else)")
    raise Malformed("no shell commands in the completion (use the run tool or a ```bash block)")


def _executed(calls: list[ToolCall], episode: bool) -> list[ToolCall]:
    """The calls of one message the shell environment ran: its first ``MAX_CALLS_PER_TURN`` (it answers the rest
    "not run"). Replaying them all credited commands the episode refused: 16 ``true`` calls, then the task's
    command as the 17th, scored 1.0 though the file was never made in the episode."""
    if not episode:
        return calls
    from crossgym.environments.base import MAX_CALLS_PER_TURN

    return calls[:MAX_CALLS_PER_TURN]


def _norm(text: str, strict: bool) -> str:
    if strict:
        return text
    return "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").rstrip().split("\n"))


def expected_files(files: Any) -> dict[str, Any]:
    """The answer's files with their paths written as the snapshot writes them (``./a.txt`` and ``d//a.txt`` are
    ``a.txt`` and ``d/a.txt``: compared as written they were never there, so "must not exist" passed whatever the
    commands did); BadTask for a path outside the directory or two spellings of one path."""
    if not isinstance(files, dict):
        raise BadTask("answer['files'] must map paths to text or null")
    out: dict[str, Any] = {}
    for path, want in files.items():
        parts = [p for p in str(path).split("/") if p not in ("", ".")]
        if not isinstance(path, str) or not parts or path.startswith("/") or ".." in parts or "\0" in path:
            raise BadTask(f"answer['files']: bad path {path!r}: use a relative path inside the task directory")
        key = "/".join(parts)
        if key in out:
            raise BadTask(f"answer['files'] names {key!r} twice (as {path!r} too)")
        out[key] = want
    return out


def seed_files(task: Task) -> dict[str, str]:
    files = task.metadata.get("files") or {}
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        raise BadTask("metadata['files'] must map relative paths to text")
    return files



class _OutOfTime(Exception):
    """Replaying the completion's commands used up the verifier's time (the commands' doing: a failed verdict)."""

class Shell(BaseVerifier):
    """Final files and output after replaying the model's commands must match the expected state.

    answer: {"files": {path: expected text, or null for "must not exist"}, "output": optional expected stdout of
    the last command}. params: strict_whitespace (False: trailing spaces and final newlines ignored),
    forbid_extra (False: True fails when other files were created, changed or removed), partial (False: True gives
    the fraction of checks met), command_timeout (5 s each), tier.
    """

    name = "shell"
    # 2: a truncated snapshot or output fails; 3: "must not exist" fails on a directory, link or special file at the
    # path too (it saw regular files only: a directory's name passed untouched), and paths are compared normalised;
    # 4: a run call in the reasoning (before the last </think>) is not replayed; 5: nor a ```bash block there; 6:
    # forbid_extra counts the directories, links and fifos made, and a file the caller cannot read cuts the snapshot;
    # 7: a run call's reasoning ends at the first </think>, as vLLM's reasoning parsers read it; 8: a task of the
    # shell environment replays only what it executes (run calls with a command: no other tool, no cmd key, no
    # ```bash block in the final message); 9: a message with a tool call whose arguments are not one JSON object
    # runs none of its calls (the environment refuses it whole, as it does a bad Hermes block); 10: commands that
    # use up the verifier's time fail (it was an exception verdict, the machine's fault: masked under on_error none);
    # 11: commands may change the scheduling of their own processes only (renice -p, taskset -p, ionice -p of a pid
    # are refused: they reached the sandbox's other processes of its uid)
    # 12: a task of the shell environment replays only the first 16 calls of a message (MAX_CALLS_PER_TURN), as the
    # environment runs them: the 17th was replayed and credited though the episode never ran it
    version = "12"
    description = "replay the model's shell commands in a seeded sandbox dir; compare final files and output"
    isolation = "thread"
    default_timeout = 60.0

    def __init__(self, *, strict_whitespace: bool = False, forbid_extra: bool = False, partial: bool = False,
                 command_timeout: float = 5.0, tier: str | None = None, **params: Any) -> None:
        super().__init__(**params)
        if isinstance(command_timeout, bool) or not isinstance(command_timeout, (int, float)) or command_timeout <= 0:
            raise VerifierError(f"verifier 'shell': command_timeout must be positive seconds, got {command_timeout!r} "
                                "(fix: pass a number above 0, e.g. 5)")
        self.strict = bool(strict_whitespace)
        self.forbid_extra = bool(forbid_extra)
        self.partial = bool(partial)
        self.command_timeout = float(command_timeout)
        self.tier = tier

    def replay(self, files: dict[str, str], commands: list[str], probe: tuple[str, ...] = ()) \
            -> tuple[dict[str, bytes], str, set[str], set[str], set[str]]:
        """(final files, last stdout, changed paths, what was cut: "files" when a snapshot of the directory was,
        "stdout" when the last command's output was, the paths of ``probe`` where something is: a file, a directory,
        a link or a special file) after running ``commands`` one by one. With ``forbid_extra``, the changed paths
        include the directories, links and fifos the commands made."""
        from crossgym import sandbox

        changed: set[str] = set()
        cut: set[str] = set()
        last_out = ""
        try:
            with sandbox.shell_session(files, tier=self.tier) as session:
                before = session.entries()[0] if self.forbid_extra else set()
                for done, cmd in enumerate(commands):
                    budget = time_left(self.command_timeout * len(commands)) - 1.0
                    if budget <= 0.2:
                        raise _OutOfTime(f"the commands ran out of the verifier's time after {done} of "
                                         f"{len(commands)}")
                    res = session.run(cmd, timeout=min(self.command_timeout, budget))
                    last_out = res.stdout
                    changed.update(res.files_changed)
                    cut.discard("stdout")
                    if not self.forbid_extra:  # each snapshot is the whole directory: the last one is judged (with
                        cut.discard("files")  # forbid_extra, a cut one leaves what changed then unknown)
                    cut.update(p for p in res.truncated_parts if p != "stderr")
                final = session.files
                present = {p for p in probe if session.exists(p)}
                if self.forbid_extra:  # the snapshot holds regular files: a directory, link or fifo made is a change
                    after, walk_cut = session.entries()
                    changed.update(after - before)
                    if walk_cut:
                        cut.add("files")
        except CrossgymError as exc:
            raise RuntimeError(f"sandbox: {exc}") from None
        return final, last_out, changed, cut, present

    def score(self, task: Task, completion: Completion) -> Verdict:
        commands = extract_commands(completion, env=task.env)
        ans = task.answer
        if not isinstance(ans, dict) or not ({"files", "output"} & set(ans)):
            raise BadTask("answer must be {'files': {path: text | null}, 'output'?: text}")
        expected = expected_files(ans.get("files") or {})
        absent = tuple(p for p, want in expected.items() if want is None)
        try:
            final, last_out, changed, cut, present = self.replay(seed_files(task), commands, absent)
        except _OutOfTime as exc:  # what the commands did (13 x sleep 30): the completion's failure, not a timeout
            return Verdict.ok(0.0, passed=False, components={"out_of_time": 1.0}, reason=f"{exc}: judged failed")
        checks: dict[str, float] = {}
        problems: list[str] = []
        if "files" in cut:  # files past the snapshot's caps are unseen: what is missing or unchanged is unknown
            return Verdict.ok(0.0, passed=False, components={"truncated": 1.0},
                              reason="the directory was truncated: more files or bytes than the snapshot keeps "
                                     "(Limits.max_files, max_file_bytes, max_files_bytes); judged failed")
        for path, want in sorted(expected.items()):
            got = final.get(path)
            if want is None:  # nothing may be there: not a file, nor a directory, a link or a fifo
                ok = path not in present
                if not ok:
                    problems.append(f"{path} should not exist" + ("" if got is not None else " (something is there)"))
            elif got is None:
                ok = False
                problems.append(f"{path} is missing")
            else:
                ok = _norm(got.decode("utf-8", "replace"), self.strict) == _norm(str(want), self.strict)
                if not ok:
                    problems.append(f"{path} has {clip(got.decode('utf-8', 'replace').strip(), 40)!r}")
            checks[f"file:{path}"] = float(ok)
        if "output" in ans and ans["output"] is not None:
            ok = "stdout" not in cut and _norm(last_out, self.strict) == _norm(str(ans["output"]), self.strict)
            checks["output"] = float(ok)
            if "stdout" in cut:
                problems.append("the last command's output was truncated (over the capture limit)")
            elif not ok:
                problems.append(f"the last command printed {clip(last_out.strip(), 40)!r}")
        if self.forbid_extra:  # a directory made to hold an expected or a changed file is part of that change
            holders = {path[:i] for path in (*expected, *changed) for i, ch in enumerate(path) if ch == "/"}
            extra = sorted(p for p in changed if p not in expected and p not in holders)
            checks["no_extra_changes"] = float(not extra)
            if extra:
                problems.append(f"unexpected changes: {', '.join(extra[:3])}")
        if not checks:
            raise BadTask("the answer checks nothing")
        met = sum(checks.values())
        all_ok = met == len(checks)
        reward = met / len(checks) if self.partial else float(all_ok)
        reason = f"{int(met)}/{len(checks)} checks met" + ("" if all_ok else f": {'; '.join(problems[:3])}")
        return Verdict.ok(reward, passed=all_ok, reason=clip(reason, 300), components=checks)

    @classmethod
    def examples(cls) -> list[Example]:
        meta = {"files": {"notes.txt": "b\na\nc\n"}}
        ans = {"files": {"sorted.txt": "a\nb\nc\n", "notes.txt": "b\na\nc\n"}}
        return [
            cls.example(ans, "```bash\nsort notes.txt > sorted.txt\n```", "pass", metadata=meta),
            cls.example(ans, "```bash\nsort notes.txt > sorted.txt && rm notes.txt\n```", "fail",
                        "the input was deleted", metadata=meta),
            cls.example(ans, "```bash\ncp notes.txt sorted.txt\n```", "fail", "not sorted", metadata=meta),
            cls.example(ans, "Just sort the file.", "malformed", "no commands", metadata=meta),
        ]
