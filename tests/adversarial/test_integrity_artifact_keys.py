"""Item 2: two case ids must never share an artifact folder (``""`` and ``"\\x00"`` did)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from evalh_pipeline.store.object_storage import artifact_key, encode_key_part
from tests.support.evalh_process import run_evalh

# Every code point, lone surrogates included: a JSONL dataset can hold "\ud800" escapes.
ANY_TEXT = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=400)
VARIANT_NAMES = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,200}", fullmatch=True)


@given(ANY_TEXT, ANY_TEXT)
def test_distinct_case_ids_never_share_a_key_part(a: str, b: str) -> None:
    if a != b:
        assert encode_key_part(a) != encode_key_part(b)


@given(ANY_TEXT)
def test_every_key_part_is_one_safe_file_name(name: str) -> None:
    part = encode_key_part(name)
    assert part not in ("", ".", "..")
    assert "/" not in part and "\x00" not in part and "~" not in part[:150]
    assert len(part.encode()) <= 255
    part.encode("ascii")  # URL- and file-system-safe everywhere


@given(st.tuples(ANY_TEXT, VARIANT_NAMES, st.integers(0, 50)), st.tuples(ANY_TEXT, VARIANT_NAMES, st.integers(0, 50)))
def test_distinct_cells_never_share_a_folder(a: tuple[str, str, int], b: tuple[str, str, int]) -> None:
    if a != b:
        assert artifact_key(*a) != artifact_key(*b)


def test_known_collisions_are_gone() -> None:
    pairs = [("", "\x00"), ("\udcc3\udca9", "é"), ("x" * 151, "x" * 152), (".", "%2E")]
    for a, b in pairs:
        assert encode_key_part(a) != encode_key_part(b), (a, b)


AGENT = '''
import os
from pathlib import Path

def run(case, variant):
    # Each cell writes its own case id into the workspace: its artifact must hold exactly that.
    Path(variant["_workspace_path"], "who.txt").write_text(repr(case["id"]))
    return {"final_answer": repr(case["id"])}
'''


@pytest.mark.e2e
def test_empty_and_nul_case_ids_keep_their_own_artifacts(tmp_path: Path, env: dict[str, str]) -> None:
    folder = tmp_path / "ids"
    (folder / "seed").mkdir(parents=True)
    (folder / "seed" / "keep.txt").write_text("seed\n")
    (folder / "agent.py").write_text(AGENT)
    ids = ["", "\x00", "%00", "%"]
    (folder / "cases.jsonl").write_text("".join(json.dumps({"id": i, "input": {}}) + "\n" for i in ids))
    (folder / "eval.yaml").write_text(f"""
eval: {{name: ids}}
dataset: {{type: jsonl, path: cases.jsonl}}
systems:
  - {{name: only, adapter: python_function, target: "agent:run"}}
workspace: {{type: tempdir_snapshot, copy_from: ./seed}}
evaluators:
  - {{name: changed, type: git_diff, config: {{expected_added: [who.txt]}}}}
output: [{{type: local_files, path: {folder / "runs"}}}]
""")
    done = run_evalh(["run", str(folder / "eval.yaml")], env, tmp_path)
    assert done.returncode == 0, done.stderr
    run_dir = next(p for p in (folder / "runs").iterdir() if not p.name.startswith("."))
    folders = [p for p in (run_dir / "artifacts").iterdir()]
    assert len(folders) == len(ids)
    for case_id in ids:
        document = json.loads((run_dir / "artifacts" / artifact_key(case_id, "only") / "artifact.json").read_text())
        assert document["case_id"] == case_id
        written = run_dir / "artifacts" / artifact_key(case_id, "only") / "after" / "who.txt"
        assert written.read_text() == repr(case_id)
    # inspect reads each cell's own files back.
    shown = run_evalh(["inspect", str(run_dir), "--case", "", "--limit", "0"], env, tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "+ who.txt" in shown.stdout and "1 matching cell " in shown.stdout
