"""RunPublisher: a run directory copied to a URL canonical output and to mirrors, stage by stage."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import uuid
from pathlib import Path

import fsspec
import pytest

from evalh_pipeline.common.settings import Settings
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.evaluation import evaluate_traces
from evalh_pipeline.runner.stages import prepare_cases, write_summary
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.outputs.journal import recorded_failures
from evalh_pipeline.outputs.publishing import PublishError, RunPublisher, fetch_run, working_root
from evalh_pipeline.outputs.sync import publish_run
from evalh_pipeline.store.run_dir import new_run_id
from tests.support.evals import write_eval
from tests.same_stat import rewrite_keeping_stat

RUN_FILES = {"run.json", "config.yaml", "config_hash.txt", "cases.jsonl", "traces.jsonl", "results.jsonl",
             "summary.yaml", "report.md"}


@pytest.fixture
def cache_dir(tmp_path) -> Path:
    """The cache folder (Settings.cache_dir, what $EVALH_CACHE_DIR names) these tests hand in."""
    return (tmp_path / "cache").resolve()


def eval_with_outputs(folder: Path, *outputs: str) -> Path:
    path = write_eval(folder, cases=3)
    entries = "".join(f"  - type: local_files\n    path: {target}\n" for target in outputs)
    text = path.read_text()
    start = text.index("output:\n")
    end = text.index("\n", text.index("    path: ", start)) + 1
    path.write_text(text[:start] + "output:\n" + entries + text[end:])
    return path


def load_spec(eval_path: Path, cache_dir: Path):
    """``load_eval``, but a ``memory://`` canonical output is allowed.

    load_eval refuses one (it does not outlive the process); these tests use it in-process
    to exercise publishing to a non-local fsspec file system, so the eval is loaded with a
    stand-in folder and given the memory URL afterwards.
    """
    settings = dataclasses.replace(Settings.from_environment(), cache_dir=cache_dir)
    text = eval_path.read_text()
    memory = re.search(r"path: (memory://\S+)", text)
    if memory is None:
        return load_eval(eval_path, settings=settings)
    url = memory.group(1)
    eval_path.write_text(text.replace(url, str(eval_path.parent / "stand-in"), 1))
    spec = load_eval(eval_path, settings=settings)
    return dataclasses.replace(spec, outputs=(url, *spec.outputs[1:]), runs_root=str(working_root(url, cache_dir)))


def run_all_stages(eval_path: Path, cache_dir: Path):
    """The stages as the assets call them, publishing after each one."""
    spec = load_spec(eval_path, cache_dir)
    info = prepare_cases(spec, new_run_id(spec.name))
    reports = [publish_run(spec, info.run_dir, "cases")]
    asyncio.run(produce_traces(spec, info.run_dir))
    reports.append(publish_run(spec, info.run_dir, "traces"))
    asyncio.run(evaluate_traces(spec, info.run_dir))
    reports.append(publish_run(spec, info.run_dir, "results"))
    write_summary(spec, info.run_dir)
    reports.append(publish_run(spec, info.run_dir, "summary"))
    return spec, info.run_dir, reports


def remote_files(url: str) -> dict[str, bytes]:
    fs, root = fsspec.core.url_to_fs(url)
    return {path[len(root.rstrip("/")) + 1:]: fs.cat_file(path) for path in fs.find(root)}


def local_files(folder: Path) -> dict[str, bytes]:
    """The files a publish copies: not the hidden top-level entries (.lock, .cells/ caches...),
    nor the results store (results/: results.jsonl holds its lines)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*")
            if p.is_file() and not p.relative_to(folder).parts[0].startswith(".")
            and p.relative_to(folder).parts[0] != "results"}


def test_memory_url_canonical_gets_every_run_file_while_the_engine_works_in_the_cache(tmp_path, cache_dir):
    url = f"memory://evalh-{uuid.uuid4().hex}/runs"
    spec, run_dir, reports = run_all_stages(eval_with_outputs(tmp_path / "toy", url), cache_dir)

    assert run_dir.path.parent == working_root(url, cache_dir) and working_root(url, cache_dir).is_relative_to(cache_dir)
    published = remote_files(f"{url}/{run_dir.run_id}")
    assert RUN_FILES <= set(published)
    assert published == local_files(run_dir.path)
    assert not any(name.startswith(".") or "/." in name for name in published)
    assert reports[0].uploaded[url] == 4  # run.json, config.yaml, config_hash.txt, cases.jsonl
    assert reports[-1].uploaded[url] == 2  # only summary.yaml and report.md changed in the last stage


def test_file_url_canonical_on_another_folder_mirrors_the_run_directory(tmp_path, cache_dir):
    remote = tmp_path / "bucket" / "runs"
    spec, run_dir, _ = run_all_stages(eval_with_outputs(tmp_path / "toy", f"file://{remote}"), cache_dir)

    assert not run_dir.path.is_relative_to(remote)
    assert local_files(remote / run_dir.run_id) == local_files(run_dir.path)
    assert RUN_FILES <= set(local_files(remote / run_dir.run_id))


def test_unchanged_files_are_skipped_changed_ones_uploaded_and_deleted_ones_removed(tmp_path, cache_dir):
    url = f"memory://evalh-{uuid.uuid4().hex}/runs"
    spec, run_dir, _ = run_all_stages(eval_with_outputs(tmp_path / "toy", url), cache_dir)
    publisher = RunPublisher.for_spec(spec)

    assert publisher.publish(run_dir, "again").uploaded == {}
    run_dir.report.write_text("# edited\n")
    os.utime(run_dir.report, ns=(1, 1))  # a different mtime even on coarse clocks
    assert publisher.publish(run_dir, "edit").uploaded == {url: 1}
    run_dir.report.unlink()
    assert publisher.publish(run_dir, "delete").removed == {url: 1}
    assert "report.md" not in remote_files(f"{url}/{run_dir.run_id}")



@pytest.mark.parametrize("kind", ["memory", "file"])
def test_a_file_rewritten_with_its_size_and_mtime_kept_is_uploaded_again(tmp_path, cache_dir, kind):
    url = (f"memory://evalh-{uuid.uuid4().hex}/runs" if kind == "memory" else f"file://{tmp_path / 'bucket'}")
    spec, run_dir, _ = run_all_stages(eval_with_outputs(tmp_path / "toy", url), cache_dir)
    publisher = RunPublisher.for_spec(spec)

    rewrite_keeping_stat(run_dir.results, b'"score":1.0', b'"score":0.5')  # a hand edit, stat put back
    assert publisher.publish(run_dir, "edit").uploaded == {url: 1}
    assert remote_files(f"{url}/{run_dir.run_id}")["results.jsonl"] == run_dir.results.read_bytes()
    assert publisher.publish(run_dir, "again").uploaded == {}


def test_a_run_folder_copied_with_its_publish_state_uploads_what_differs_from_the_target(tmp_path, cache_dir):
    # The working copy is restored from a backup that kept its times and its publish state,
    # then edited in place: what the target holds is judged by content alone.
    import shutil

    url = f"memory://evalh-{uuid.uuid4().hex}/runs"
    spec, run_dir, _ = run_all_stages(eval_with_outputs(tmp_path / "toy", url), cache_dir)
    backup = tmp_path / "backup"
    shutil.copytree(run_dir.path, backup)
    rewrite_keeping_stat(backup / "report.md", b"#", b"=")
    shutil.rmtree(run_dir.path)
    shutil.copytree(backup, run_dir.path)

    assert RunPublisher.for_spec(spec).publish(run_dir, "restored").uploaded == {url: 1}
    assert remote_files(f"{url}/{run_dir.run_id}") == local_files(run_dir.path)


def test_each_result_is_uploaded_once_as_results_jsonl_and_a_fetched_run_reads_it(tmp_path, cache_dir):
    from evalh_pipeline.queries.inspect import inspect_run
    from evalh_pipeline.store.run_dir import RunDirectory

    def verdicts(folder: Path) -> list[tuple]:
        return [(c.case_id, c.variant_name, c.passed, sorted((r["evaluator"], r["passed"]) for r in c.results))
                for c in inspect_run(RunDirectory(folder)).cells]

    url = f"memory://evalh-{uuid.uuid4().hex}/runs"
    spec, run_dir, reports = run_all_stages(eval_with_outputs(tmp_path / "toy", url), cache_dir)

    published = remote_files(f"{url}/{run_dir.run_id}")
    assert run_dir.results_store.is_dir()  # the engine's own store stays in the working copy
    assert not any(name.startswith("results/") for name in published)
    assert published["results.jsonl"] == run_dir.results.read_bytes()
    assert reports[2].uploaded == {url: 1}  # the results stage: results.jsonl, nothing else
    fetched = fetch_run(f"{url}/{run_dir.run_id}", cache_dir)
    assert verdicts(fetched) == verdicts(run_dir.path) and len(verdicts(fetched)) == 6

def test_hidden_temp_and_symlinked_files_are_never_uploaded(tmp_path, cache_dir):
    url = f"memory://evalh-{uuid.uuid4().hex}/runs"
    spec = load_spec(eval_with_outputs(tmp_path / "toy", url), cache_dir)
    run_dir = prepare_cases(spec, new_run_id(spec.name)).run_dir
    (run_dir.path / ".lock").write_text("")
    (run_dir.path / ".staging-x").mkdir()
    (run_dir.path / ".staging-x" / "run.json").write_text("{}")
    (run_dir.artifacts / "c" / "v").mkdir(parents=True)
    (run_dir.artifacts / "c" / "v" / ".env").write_text("kept: artifacts may hold dotfiles")
    (run_dir.artifacts / "c" / "v" / ".out.txt.abc.tmp").write_text("half written")
    (run_dir.artifacts / "c" / "v" / "link").symlink_to(run_dir.meta)

    publish_run(spec, run_dir, "cases")

    published = set(remote_files(f"{url}/{run_dir.run_id}"))
    assert published == {"run.json", "config.yaml", "config_hash.txt", "cases.jsonl", "artifacts/c/v/.env"}
    assert (run_dir.publish_state).exists()


def test_a_failing_mirror_is_recorded_and_the_canonical_copy_still_completes(tmp_path, cache_dir):
    url = f"memory://evalh-{uuid.uuid4().hex}/runs"
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the mirror wants a folder\n")
    mirror = f"file://{blocker}/runs"
    spec, run_dir, reports = run_all_stages(eval_with_outputs(tmp_path / "toy", url, mirror), cache_dir)

    assert [len(r.failures) for r in reports] == [1, 1, 1, 1]
    assert reports[0].failures[0].target == mirror
    failures = recorded_failures(run_dir)
    assert [f["stage"] for f in failures] == ["cases", "traces", "results", "summary"]
    assert all(f["target"] == mirror and not f["ok"] and f["error"] for f in failures)
    published = remote_files(f"{url}/{run_dir.run_id}")
    assert RUN_FILES | {run_dir.publish_log.name} <= set(published)
    assert published[run_dir.publish_log.name] == (run_dir.publish_log).read_bytes()


def test_a_working_mirror_folder_gets_the_same_files_as_a_local_canonical(tmp_path, cache_dir):
    mirror = tmp_path / "mirror"
    spec, run_dir, reports = run_all_stages(eval_with_outputs(tmp_path / "toy", str(tmp_path / "runs"), str(mirror)), cache_dir)

    assert run_dir.path.parent == tmp_path / "runs"
    assert local_files(mirror / run_dir.run_id) == local_files(run_dir.path)
    assert all(not r.failures for r in reports)


def test_a_failing_canonical_output_fails_the_stage_with_the_url_in_the_message(tmp_path, cache_dir):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x\n")
    spec = load_spec(eval_with_outputs(tmp_path / "toy", f"file://{blocker}/runs"), cache_dir)
    run_dir = prepare_cases(spec, new_run_id(spec.name)).run_dir

    with pytest.raises(PublishError, match=rf"canonical output file://{blocker}/runs/{run_dir.run_id} after cases"):
        publish_run(spec, run_dir, "cases")
    assert not (run_dir.publish_log).exists()


def test_a_local_only_eval_publishes_nothing(tmp_path):
    spec = load_eval(eval_with_outputs(tmp_path / "toy", str(tmp_path / "runs")))
    run_dir = prepare_cases(spec, new_run_id(spec.name)).run_dir

    report = publish_run(spec, run_dir, "cases")

    assert not RunPublisher.for_spec(spec).active and report.uploaded == {}
    assert not (run_dir.publish_state).exists()
    assert json.loads(run_dir.meta.read_text())["run_id"] == run_dir.run_id


def test_fetch_run_copies_a_published_run_into_the_cache_and_refreshes_it(tmp_path, cache_dir):
    url = f"memory://evalh-{uuid.uuid4().hex}/runs"
    spec, run_dir, _ = run_all_stages(eval_with_outputs(tmp_path / "toy", url), cache_dir)
    run_url = f"{url}/{run_dir.run_id}"

    fetched = fetch_run(run_url, cache_dir)

    assert fetched.name == run_dir.run_id and fetched.is_relative_to(cache_dir / "fetched")
    assert local_files(fetched) == local_files(run_dir.path)
    fsspec.core.url_to_fs(run_url)[0].pipe_file(f"{run_url}/report.md".removeprefix("memory://"), b"# new\n")
    assert (fetch_run(run_url, cache_dir) / "report.md").read_bytes() == b"# new\n"
    with pytest.raises(FileNotFoundError, match="no run.json"):
        fetch_run(f"{url}/no-such-run", cache_dir)
