"""The lines a run writes, pinned: on fixtures covering each kind of cell (python_function
sync and async, in this process, with thread isolation and in a worker process; http
streaming with thinking; cli; a workspace eval; an errored and a timed-out cell), traces.jsonl and results.jsonl are byte-identical to the golden files
captured from the code before the lean cell path, except timestamps, latencies and the
hashes that cover them (tests/support/differential.py says exactly what is normalised).

``EVALH_UPDATE_GOLDEN=1`` captures the golden files again from the code as it is; to capture
them from older code, run this test with that code's ``evalh_pipeline`` first on the path."""

from __future__ import annotations

import os

import pytest

from tests.support.differential import golden_path, normalised, run_stages, write_fixtures
from tests.support.streaming_chat_server import streaming_chat_server

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """eval name -> (normalised traces, normalised results) of one fresh run each."""
    root = tmp_path_factory.mktemp("differential")
    with streaming_chat_server() as url:
        evals = write_fixtures(root, url)
        found = {}
        for name, path in evals.items():
            traces, results, server_hashes = run_stages(path)
            found[name] = (normalised(traces, root, url, server_hashes), normalised(results, root, url, server_hashes))
    return found


@pytest.mark.parametrize("name", ["cells", "workspace"])
@pytest.mark.parametrize("kind", ["traces", "results"])
def test_run_writes_the_golden_lines(written, name, kind):
    text = written[name][0 if kind == "traces" else 1]
    golden = golden_path(name, kind)
    if os.environ.get("EVALH_UPDATE_GOLDEN"):
        golden.write_text(text, encoding="utf-8")
    expected = golden.read_text(encoding="utf-8")
    assert text.splitlines() == expected.splitlines()
