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
