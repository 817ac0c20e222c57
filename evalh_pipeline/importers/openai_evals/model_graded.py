"""openai/evals' ModelBasedClassify (evals/elsuite/modelgraded/classify.py at commit 4bfc1f58)
mapped to the ``openai_model_graded`` evaluator: the registry's modelgraded spec and the
eval's args become each case's evaluator config, the sample its values."""

from __future__ import annotations

import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalh_pipeline.config.errors import ConfigError
from evalh_pipeline.config.yaml_source import load_yaml
from evalh_pipeline.importers.openai_evals.registry import RegistryEval
from evalh_pipeline.importers.report import BadSource, ImportReport

CLASS = "evals.elsuite.modelgraded.classify:ModelBasedClassify"
# The args this mapping reads (classify.py:14-26; samples_jsonl: eval.py).
ARGS = frozenset({"samples_jsonl", "modelgraded_spec", "modelgraded_spec_args", "sample_kwargs", "eval_kwargs",
                  "multicomp_n", "eval_type", "match_fn", "metaeval"})
_MATCH_FNS = ("include", "exact", "endswith", "starts_or_endswith")
_EVAL_TYPES = ("classify", "classify_cot", "cot_classify", "cot_classify_jp")


@dataclass(frozen=True)
class ModelGraded:
    """What every case of one eval shares: its evaluator config but the sample's values, the
    sample key the model is asked (the spec's input_outputs), and the request fields."""

    config: dict[str, Any]
    prompt_key: str
    completion_key: str
    request: dict[str, Any]


def _specs(root: Path) -> dict[str, tuple[Any, Path]]:
    """Every spec of ``<registry>/modelgraded/*.yaml`` by name, with its file."""
    specs: dict[str, tuple[Any, Path]] = {}
    for path in sorted((root / "modelgraded").glob("*.yaml")):
        try:
            doc = load_yaml(path, yaml11_booleans=True)
        except ConfigError as exc:
            issue = exc.issues[0]
            raise BadSource(str(path), issue.line, issue.key, issue.message) from None
        if isinstance(doc.data, dict):
            specs.update({str(name): (spec, path) for name, spec in doc.data.items()})
    return specs


def model_graded(found: RegistryEval, root: Path | None, grader_model: str, report: ImportReport) -> ModelGraded:
    """The mapping of one ModelBasedClassify eval; :class:`BadSource` for what openai/evals
    itself refuses or what this mapping cannot reproduce."""
    file, args = str(found.file), found.args

    def bad(key: str, message: str) -> BadSource:
        return BadSource(file, found.arg_line(key) or found.line("args"), f"{found.entry_key}.args.{key}", message)

    name = args.get("modelgraded_spec")
    if not isinstance(name, str):
        raise bad("modelgraded_spec", "required: the name of a spec in the registry's modelgraded/ folder")
    if root is None:
        raise bad("modelgraded_spec", "the registry's modelgraded/ folder is not known: import a file of "
                                      "<registry>/evals/")
    specs = _specs(root)
    if name not in specs or not isinstance(specs[name][0], dict):
        raise bad("modelgraded_spec", f"no spec {name!r} in {root / 'modelgraded'}")
    spec, spec_path = specs[name]
    if args.get("multicomp_n", 1) != 1:
        raise bad("multicomp_n", "several completions per sample (multicomp_n) are not imported")
    inputs = spec.get("input_outputs")
    if not isinstance(inputs, dict) or len(inputs) != 1:
        raise BadSource(str(spec_path), None, f"{name}.input_outputs",
                        "only a spec with one prompt and its completion is imported")
    ((prompt_key, completion_key),) = inputs.items()
    choices = _choice_strings(spec.get("choice_strings"), str(spec_path), name)
    scores = spec.get("choice_scores")
    if scores == "from_strings":
        scores = {choice: float(choice) for choice in choices}  # classify_utils.py:97-98
    eval_type = args.get("eval_type")
    parse_type = spec.get("eval_type") or eval_type  # classify_utils.py:71
    if not isinstance(parse_type, str):
        raise bad("eval_type", "neither the eval nor its spec sets eval_type: openai/evals cannot parse a choice")
    if eval_type is not None and eval_type not in _EVAL_TYPES:
        raise bad("eval_type", f"unknown eval_type {eval_type!r} (known: {', '.join(_EVAL_TYPES)})")
    match_fn = args.get("match_fn") or "starts_or_endswith"
    if match_fn not in _MATCH_FNS:
        raise bad("match_fn", f"unknown match_fn {match_fn!r} (known: {', '.join(_MATCH_FNS)})")
    if args.get("metaeval"):
        report.add(file, found.arg_line("metaeval"), f"{found.entry_key}.args.metaeval",
                   "the metascore (agreement with each sample's `choice`) is not computed",
                   "the samples' `choice` is kept in their metadata", "note")
    eval_kwargs = {"max_tokens": 1024, **(args.get("eval_kwargs") or {})}
    sample_kwargs = {"max_tokens": 1024, **(args.get("sample_kwargs") or {})}
    report.add(file, found.line("class"), f"{found.entry_key}.class",
               "openai/evals reports the mean score and the count of each choice",
               "here a case passes when its choice has the highest score (a spec without choice_scores: when a "
               f"choice was parsed); graded by {grader_model} (openai/evals: the last completion function)", "note")
    config = {"prompt": spec.get("prompt"), "choice_strings": choices, "choice_scores": scores,
              "eval_type": eval_type, "parse_type": parse_type, "match_fn": match_fn,
              "completion_key": completion_key, "model": grader_model,
              "max_tokens": eval_kwargs.get("max_tokens", 1024)}
    # PromptFn's call (elsuite/utils.py:177-186) with the sample kwargs (classify.py:33-34, 75-78).
    request = {"max_tokens": sample_kwargs.get("max_tokens", 1024), "temperature": sample_kwargs.get("temperature", 0),
               "top_p": 1, "frequency_penalty": 0, "presence_penalty": 0, "n": 1}
    return ModelGraded(config, str(prompt_key), str(completion_key), request)


def _choice_strings(value: Any, file: str, name: str) -> list[str]:
    """classify_utils.py:36-49 (with n = 1): a string's characters, or the list; none may hold punctuation."""
    if value == "from_n":
        value = ["1"]
    elif value == "from_n_abc":
        value = ["a"]
    elif value == "from_n_ABC":
        value = ["A"]
    choices = list(value) if isinstance(value, (str, list)) else []
    if not choices or not all(isinstance(c, str) for c in choices):
        raise BadSource(file, None, f"{name}.choice_strings", "must be a string of choices or a list of strings")
    if any(ch in string.punctuation for c in choices for ch in c):
        raise BadSource(file, None, f"{name}.choice_strings", "a choice holds punctuation (openai/evals refuses it)")
    return choices


def scrub(value: Any) -> Any:
    """openai/evals' ``scrub_formatting_from_prompt`` (elsuite/utils.py:91-100): braces doubled."""
    if isinstance(value, list) and all(isinstance(m, dict) for m in value):
        return [{**m, "content": m["content"].replace("{", "{{").replace("}", "}}")} if "content" in m else m
                for m in value]
    return value.replace("{", "{{").replace("}", "}}") if isinstance(value, str) else value


def case_evaluator(mapping: ModelGraded, row: dict[str, Any], spec_args: dict[str, Any]) -> dict[str, Any]:
    """The case's own evaluator: the shared config with the sample's values (classify.py:56-59,
    86-93: the scrubbed prompt key, the sample's fields, the spec args)."""
    values = {**row, mapping.prompt_key: scrub(row[mapping.prompt_key]), **spec_args}
    return {"name": "model_graded", "type": "openai_model_graded", "config": {**mapping.config, "values": values}}
