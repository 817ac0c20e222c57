"""Third-party systems and evaluators found through real entry points, used from YAML by name."""

from __future__ import annotations

import ast
import json
import shutil
import textwrap
from pathlib import Path

import pytest

import evalh_pipeline
from tests.support.evalh_process import run_evalh

PLUGIN = Path(__file__).parent / "fixture_plugin" / "evalh_fixture_plugin.py"


@pytest.fixture
def plugin_env(tmp_path, env):
    """`env` with the fixture plugin installed as a distribution on PYTHONPATH (no pip, no network)."""
    site = tmp_path / "site"
    site.mkdir()
    shutil.copy(PLUGIN, site / PLUGIN.name)
    dist_info = site / "evalh_fixture_plugin-0.1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: evalh-fixture-plugin\nVersion: 0.1.0\n")
    (dist_info / "entry_points.txt").write_text(textwrap.dedent("""\
        [evalh_pipeline.evaluators]
        word_count_at_least = evalh_fixture_plugin:WordCountAtLeast

        [evalh_pipeline.systems]
        shout = evalh_fixture_plugin:ShoutSystem

        [evalh_pipeline.stores]
        traces_copy = evalh_fixture_plugin:TracesCopyStore

        [evalh_pipeline.enrichers]
        stamp = evalh_fixture_plugin:StampEnricher
        """))
    return {**env, "PYTHONPATH": str(site)}


def write_plugin_eval(folder: Path, adapter: str = "shout", evaluator: str = "word_count_at_least") -> Path:
    folder.mkdir(parents=True)
    cases = [{"id": "one_word", "input": {"text": "hello"}}, {"id": "three_words", "input": {"text": "hello big world"}}]
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    path = folder / "eval.yaml"
    path.write_text(textwrap.dedent(f"""\
        eval: {{name: plugged}}
        dataset: {{type: jsonl, path: cases.jsonl}}
        systems:
          - name: loud
            adapter: {adapter}
            suffix: "!!"
        evaluators:
          - name: wordy
            type: {evaluator}
            config: {{min_words: 2}}
        output:
          - type: local_files
            path: {folder / "runs"}
        """))
    return path


def test_plugin_system_and_evaluator_run_from_yaml_by_type_name(tmp_path, plugin_env):
    path = write_plugin_eval(tmp_path / "plugged")
    proc = run_evalh(["run", str(path)], plugin_env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = (tmp_path / "plugged" / "runs").iterdir()
    traces = {t["case_id"]: t for t in map(json.loads, (run_dir / "traces.jsonl").read_text().splitlines())}
    assert {case: t["output"]["final_answer"] for case, t in traces.items()} == {
        "one_word": "HELLO!!", "three_words": "HELLO BIG WORLD!!"}
    results = {r["case_id"]: r for r in map(json.loads, (run_dir / "results.jsonl").read_text().splitlines())}
    assert {case: (r["evaluator_type"], r["passed"], r["reason"]) for case, r in results.items()} == {
        "one_word": ("word_count_at_least", False, "1 words (< 2)"),
        "three_words": ("word_count_at_least", True, "3 words (>= 2)"),
    }


def test_unknown_names_list_the_plugins_among_the_known_ones(tmp_path, plugin_env):
    path = write_plugin_eval(tmp_path / "plugged", adapter="shoutt", evaluator="word_count")
    proc = run_evalh(["run", "--dry-run", str(path)], plugin_env, tmp_path)
    assert proc.returncode == 1
    # The CLI wraps long lines to the terminal width; compare on single-spaced text.
    stderr = " ".join(proc.stderr.split())
    known_adapters = _known(stderr, "systems[0].adapter: unknown adapter 'shoutt'")
    assert "shout" in known_adapters and "python_function" in known_adapters
    known_evaluators = _known(stderr, "evaluators[0].type: unknown evaluator type 'word_count'")
    assert "word_count_at_least" in known_evaluators and "contains_text" in known_evaluators


def _known(stderr: str, error: str) -> list[str]:
    """The names listed in ``<error> (known: a, b, ...)``."""
    return stderr.split(f"{error} (known: ")[1].split(")")[0].split(", ")


def test_plugin_config_is_validated_when_the_eval_loads(tmp_path, plugin_env):
    path = write_plugin_eval(tmp_path / "plugged")
    path.write_text(path.read_text().replace("min_words: 2", "min_word: 2"))
    proc = run_evalh(["run", "--dry-run", str(path)], plugin_env, tmp_path)
    assert proc.returncode == 1
    text = " ".join(proc.stderr.split())
    assert ("evaluators[0].config.min_word: unknown key for evaluator type 'word_count_at_least' "
            "(did you mean 'min_words'?)") in text
    assert "evaluators[0].config.min_words: required key is missing" in text



def test_plugin_store_and_enricher_are_used_from_yaml_by_type_name(tmp_path, plugin_env):
    path = write_plugin_eval(tmp_path / "plugged")
    text = path.read_text().replace('    suffix: "!!"\n', '    suffix: "!!"\n'
                                    "    enrich_trace_from: [{type: stamp, label: by-plugin}]\n")
    assert "enrich_trace_from" in text
    path.write_text(text + f"  - {{type: traces_copy, path: {tmp_path / 'copies'}}}\n")
    proc = run_evalh(["run", str(path)], plugin_env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = (tmp_path / "plugged" / "runs").iterdir()
    traces = [json.loads(line) for line in (run_dir / "traces.jsonl").read_text().splitlines()]
    assert [t["extra"]["stamp"] for t in traces] == ["by-plugin", "by-plugin"]
    assert (tmp_path / "copies" / f"{run_dir.name}.jsonl").read_text() == (run_dir / "traces.jsonl").read_text()
    unknown = run_evalh(["run", "--dry-run", str(path)], {**plugin_env, "PYTHONPATH": ""}, tmp_path)
    said = " ".join(unknown.stderr.split())
    assert unknown.returncode == 1 and "unknown output type 'traces_copy'" in said and "unknown enricher 'stamp'" in said


def test_the_plugin_imports_nothing_from_evalh_pipeline_but_its_public_api() -> None:
    imported: list[tuple[str, str]] = []
    for node in ast.walk(ast.parse(PLUGIN.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("evalh_pipeline"):
            imported += [(node.module or "", alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            assert not any(alias.name.startswith("evalh_pipeline") for alias in node.names)
    assert imported, "the plugin is built on evalh_pipeline"
    assert {module for module, _ in imported} == {"evalh_pipeline"}
    assert {name for _, name in imported} <= set(evalh_pipeline.__all__)
