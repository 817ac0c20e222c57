"""The sandbox tests need a real container engine; without one they skip LOUDLY (fail in CI).

Each test using ``docker_engine`` runs against dockerd and, where it is installed, against
Podman's Docker-compatible service, through the same evalh code. ``EVALH_REQUIRE_DOCKER=1``
(set by .ci/run) turns a missing dockerd into a failure: CI must run them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

from tests.sandbox.engine import Engine, running_dockerd, running_podman, why_docker_cannot_run, why_podman_cannot_run


def _skip_loudly(message: str, required: bool) -> None:
    if required:
        pytest.fail(message)
    print(f"\n*** {message} ***", file=sys.stderr)
    pytest.skip(message)


@pytest.fixture(scope="session", params=["docker", "podman"])
def docker_engine(request: pytest.FixtureRequest) -> Iterator[Engine]:
    if request.param == "docker":
        if (problem := why_docker_cannot_run()) is not None:
            _skip_loudly(f"SANDBOX TESTS NOT RUN: a Docker engine cannot run here: {problem}",
                         os.environ.get("EVALH_REQUIRE_DOCKER") == "1")
        with running_dockerd() as engine:
            yield engine
    else:
        if (problem := why_podman_cannot_run()) is not None:
            _skip_loudly(f"PODMAN SANDBOX TESTS NOT RUN: {problem}", False)
        with running_podman() as engine:
            yield engine
