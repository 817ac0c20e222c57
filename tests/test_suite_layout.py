"""The tests are a suite, not a library: helpers live in tests/support/ (or an area's own
support.py), fixtures in conftest.py, and no module imports a test module or a conftest."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _imported_modules(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
    return names


def test_no_module_imports_a_test_module_or_a_conftest() -> None:
    offenders = []
    for path in sorted(TESTS.rglob("*.py")):
        for module in _imported_modules(path):
            last = module.rsplit(".", 1)[-1]
            if module.split(".")[0] in {"tests", "conftest"} and (last == "conftest" or last.startswith("test_")):
                offenders.append(f"{path.relative_to(TESTS)}: {module}")
    assert offenders == []


# Servers that are the system under test of an example, started as their own process from a
# file (stdlib only, as a user's service would be), not fakes a test serves in process.
_STANDALONE_SERVERS = {"compat/evals/http_templates/server.py", "systems/test_git_branch.py"}


def test_every_in_process_http_fake_is_served_by_the_shared_loopback_helper() -> None:
    serving = sorted(str(path.relative_to(TESTS)) for path in TESTS.rglob("*.py")
                     if "HTTPServer(" in path.read_text() and path != Path(__file__))
    assert serving == sorted(["support/http_server.py", *_STANDALONE_SERVERS])


def test_every_raw_socket_fake_listens_through_the_shared_loopback_helper() -> None:
    listening = sorted(str(path.relative_to(TESTS)) for path in TESTS.rglob("*.py")
                       if "asyncio.start_server(" in path.read_text() and path != Path(__file__))
    assert listening == ["support/http_server.py"]
