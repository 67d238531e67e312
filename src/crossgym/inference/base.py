"""Shared pieces of the engines: one generated sample, and how it becomes a Completion."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from crossgym.protocol.interfaces import EngineCapabilities
from crossgym.protocol.messages import Message, ToolSpec
from crossgym.protocol.task import Completion


@dataclass(frozen=True)
class Generation:
    """One sampled continuation: decoded text, its token ids and per-token logprobs, and why it stopped."""

    text: str
    token_ids: tuple[int, ...] | None = None
    logprobs: tuple[float, ...] | None = None
    finish_reason: str | None = None
    """"stop" (EOS or a stop string) or "length" (hit max_tokens); None when the engine did not say."""


def tool_dicts(tools: Sequence[Any] | None) -> list[dict[str, Any]] | None:
    """Tools in the OpenAI function form chat templates and servers take; None when there are none.

    Accepts ToolSpec objects, OpenAI-form dicts (``{"type": "function", "function": {...}}``) and bare function
    dicts (``{"name", "description", "parameters"}``). ``None`` rather than ``[]``, as TRL passes them (some
    templates render tool boilerplate for an empty list).
    """
    if not tools:
        return None
    out: list[dict[str, Any]] = []
    for t in tools:
        if isinstance(t, ToolSpec):
            out.append(t.to_openai())
        elif isinstance(t, dict):
            out.append(t if t.get("type") == "function" and "function" in t else ToolSpec.from_dict(t).to_openai())
        else:
            raise TypeError(f"a tool must be a ToolSpec or a dict, got {type(t).__name__}")
    return out


def render_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The one rendering of messages for a chat template (``tokenizer.apply_chat_template``), used by every engine
    that tokenizes and every training backend (through crossgym.rollout.driver): OpenAI's message shape with
    tool-call ``arguments`` as a dict, as Qwen2.5's and most Hugging Face templates expect (they apply ``tojson``
    themselves; a JSON string there is encoded twice) and as TRL passes them. ``Message.to_openai`` (arguments as
    a JSON string) is the wire form for OpenAI-compatible servers, not for templates."""
    out = []
    for m in messages:
        d = m.to_dict()
        if m.tool_calls:
            d["tool_calls"] = [{"id": c.id, "type": "function", "function": {
                "name": c.name, "arguments": c.structured_arguments()}}
                for c in m.tool_calls]  # an unreadable call renders as the text the model wrote, never as {}
        out.append(d)
    return out


def stop_token_ids(eos_token_id: Any, generation_eos: Any = None) -> list[int]:
    """The one stop rule for a turn: the tokenizer's EOS and the model's ``generation_config.eos_token_id`` (an id
    or a list of ids), sorted; what the hf engine, TRL, veRL and OpenRLHF all end a generated turn on."""
    ids: set[int] = set()
    for value in (eos_token_id, generation_eos):
        for i in value if isinstance(value, (list, tuple, set, frozenset)) else (value,):
            if i is not None:
                ids.add(int(i))
    return sorted(ids)


def to_completion(gen: Generation, *, parse_tools: bool) -> Completion:
    """A one-message Completion; tool calls are parsed out of the text when the prompt offered tools."""
    from crossgym.inference.toolcalls import parse_assistant_text

    msg = parse_assistant_text(gen.text) if parse_tools else Message(role="assistant", content=gen.text)
    return Completion(messages=(msg,), token_ids=gen.token_ids, logprobs=gen.logprobs)


def per_prompt_tools(tools: list[list[Any]] | None, count: int) -> list[list[dict[str, Any]] | None]:
    """The tools list of each prompt (``tools`` is one list per prompt, or None for none)."""
    if tools is None:
        return [None] * count
    if len(tools) != count:
        raise ValueError(f"tools must hold one list per prompt: {len(tools)} lists for {count} prompts")
    return [tool_dicts(t) for t in tools]


def truncate_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """Cut ``text`` before the first stop string (as vLLM and OpenAI do); whether one was found."""
    cut = min((i for i in (text.find(s) for s in stop if s) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


BASE_CAPABILITIES = EngineCapabilities(multi_turn=True, token_ids=True, logprobs=True)
