"""The sandbox tests need a real Docker engine; without one they skip LOUDLY (fail in CI).

``EVALH_REQUIRE_DOCKER=1`` (set by .ci/run) turns the skip into a failure: CI must run them.
"""

from __future__ import annotations

import os
import sys

import pytest

from tests.sandbox.engine import Engine, running_dockerd, why_docker_cannot_run


@pytest.fixture(scope="session")
def docker_engine() -> Engine:
    problem = why_docker_cannot_run()
    if problem is not None:
        message = f"SANDBOX TESTS NOT RUN: a Docker engine cannot run here: {problem}"
        if os.environ.get("EVALH_REQUIRE_DOCKER") == "1":
            pytest.fail(message)
        print(f"\n*** {message} ***", file=sys.stderr)
        pytest.skip(message)
    with running_dockerd() as engine:
        yield engine
