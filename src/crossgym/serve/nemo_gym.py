"""NeMo Gym's resources-server /verify shape, so NeMo Gym and NeMo RL clients can call crossgym verifiers.

Request (NeMo Gym's ``BaseVerifyRequest`` plus the dataset row's own fields): ``responses_create_params`` (the
OpenAI Responses request: ``input`` messages, ``tools``), ``response`` (the Responses API reply: ``output`` items:
``message``, ``function_call``, ``function_call_output``; reasoning and provider-executed calls are left out), and
what says how to score: a whole crossgym ``task``, or ``verifier`` (a name or {name, params}) with ``expected_answer`` (or ``answer``), or the server's
``--nemo-gym-verifier``. Reply (``BaseVerifyResponse``): the request echoed field for field, plus ``reward``,
``mask_sample``, ``failure_kind``, ``failure_reason``, and ``crossgym`` (the whole Verdict, its ``fault``).

NeMo Gym 0.7's semantics (``BaseVerifyResponse`` and ``nemo_gym/failure_kinds.py``, NVIDIA-NeMo/Gym issue 2608):
the three fields are orthogonal. A valid wrong answer is a real reward, zero included, with ``mask_sample`` false
and no failure; a completed result that is not policy evidence is ``mask_sample: true`` with failure metadata.
``failure_kind`` is a low-cardinality name from the shared vocabulary; ``failure_reason`` is free text. Here a
Verdict whose fault is ``infra`` (crossgym.scoring.failure: the verifier raised or timed out, its sandbox or the
environment failed) masks the sample, whatever on_error is; its kind is ``verifier_error`` (a timeout or an
exception), ``judge_failed`` (the ``judge`` verifier), ``provider_unavailable`` (the code sandbox) or
``environment_server_failed`` (an environment's reset or step). A malformed or wrong answer is the model's: never
masked, no failure fields.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from crossgym.protocol.messages import Message, ToolCall, ToolSpec
from crossgym.protocol.task import Completion, Task, Verdict, VerifierSpec
from crossgym.scoring.failure import cause, fault
from crossgym.scoring.rule import Scored
from crossgym.serve.errors import ApiError
from crossgym.serve.models import TaskIn, VerdictOut, VerifierRef, VerifierSpecIn, to_spec, to_task, verdict_dict

#: NeMo Gym's failure_kind for a verifier that failed (nemo_gym/failure_kinds.py)
FAILURE_KIND = "verifier_error"
#: NeMo Gym's failure_kind (its shared vocabulary) for each crossgym infrastructure cause
NEMO_KINDS = {"verifier_exception": FAILURE_KIND, "verifier_timeout": FAILURE_KIND,
              "sandbox": "provider_unavailable", "environment": "environment_server_failed"}
#: crossgym verifiers that are LLM judges (their failure is NeMo Gym's judge_failed)
JUDGES = frozenset({"judge"})

#: token metadata of a training rollout: NeMo Gym wants all three on an item or none (openai_utils.py)
TOKEN_FIELDS = frozenset({"prompt_token_ids", "generation_token_ids", "generation_log_probs"})

#: Responses output items NeMo Gym accepts that carry no assistant text or function call of the policy's own
#: (hosted tools the provider ran, and the client's results of other call kinds): left out, like reasoning
PASSED_OVER = frozenset({
    "mcp_call", "mcp_list_tools", "mcp_approval_request", "mcp_approval_response", "file_search_call",
    "web_search_call", "computer_call", "computer_call_output", "image_generation_call", "code_interpreter_call",
    "local_shell_call", "local_shell_call_output", "custom_tool_call", "custom_tool_call_output"})


class NemoCreateParams(BaseModel):
    """The OpenAI Responses request the policy was given (only ``input`` and ``tools`` are read)."""

    model_config = ConfigDict(extra="allow", strict=True)
    input: str | list[dict[str, Any]]
    """The prompt: a text, or Responses input items / chat messages."""
    tools: list[dict[str, Any]] = Field(default_factory=list)
    """Function tools offered to the policy."""


class NemoResponse(BaseModel):
    """The Responses API reply (only ``output`` is read)."""

    model_config = ConfigDict(extra="allow", strict=True)
    output: list[dict[str, Any]]
    """Output items: message, function_call, function_call_output, reasoning."""


class NemoGymVerifyRequest(BaseModel):
    """NeMo Gym's /verify request; other fields of the dataset row are allowed and echoed back."""

    model_config = ConfigDict(extra="allow", strict=True, use_attribute_docstrings=True)
    responses_create_params: NemoCreateParams
    """What the policy was asked."""
    response: NemoResponse
    """What the policy answered."""
    task: TaskIn | None = None
    """A whole crossgym Task (its prompt, answer and verifier); overrides the fields below."""
    verifier: VerifierSpecIn | str | None = None
    """The crossgym verifier that scores (default: the server's --nemo-gym-verifier)."""
    expected_answer: Any = None
    """The reference answer (NeMo Gym's usual field)."""
    answer: Any = None
    """The reference answer (crossgym's name; wins over expected_answer)."""


class CrossgymVerdict(BaseModel):
    verdict: VerdictOut
    verifier: VerifierRef


class NemoGymVerifyResponse(BaseModel):
    """NeMo Gym's /verify reply: the request echoed, with ``reward`` and the failure fields."""

    model_config = ConfigDict(extra="allow")
    responses_create_params: dict[str, Any]
    response: dict[str, Any]
    reward: float
    mask_sample: bool
    failure_kind: str | None
    failure_reason: str | None
    crossgym: CrossgymVerdict


def _text(content: Any) -> str:
    """Text of a Responses content field: a string, or parts of type input_text/output_text/text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content
                       if isinstance(p, dict) and p.get("type", "text") in ("input_text", "output_text", "text"))
    return str(content)


def _call(item: dict[str, Any], where: str) -> ToolCall:
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise ApiError(422, "invalid_request", "a function_call item has no name", where=where,
                       fix="give every function_call item a 'name'")
    # arguments read as every call form reads them: not one JSON object, the call carries an error and the
    # verifier judges it malformed (a malformed call is the policy's fault, not the request's)
    return ToolCall.from_dict({"id": str(item.get("call_id") or item.get("id") or ""), "name": name,
                               "arguments": item.get("arguments", "{}")})


def items_to_messages(items: list[dict[str, Any]], where: str) -> list[Message]:
    """Responses items as chat messages: consecutive assistant items (text and calls) merge into one message."""
    out: list[Message] = []
    for i, item in enumerate(items):
        at = f"{where}[{i}]"
        partial = TOKEN_FIELDS.difference(item) if TOKEN_FIELDS.intersection(item) else ()
        if partial:  # NeMo Gym refuses half the token metadata of a training rollout too
            raise ApiError(422, "invalid_request", f"token metadata lacks {', '.join(sorted(partial))}", where=at,
                           fix="send prompt_token_ids, generation_token_ids and generation_log_probs together")
        kind = item.get("type", "message" if "role" in item else None)
        if kind == "message":
            role = str(item.get("role", "assistant"))
            role = "system" if role == "developer" else role
            text = _text(item.get("content"))
            if role == "assistant" and out and out[-1].role == "assistant":
                prev = out.pop()
                out.append(Message(role="assistant", content=prev.content + text, tool_calls=prev.tool_calls))
            else:
                out.append(Message(role=role, content=text))
        elif kind == "function_call":
            call = _call(item, at)
            if out and out[-1].role == "assistant":
                prev = out.pop()
                out.append(Message(role="assistant", content=prev.content, tool_calls=(*prev.tool_calls, call)))
            else:
                out.append(Message(role="assistant", content="", tool_calls=(call,)))
        elif kind == "function_call_output":
            output = item.get("output", "")
            out.append(Message(role="tool", content=output if isinstance(output, str) else json.dumps(output),
                               tool_call_id=str(item.get("call_id") or "") or None))
        elif kind == "reasoning" or kind in PASSED_OVER:
            continue  # hidden reasoning and provider-executed calls are not part of the answer
        else:
            raise ApiError(422, "invalid_request", f"unsupported Responses item type {kind!r}", where=at,
                           fix="send message, function_call, function_call_output or reasoning items")
    return out


def _tools(specs: list[dict[str, Any]]) -> tuple[ToolSpec, ...]:
    out = []
    for t in specs:
        if t.get("type", "function") != "function":
            continue
        if isinstance(t.get("function"), dict):  # the Chat Completions form, which some datasets carry
            t = t["function"]
        if isinstance(t.get("name"), str):
            out.append(ToolSpec(name=t["name"], description=str(t.get("description") or ""),
                                parameters=t.get("parameters") or {"type": "object", "properties": {}}))
    return tuple(out)


def to_pair(req: NemoGymVerifyRequest, default_verifier: str | None) -> tuple[Task, Completion]:
    """The crossgym (Task, Completion) a NeMo Gym request describes."""
    completion = Completion(messages=tuple(items_to_messages(req.response.output, "body.response.output")))
    if req.task is not None:
        return to_task(req.task), completion
    if req.verifier is not None:
        spec = to_spec(req.verifier)
    elif default_verifier:
        spec = VerifierSpec(name=default_verifier)
    else:
        raise ApiError(422, "invalid_request", "the request does not say which crossgym verifier scores it",
                       where="body.verifier",
                       fix="add 'verifier' (see GET /verifiers) and 'expected_answer' to the dataset rows, or a "
                           "whole crossgym 'task', or start the server with --nemo-gym-verifier NAME")
    raw_input = req.responses_create_params.input
    prompt = [Message(role="user", content=raw_input)] if isinstance(raw_input, str) \
        else items_to_messages(raw_input, "body.responses_create_params.input")
    instructions = (req.responses_create_params.model_extra or {}).get("instructions")
    if isinstance(instructions, str) and instructions:  # the Responses API's system prompt
        prompt.insert(0, Message(role="system", content=instructions))
    extra = req.model_extra or {}
    answer = req.answer if req.answer is not None else req.expected_answer
    task_id = str(extra.get("task_id") or extra.get("id") or extra.get("uuid") or "nemo_gym")
    return Task(id=task_id, prompt=tuple(prompt), answer=answer, verifier=spec,
                tools=_tools(req.responses_create_params.tools)), completion


def failure_kind(verdict: Verdict, verifier: str | None = None) -> str | None:
    """NeMo Gym's ``failure_kind`` of a verdict: a name of its shared vocabulary for an infrastructure failure,
    None for the model's own (wrong or malformed) and for a pass."""
    why = cause(verdict)
    if why is None or fault(verdict) != "infra":
        return None
    if verifier in JUDGES and why in ("verifier_exception", "verifier_timeout"):
        return "judge_failed"
    return NEMO_KINDS.get(why, FAILURE_KIND)


def reply(raw: dict[str, Any], scored: Scored, verifier: dict[str, Any]) -> dict[str, Any]:
    """The request echoed with NeMo Gym's reward fields (the scoring core's reward under the server's rule; an
    infrastructure failure masks the sample) and crossgym's Verdict."""
    verdict = scored.verdict
    kind = failure_kind(verdict, verifier.get("name"))
    out = dict(raw)
    out["reward"] = scored.reward_or(0.0)
    out["mask_sample"] = kind is not None
    out["failure_kind"] = kind
    out["failure_reason"] = verdict.error if kind is not None else None
    out["crossgym"] = {"verdict": verdict_dict(verdict), "verifier": verifier}
    return out
