"""schemathesis against the served OpenAPI schema (a live loopback server, NeMo Gym shape on), few examples each.

Every documented operation is called with generated valid and invalid bodies; schemathesis checks that nothing
answers 5xx, that every status, header and body is the documented one, and that invalid input is refused.
``positive_data_acceptance`` is left out on purpose: verifier and environment names are open (plugins), so a
schema-valid body naming an unregistered verifier is a documented 422, not a schema violation.
"""

from __future__ import annotations

from typing import Any

import pytest

schemathesis = pytest.importorskip("schemathesis")
pytest.importorskip("fastapi")

from hypothesis import HealthCheck, Phase, settings  # noqa: E402
from schemathesis.checks import positive_data_acceptance  # noqa: E402

from crossgym.serve.app import create_app  # noqa: E402
from crossgym.serve.settings import ServeSettings  # noqa: E402

SETTINGS = {"nemo_gym": True, "max_batch": 8, "request_timeout_s": 20, "max_sessions": 16}
schema = schemathesis.openapi.from_dict(create_app(ServeSettings(**SETTINGS)).openapi())
# a body that breaks the schema AND holds more than max_batch items is refused for its size first: 413 is a refusal
_rejection = schema.config.checks.negative_data_rejection
_rejection.expected_statuses = [*_rejection.expected_statuses, "413"]


@pytest.fixture(scope="module")
def server_url() -> Any:
    from crossgym.serve.live import LiveServer

    with LiveServer(ServeSettings(**SETTINGS)) as srv:
        yield srv.url


@schema.parametrize()
@settings(max_examples=12, deadline=None, derandomize=True, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=list(HealthCheck))
def test_api_conforms_to_its_schema(case: Any, server_url: str) -> None:
    case.call_and_validate(base_url=server_url, timeout=30, excluded_checks=[positive_data_acceptance])
