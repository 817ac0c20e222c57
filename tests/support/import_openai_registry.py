"""Import the evals of an openai/evals registry folder and check each with `evalh run --dry-run`.

    python -m tests.support.import_openai_registry REGISTRY_DIR [LIMIT]

REGISTRY_DIR is openai/evals' ``evals/registry`` (``evals/*.yaml``, ``modelgraded/``,
``data/``). Its samples are Git LFS files in the repository: where a samples file is missing
or a pointer, the check writes a one-sample stand-in (a chat input and an ideal) in a scratch
data folder, so what is checked is the registry's definitions (class, args, modelgraded spec,
few-shot), not its data. Prints one line per eval of a class the import maps and the number
that imported with no error in the report and passed the dry run (at most LIMIT evals).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from click.testing import CliRunner

from evalh_pipeline.cli import main as evalh
from evalh_pipeline.importers.openai_evals import model_graded, multiple_choice
from evalh_pipeline.importers.openai_evals.graders import GRADERS
from evalh_pipeline.importers.openai_evals.importer import import_registry_file
from evalh_pipeline.importers.openai_evals.registry import RegistryEval, read_registry
from evalh_pipeline.importers.report import BadSource
from evalh_pipeline.importers.writing import write_tree

_LFS = b"version https://git-lfs.github.com/spec/"
STAND_IN = {"input": [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Say A."}],
            "ideal": "A"}
MAPPED = (*GRADERS, model_graded.CLASS, multiple_choice.CLASS)  # the classes the import maps
STAND_IN_QUESTION = {"question": "Which letter comes first?", "answers": ["A", "B", "C", "D"], "label": 0}


def _data_file(registry: Path, data: Path, relative: str, row: dict) -> None:
    """``relative`` under ``data``: the registry's own file when it holds samples, else a stand-in."""
    target = data / relative
    source = registry / "data" / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_file() and not source.read_bytes().startswith(_LFS):
        shutil.copyfile(source, target)
    elif not target.exists():
        target.write_text(json.dumps(row) + "\n")


def _data_keys(found: RegistryEval) -> dict[str, str]:
    """The entry's files under the registry's ``data/``, by the arg that names them."""
    if found.grader == multiple_choice.CLASS:
        return {"samples_jsonl": f"{found.entry_key}.jsonl"}
    return {key: value for key in ("samples_jsonl", "few_shot_jsonl")
            if isinstance(value := found.args.get(key), str) and value and not Path(value).is_absolute()}


def data_files(found: RegistryEval) -> list[str]:
    """The files under the registry's ``data/`` that the entry reads."""
    return list(_data_keys(found).values())


def _stage(registry: Path, data: Path, found: RegistryEval) -> None:
    for key, value in _data_keys(found).items():
        row = (STAND_IN_QUESTION if found.grader == multiple_choice.CLASS
               else {"sample": STAND_IN["input"]} if key == "few_shot_jsonl" else STAND_IN)
        _data_file(registry, data, value, row)


def check(registry: Path, found: RegistryEval, data: Path, out: Path) -> tuple[bool, str]:
    """(clean, one line) for one eval of the registry."""
    _stage(registry, data, found)
    try:
        (imported,) = import_registry_file(found.file, data=data, only=found.name)
        write_tree(out, imported.files)
    except BadSource as exc:
        return False, f"bad input: {exc}"
    errors = imported.report.errors
    ran = CliRunner().invoke(evalh, ["run", str(out / "eval.yaml"), "--dry-run"],
                             env={"OPENAI_API_KEY": "sk-dry-run"}, catch_exceptions=False)
    dry = "dry run ok" if ran.exit_code == 0 else f"dry run failed: {(ran.output.strip().splitlines() or [''])[-1]}"
    first = f" (first: {errors[0].text()})" if errors else ""
    return not errors and ran.exit_code == 0, f"{imported.report.counts()}; {dry}{first}"


def main(argv: list[str]) -> int:
    registry = Path(argv[0])
    limit = int(argv[1]) if len(argv) > 1 else None
    scratch = Path(tempfile.mkdtemp(prefix="oai-registry-"))
    evals = [e for f in sorted((registry / "evals").glob("*.yaml")) for e in _read(f) if e.grader in MAPPED]
    clean = 0
    for found in evals[:limit]:
        ok, line = check(registry, found, scratch / "data", scratch / "out" / found.name)
        clean += ok
        print(f"{'OK ' if ok else '-- '} {found.file.name} {found.name}: {line}")
    print(f"{clean} of {len(evals[:limit])} registry evals imported with no error and passed evalh run --dry-run "
          f"({len(evals)} use a class the import maps)")
    return 0


def _read(path: Path) -> list[RegistryEval]:
    try:
        return read_registry(path)
    except BadSource:
        return []


if __name__ == "__main__":
    os.environ.setdefault("OPENAI_API_KEY", "sk-dry-run")
    sys.exit(main(sys.argv[1:]))
