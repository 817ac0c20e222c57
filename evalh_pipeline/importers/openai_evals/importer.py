"""Turn the evals of an openai/evals registry file into evalh evals (eval.yaml, cases.jsonl,
import-report.md).

Each sample becomes a case: its ``input`` the chat messages the model is sent (a text prompt
is one system message, as openai/evals' ChatCompletionPrompt sends it: prompt/base.py:59-63,
115-125), its ``ideal`` the case's own evaluator (graders.py). Each model becomes an ``http``
system with the ``openai_chat`` preset, its endpoint ``${OPENAI_BASE_URL}`` (default OpenAI's)
and its key ``${OPENAI_API_KEY}``: expanded when the eval loads, never written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalh_pipeline.common.yaml_files import dump_yaml
from evalh_pipeline.importers.openai_evals import model_graded, multiple_choice
from evalh_pipeline.importers.openai_evals.graders import GRADERS, Grader
from evalh_pipeline.importers.openai_evals.registry import RegistryEval, read_registry, registry_root
from evalh_pipeline.config.schema import eval_key
from evalh_pipeline.importers.report import REPORT_NAME, BadSource, ImportReport
from evalh_pipeline.importers.writing import ImportedFiles

DEFAULT_MODEL = "gpt-4o-mini"
ENDPOINT = "${OPENAI_BASE_URL:-https://api.openai.com/v1}/chat/completions"
# The keys of an eval's own entry and of its class entry that map (others are reported).
_ALIAS_KEYS = {"id", "description", "metrics", "disclaimer"}
_ENTRY_KEYS = {"class", "args"}
_LFS_POINTER = b"version https://git-lfs.github.com/spec/"
_SKIPPED = "sample skipped"


def import_registry_file(path: Path, *, data: Path | None = None, models: list[str] | None = None,
                         only: str | None = None, grader_model: str | None = None) -> list[ImportedFiles]:
    """The evals of registry file ``path`` (only the one named ``only``), with samples read from
    ``data`` (default: the registry's ``data/`` folder). Raises :class:`BadSource` when one
    cannot be imported (an unsupported grader, a missing or unreadable samples file)."""
    evals = read_registry(path)
    if only is not None:
        evals = [e for e in evals if e.name == only]
        if not evals:
            names = ", ".join(e.name for e in read_registry(path))
            raise BadSource(str(path), None, "", f"no eval named {only!r} (defined: {names})")
    root = registry_root(path)
    data_dir = data if data is not None else (root / "data" if root is not None else None)
    models = models or [DEFAULT_MODEL]
    return [_import_eval(found, root, data_dir, models, grader_model or models[0]) for found in evals]


def _import_eval(found: RegistryEval, root: Path | None, data_dir: Path | None, models: list[str],
                 grader_model: str) -> ImportedFiles:
    file = str(found.file)
    report = ImportReport(f"openai/evals registry {file} ({found.name})")
    if found.grader == multiple_choice.CLASS:
        _report_keys(found, multiple_choice.ARGS, (), report)
        request = dict(multiple_choice.REQUEST)
        samples = multiple_choice.rows_path(found, data_dir)
        cases = multiple_choice.cases(found, _read_jsonl(samples), report)
    elif found.grader == model_graded.CLASS:
        _report_keys(found, model_graded.ARGS, (), report)
        mapping = model_graded.model_graded(found, root, grader_model, report)
        request = mapping.request
        samples = _samples_path(found, data_dir)
        cases = _model_graded_cases(found, mapping, samples, report)
    else:
        grader = GRADERS.get(found.grader)
        if grader is None:
            supported = ", ".join([*GRADERS, model_graded.CLASS, multiple_choice.CLASS])
            raise BadSource(file, found.line("class"), f"{found.entry_key}.class",
                            f"grader {found.grader!r} has no evalh mapping (supported: {supported})")
        _report_keys(found, grader.args, grader.metrics, report)
        request = grader.request(found.args)
        few_shot = _few_shot(found, data_dir, report)
        samples = _samples_path(found, data_dir)
        cases = _cases(found, grader, samples, few_shot, report)
    if not cases:
        skipped = [item for item in report.findings if item.instead == _SKIPPED]
        raise BadSource(str(samples), None, "",
                        f"no sample could be imported ({len(skipped)} skipped; the first: {skipped[0].text()})" if skipped
                        else "the samples file holds no sample")
    config = _eval_config(found, request, models)
    header = (f"# Imported by `evalh import openai-evals` from {file}: eval {found.name!r}\n"
              f"# ({found.entry_key}, {found.grader}). See import-report.md for what does not map.\n")
    files: dict[str, str | bytes] = {
        "eval.yaml": header + dump_yaml(config),
        "cases.jsonl": "".join(json.dumps(case, ensure_ascii=False) + "\n" for case in cases),
        REPORT_NAME: report.markdown(found.name, [f"- {len(cases)} case(s)"]),
    }
    return ImportedFiles(found.name, files, len(cases), report)


def _report_keys(found: RegistryEval, known_args: frozenset[str], metrics: tuple[str, ...],
                 report: ImportReport) -> None:
    file = str(found.file)
    for key in found.alias:
        if key not in _ALIAS_KEYS:
            report.add(file, found.line(key, in_entry=False), f"{found.name}.{key}", "not read by the import", "ignored",
                       "note")
    for metric in found.alias.get("metrics") or []:
        if metric != "accuracy":
            report.add(file, found.line("metrics", in_entry=False), f"{found.name}.metrics",
                       f"{metric!r} is not computed", "the summary's pass rate is openai/evals' accuracy", "note")
    for key in found.entry:
        if key not in _ENTRY_KEYS:
            report.add(file, found.line(key), f"{found.entry_key}.{key}", "not read by the import", "ignored", "note")
    for key in found.args:
        if key not in known_args:
            report.add(file, found.arg_line(key), f"{found.entry_key}.args.{key}",
                       f"not read by the mapping of {found.grader}", "ignored")
    for metric in metrics:
        instead = ("the summary gives the pass rate's 95% Wilson interval instead" if metric == "boostrap_std"
                   else "only accuracy (the pass rate) is computed")
        report.add(file, found.line("class"), f"{found.entry_key}.class",
                   f"{found.grader} also reports {metric!r}, which is not computed", instead, "note")


def _resolve(found: RegistryEval, data_dir: Path | None, key: str) -> Path:
    """An args path (``samples_jsonl``, ``few_shot_jsonl``), as openai/evals resolves it
    (eval.py:161-165): a file that exists as given, else under the registry's data folder."""
    value = found.args.get(key)
    if not isinstance(value, str) or not value:
        raise BadSource(str(found.file), found.arg_line(key) or found.line("args"), f"{found.entry_key}.args.{key}",
                        "required: the path of a samples file under the registry's data/ folder")
    given = Path(value)
    if given.is_absolute() or data_dir is None:
        candidate = given if given.is_absolute() else found.file.parent / given
    else:
        candidate = data_dir / given
    if not candidate.exists():
        where = "" if data_dir is None else f" (data folder: {data_dir}; another one: --data DIR)"
        raise BadSource(str(found.file), found.arg_line(key), f"{found.entry_key}.args.{key}",
                        f"file not found: {candidate}{where}")
    return candidate


def _samples_path(found: RegistryEval, data_dir: Path | None) -> Path:
    return _resolve(found, data_dir, "samples_jsonl")


def _read_jsonl(path: Path) -> list[tuple[str, int, Any]]:
    """(file, line, value) of every non-blank line of a JSONL file or of a folder of them
    (openai/evals' data.get_jsonl reads a folder's ``*.jsonl``)."""
    files = sorted(p for p in path.iterdir() if p.name.endswith(".jsonl")) if path.is_dir() else [path]
    rows: list[tuple[str, int, Any]] = []
    for file in files:
        try:
            raw = file.read_bytes()
        except OSError as exc:
            raise BadSource(str(file), None, "", f"cannot read file: {exc.strerror or exc}") from None
        if raw.startswith(_LFS_POINTER):
            raise BadSource(str(file), 1, "", "a Git LFS pointer, not the samples: fetch them first "
                                              "(`git lfs pull` in the openai/evals checkout)")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BadSource(str(file), raw[:exc.start].count(b"\n") + 1, "", "not UTF-8 text") from None
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rows.append((str(file), number, json.loads(line)))
            except (json.JSONDecodeError, RecursionError) as exc:
                raise BadSource(str(file), number, "", f"invalid JSON: {getattr(exc, 'msg', exc)}") from None
    return rows


def _few_shot(found: RegistryEval, data_dir: Path | None, report: ImportReport) -> list[Any]:
    """The few-shot messages Match puts before each sample's last message (match.py:27-29, 38-44)."""
    count = found.args.get("num_few_shot", 0)
    if not isinstance(count, int) or count <= 0 or "num_few_shot" not in GRADERS[found.grader].args:
        return []
    shots = []
    for file, number, row in _read_jsonl(_resolve(found, data_dir, "few_shot_jsonl"))[:count]:
        sample = row.get("sample") if isinstance(row, dict) else None
        if not isinstance(sample, list) or not all(isinstance(m, dict) for m in sample):
            raise BadSource(file, number, "sample", "a few-shot row needs `sample`: a list of chat messages")
        shots += sample
    return shots


def _messages(value: Any) -> list[dict[str, Any]] | None:
    """The chat messages openai/evals sends for a sample's ``input`` (None: not a prompt it maps)."""
    if isinstance(value, str):
        return [{"role": "system", "content": value}]
    if isinstance(value, list) and value and all(isinstance(m, dict) for m in value):
        return value
    return None


def _model_graded_cases(found: RegistryEval, mapping: model_graded.ModelGraded, samples: Path,
                        report: ImportReport) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    spec_args = found.args.get("modelgraded_spec_args") or {}
    for index, (file, number, row) in enumerate(_read_jsonl(samples)):
        if not isinstance(row, dict):
            report.add(file, number, "", "a sample must be a JSON object", _SKIPPED)
            continue
        messages = _messages(row.get(mapping.prompt_key))
        if messages is None:
            report.add(file, number, mapping.prompt_key, "neither a text prompt nor a list of chat messages",
                       _SKIPPED)
            continue
        if mapping.completion_key in row:
            report.add(file, number, mapping.completion_key, "the sample brings its own completion, which openai/evals "
                                                             "grades without asking the model", _SKIPPED)
            continue
        metadata = {key: value for key, value in row.items() if key not in (mapping.prompt_key, "ideal")}
        case: dict[str, Any] = {"id": f"sample-{index}", "input": {"messages": messages},
                                "metadata": {**metadata, "samples_line": number}}
        if "ideal" in row:
            case["expected"] = {"facts": {"ideal": row["ideal"]}}
        case["evaluators"] = [model_graded.case_evaluator(mapping, row, spec_args)]
        cases.append(case)
    return cases


def _cases(found: RegistryEval, grader: Grader, samples: Path, few_shot: list[Any],
           report: ImportReport) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    for index, (file, number, row) in enumerate(_read_jsonl(samples)):
        if not isinstance(row, dict):
            report.add(file, number, "", "a sample must be a JSON object", _SKIPPED)
            continue
        messages = _messages(row.get("input"))
        if messages is None:
            report.add(file, number, "input", "neither a text prompt nor a list of chat messages "
                                              "(token lists are not sent by the chat preset)", _SKIPPED)
            continue
        if few_shot:
            # match.py:40-44: the few-shot messages go before the sample's last message.
            messages = [*messages[:-1], *few_shot, *messages[-1:]]
        ideal = row.get("ideal")
        ideals = [ideal] if isinstance(ideal, str) else ideal
        if not isinstance(ideals, list) or not all(isinstance(i, str) for i in ideals):
            report.add(file, number, "ideal", "must be a string or a list of strings (openai/evals asserts it)",
                       _SKIPPED)
            continue
        if not ideals and grader.empty_ideal is not None:
            report.add(file, number, "ideal", f"empty: {grader.empty_ideal}", _SKIPPED)
            continue
        evaluator = {"name": grader.evaluator_name, **grader.evaluator(ideals, found.args)}
        metadata = {key: value for key, value in row.items() if key not in ("input", "ideal")}
        cases.append({"id": f"sample-{index}", "input": {"messages": messages},
                      "metadata": {**metadata, "samples_line": number},
                      "expected": {"facts": {"ideal": ideal}}, "evaluators": [evaluator]})
    return cases


def _eval_config(found: RegistryEval, request: dict[str, Any], models: list[str]) -> dict[str, Any]:
    eval_info: dict[str, Any] = {"name": eval_key(found.name)}
    if isinstance(found.alias.get("description"), str):
        eval_info["description"] = found.alias["description"]
    eval_info["tags"] = ["openai-evals"]
    metadata: dict[str, Any] = {"imported_from": "openai/evals registry", "registry_eval": found.name,
                                "registry_id": found.entry_key, "grader": found.grader}
    if found.alias.get("metrics") is not None:
        metadata["metrics"] = found.alias["metrics"]
    if found.alias.get("disclaimer") is not None:
        metadata["disclaimer"] = found.alias["disclaimer"]
    systems = [{"name": model, "adapter": "http", "provider": "openai_chat", "model": model, "endpoint": ENDPOINT,
                "headers": {"Authorization": "Bearer ${OPENAI_API_KEY}"}, **request} for model in models]
    return {"schema_version": "1.0", "eval": eval_info, "metadata": metadata,
            "dataset": {"type": "jsonl", "path": "cases.jsonl"}, "systems": systems, "evaluators": []}
