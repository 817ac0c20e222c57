"""http with a workspace: `{{ workspace.path }}` in request_template, and the path in a header."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.stages import prepare_cases
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.run_dir import new_run_id
from evalh_pipeline.workspaces.artifacts import load_artifact
from tests.support.evals import write_eval
from tests.support.http_server import FakeHandler, serving_handler


@pytest.fixture
def file_writing_service():
    """A service that takes a folder in its request body and writes a report into it."""
    seen: list[tuple[dict, dict]] = []

    class Handler(FakeHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = self.body_json()
            seen.append((body, dict(self.headers)))
            Path(body["folder"], "report.md").write_text(f"# {body['question']}\n")
            self.send_json(200, {"answer": "written"})

    with serving_handler(Handler) as url:
        yield url, seen


def _eval(tmp_path, url: str, workspace: bool = True):
    systems = f"""
  - name: base
    adapter: http
    endpoint: {url}/run
    request_template: {{folder: "{{{{ workspace.path }}}}", question: "{{{{ case.input.answer }}}}"}}
    response_mapping: {{final_answer: $.answer}}
"""
    extra = f"workspace:\n  type: tempdir_snapshot\n  base_path: {tmp_path / 'ws'}\n" if workspace else ""
    return write_eval(tmp_path / "toy", cases=2, systems=systems, extra_yaml=extra)


def test_the_workspace_path_is_substituted_into_the_request_and_sent_as_a_header(tmp_path, file_writing_service):
    url, seen = file_writing_service
    spec = load_eval(_eval(tmp_path, url))
    info = prepare_cases(spec, new_run_id(spec.name))
    asyncio.run(produce_traces(spec, info.run_dir))

    traces = [json.loads(line) for line in info.run_dir.traces.read_text().splitlines()]
    assert [t["error"] for t in traces] == [None, None]
    assert len(seen) == 2
    for body, headers in seen:
        assert body["folder"].startswith(str(tmp_path / "ws")) and headers["X-Evalh-Workspace-Path"] == body["folder"]
    artifact = load_artifact(spec, info.run_dir, "case_0", "base")
    assert artifact.diff.added == ["report.md"]


def test_a_template_naming_the_workspace_without_one_errors_the_cell_clearly(tmp_path, file_writing_service):
    url, seen = file_writing_service
    spec = load_eval(_eval(tmp_path, url, workspace=False))
    info = prepare_cases(spec, new_run_id(spec.name))
    asyncio.run(produce_traces(spec, info.run_dir))
    trace = json.loads(info.run_dir.traces.read_text().splitlines()[0])
    assert "has no workspace: section" in trace["error"]["message"] and seen == []
