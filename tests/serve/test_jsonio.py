"""jsonio: the fast path and the standard library read and write the same documents."""

from __future__ import annotations

import json

import pytest

from crossgym.serve import jsonio


@pytest.mark.parametrize("doc", [{"a": [1, 2.5, "é", None, True]}, {"big": 2**70}, [], "text", {"nested": {"x": [{}]}}])
def test_round_trip_equals_the_standard_library(doc: object) -> None:
    assert jsonio.loads(jsonio.dumps(doc)) == doc == json.loads(json.dumps(doc))


def test_non_json_values_and_keys() -> None:
    assert jsonio.loads(jsonio.dumps({1: {2}})) in ({"1": "{2}"},)
    assert jsonio.loads(b'{"x": NaN}')["x"] != jsonio.loads(b'{"x": NaN}')["x"]  # what json accepts, we accept
    with pytest.raises(json.JSONDecodeError):
        jsonio.loads(b"{not json")


@pytest.mark.parametrize("doc", [{"m": {"x": float("nan")}, "s": "bad \udcff text"},
                                 {"m": [float("inf"), float("-inf")], "big": 2**70},
                                 {"m": {(1, 2): float("nan"), 3: "\ud800"}}])
def test_nan_beside_what_orjson_refuses_is_written_as_orjson_writes_nan(doc: object) -> None:
    """A task whose metadata holds NaN, in the same body as a lone surrogate or an integer past 64 bits: orjson
    refused the body, and the standard library, told not to write NaN, raised ValueError, so the client's whole
    /verify/batch request failed. NaN and infinities are null on both paths."""
    back = json.loads(jsonio.dumps(doc))
    nums = back["m"] if isinstance(back["m"], list) else list(back["m"].values())
    assert None in nums and all(v is None or isinstance(v, str) for v in nums)
    assert jsonio.dumps({"x": float("nan")}) == b'{"x":null}'  # what orjson writes for NaN alone


def test_client_batch_with_nan_metadata_and_a_surrogate_equals_local(live_server: object) -> None:
    import dataclasses

    from crossgym.api import load_verifier
    from crossgym.protocol import Completion
    from crossgym.serve.client import ServeClient
    from crossgym.verifiers.batch import verify_many

    ex = load_verifier("exact_match").examples()
    pairs = [(dataclasses.replace(ex[0].task, metadata={"difficulty": float("nan")}), ex[0].completion),
             (ex[1].task, Completion.from_text("The answer is NYC \udcff"))]
    client = ServeClient(live_server().url)  # type: ignore[operator]
    try:
        assert client.verify_batch(pairs) == verify_many(pairs)
    finally:
        client.close()
