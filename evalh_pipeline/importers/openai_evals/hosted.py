"""OpenAI's hosted Evals product (read-only since 2026-10-31, shut down 2026-11-30): an
exported eval object, with its runs and their output items, as an evalh eval plus a
replayable baseline.

The shapes are the API reference's (https://platform.openai.com/docs/api-reference/evals,
the openai-python types ``Eval*``, ``RunCreateResponse``, ``OutputItemListResponse``):

- the eval: ``{"object": "eval", "name", "data_source_config": {"type": "custom",
  "schema": <item schema>}, "testing_criteria": [...]}``;
- a run: ``{"object": "eval.run", "id", "model", "data_source": {"type": "completions",
  "model", "input_messages": {"type": "template", "template": [...]}, "sampling_params",
  "source": {"type": "file_content", "content": [{"item": {...}}]}}}``;
- an output item: ``{"object": "eval.run.output_item", "run_id", "datasource_item_id",
  "datasource_item", "sample": {"output": [{"role", "content"}], "usage", "error"},
  "results": [{"name", "passed", "score"}]}``.

The file holds the eval object itself (with ``runs`` and ``output_items`` beside its own keys,
or runs holding their ``output_items``), or ``{"eval": ..., "runs": [...], "output_items":
[...]}``. Each datasource item becomes a case: its fields under ``input.item``, the run's
message template rendered with them as ``input.messages`` (``{{item.x}}`` is fixed per item,
so it is rendered once here). A ``string_check`` whose ``input`` is ``{{sample.output_text}}``
becomes the case's own evaluator with the reference rendered from its item; a ``python``
grader becomes ``openai_python_grader``, a ``score_model`` ``openai_score_model`` and a
``label_model`` (approximated) ``openai_model_graded``, each with the case's item; every other
criterion is reported. Each run's model becomes an ``http`` system (``openai_chat``); its output
items become ``baseline.yaml``, which replays them (``replay`` system) and also passes each
criterion as OpenAI recorded it (``extra.openai_results``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, cast

from evalh_pipeline.common.yaml_files import dump_yaml
from evalh_pipeline.config.schema import eval_key
from evalh_pipeline.evaluators.openai_score_model import SAMPLING as SCORE_SAMPLING
from evalh_pipeline.evaluators.openai_score_model import TEMPLATE, render_grader_template
from evalh_pipeline.importers.openai_evals.importer import DEFAULT_MODEL, ENDPOINT
from evalh_pipeline.importers.report import REPORT_NAME, BadSource, ImportReport
from evalh_pipeline.importers.writing import ImportedFiles

BASELINE_EVAL = "baseline.yaml"
BASELINE_CASES = "baseline-cases.yaml"
_OUTPUT_TEXT = re.compile(r"\s*\{\{\s*sample\.output_text\s*\}\}\s*")
_UNSAFE = re.compile(r"[|,\[\]/\\\x00-\x1f]")
_SAMPLING = {"temperature": "temperature", "top_p": "top_p", "seed": "seed",
             "max_completion_tokens": "max_tokens"}


def is_hosted_export(path: Path) -> bool:
    """True when ``path`` is a JSON file holding a hosted eval object (``object: "eval"``),
    bare or under ``eval`` (the registry importer reads everything else)."""
    try:
        head = path.read_bytes()[:4096].lstrip()
    except OSError:
        return False
    if not head.startswith(b"{"):
        return False
    data = _load(path)
    return isinstance(data, dict) and (data.get("object") == "eval" or (
        isinstance(data.get("eval"), dict) and data["eval"].get("object") == "eval"))


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None


def string_check(operation: str, reference: str) -> dict[str, Any] | None:
    """The evaluator with OpenAI's ``string_check`` verdict on the answer for one rendered
    reference (None: an operation it does not have). The graders guide
    (https://platform.openai.com/docs/guides/graders, "String check grader"): ``eq`` passes when
    the input equals the reference, ``ne`` when it does not (both case-sensitive), ``like`` when
    the input contains the reference (case-sensitive), ``ilike`` the same ignoring case."""
    literal = re.escape(reference)
    if operation == "eq":
        return {"type": "regex_match", "config": {"pattern": literal, "match": "fullmatch"}}
    if operation == "ne":
        return {"type": "regex_match", "config": {"pattern": literal, "match": "fullmatch", "must_match": False}}
    if operation in ("like", "ilike"):
        return {"type": "contains_text", "config": {"any_of": [reference], "all_of": [], "none_of": [],
                                                    "case_sensitive": operation == "like"}}
    return None


def import_hosted_export(path: Path, *, models: list[str] | None = None) -> ImportedFiles:
    """The eval (and its baseline) of the hosted export at ``path``; :class:`BadSource` when it
    cannot be imported (not an export, no item)."""
    file = path.name
    data = _load(path)
    if not isinstance(data, dict):
        raise BadSource(file, None, "", "not a hosted OpenAI Evals export (a JSON object with `object: \"eval\"`)")
    the_eval = data["eval"] if isinstance(data.get("eval"), dict) else data
    if the_eval.get("object") != "eval":
        raise BadSource(file, None, "object", "must be \"eval\" (an eval object of OpenAI's Evals API)")
    report = ImportReport(f"{file} (OpenAI's hosted Evals, eval {the_eval.get('id')})")
    runs = [r for r in _list(data.get("runs") if "runs" in data else the_eval.get("runs")) if isinstance(r, dict)]
    items_out = _list(data.get("output_items") if "output_items" in data else the_eval.get("output_items"))
    items_out += [o for run in runs for o in _list(run.get("output_items"))]
    output_items = [o for o in items_out if isinstance(o, dict)]

    items = _items(runs, output_items)
    if not items:
        raise BadSource(file, None, "runs", "no datasource item found (a run's data_source.source.content, or its "
                                            "output_items' datasource_item): nothing to import")
    template = _template(runs, file, report)
    criteria = _criteria(the_eval.get("testing_criteria"), file, report)

    cases = []
    for item_id, item in items.items():
        case: dict[str, Any] = {"id": f"item-{item_id}", "input": {"item": item}, "metadata": {"datasource_item_id": item_id}}
        messages = _render_messages(template, item) if template is not None else None
        if messages is not None:
            case["input"]["messages"] = messages
        evaluators = []
        for criterion in criteria:
            evaluators.append({"name": criterion["evaluator"], **criterion["mapping"](item)})
        if evaluators:
            case["evaluators"] = evaluators
        cases.append(case)
    if template is None:
        report.add(file, None, "runs[].data_source.input_messages", "no message template",
                   "cases carry their item only, and the systems need a template to send")

    run_models = _models(runs, report, file)
    systems_models = list(dict.fromkeys([*(models or []), *run_models.values()])) or [DEFAULT_MODEL]
    sampling = _sampling(runs, file, report)
    name = eval_key(str(the_eval.get("name") or the_eval.get("id") or path.stem))
    config = {
        "schema_version": "1.0",
        "eval": {"name": name, "description": f"Imported from OpenAI's hosted Evals export {file}",
                 "tags": ["openai-evals"]},
        "metadata": {"imported_from": "OpenAI Evals (hosted)", "eval_id": the_eval.get("id"),
                     "item_schema": (the_eval.get("data_source_config") or {}).get("schema")
                     or (the_eval.get("data_source_config") or {}).get("item_schema")},
        "dataset": {"type": "jsonl", "path": "cases.jsonl"},
        "systems": [{"name": model, "adapter": "http", "provider": "openai_chat", "model": model, "endpoint": ENDPOINT,
                     "headers": {"Authorization": "Bearer ${OPENAI_API_KEY}"}, **sampling}
                    for model in systems_models],
        "evaluators": [],
    }
    header = (f"# Imported by `evalh import openai-evals` from {file} (OpenAI's hosted Evals).\n"
              "# See import-report.md for what does not map.\n")
    files = {"eval.yaml": header + dump_yaml(config),
             "cases.jsonl": "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases)}
    baseline = _baseline(cases, output_items, run_models, criteria, the_eval, file, report)
    if baseline is not None:
        baseline_eval, baseline_cases = baseline
        files[BASELINE_EVAL] = ("# OpenAI's recorded outputs, replayed: run it, promote the run, then run eval.yaml "
                                "and drift/compare.\n" + dump_yaml({**config, **baseline_eval}))
        files[BASELINE_CASES] = dump_yaml({"schema_version": "1.0", "dataset": {"name": name},
                                           "cases": baseline_cases})
    files[REPORT_NAME] = report.markdown(name, [f"- {len(cases)} case(s)"])
    return ImportedFiles(name, dict(files), len(cases), report)


def _list(value: Any) -> list[Any]:
    # A list, or an API page ({"object": "list", "data": [...]}).
    if isinstance(value, dict) and isinstance(value.get("data"), list):
        return list(value["data"])
    return list(value) if isinstance(value, list) else []


def _items(runs: list[dict[str, Any]], output_items: list[dict[str, Any]]) -> dict[int | str, dict[str, Any]]:
    """Datasource items by id: a run's file_content rows (ids are their positions), then the
    output items' own (``datasource_item_id``)."""
    items: dict[int | str, dict[str, Any]] = {}
    for run in runs:
        source = ((run.get("data_source") or {}).get("source") or {})
        if source.get("type") == "file_content":
            for index, row in enumerate(_list(source.get("content"))):
                if isinstance(row, dict) and isinstance(row.get("item"), dict):
                    items.setdefault(index, row["item"])
    for output in output_items:
        item_id = output.get("datasource_item_id")
        if isinstance(item_id, (int, str)) and isinstance(output.get("datasource_item"), dict):
            items.setdefault(item_id, output["datasource_item"])
    return items


def _template(runs: list[dict[str, Any]], file: str, report: ImportReport) -> list[dict[str, Any]] | None:
    """The first run's message template (the cases carry one; a run with another is reported)."""
    found: list[dict[str, Any]] | None = None
    for number, run in enumerate(runs):
        source = (run.get("data_source") or {}).get("input_messages") or {}
        if source.get("type") == "template" and isinstance(source.get("template"), list):
            template = [m for m in source["template"] if isinstance(m, dict)]
            if found is None:
                found = template
            elif template != found:
                report.add(file, None, f"runs[{number}].data_source.input_messages",
                           "another template than the first run's", "the cases carry the first run's messages")
        elif source:
            report.add(file, None, f"runs[{number}].data_source.input_messages",
                       f"type {source.get('type')!r} is not a message template", "not used")
    return found


def _render_messages(template: list[dict[str, Any]], item: dict[str, Any]) -> list[dict[str, Any]]:
    messages = []
    for message in template:
        content = message.get("content")
        if isinstance(content, dict):  # {"type": "input_text", "text": ...}
            content = content.get("text")
        messages.append({"role": message.get("role", "user"), "content": render_grader_template(str(content or ""), item)})
    return messages


def _criteria(value: Any, file: str, report: ImportReport) -> list[dict[str, Any]]:
    """The criteria that map to case evaluators: ``evaluator`` name, ``mapping`` (item ->
    evaluator) and ``replayed`` (judged again in the baseline: no model call). The others are
    reported (and passed in the baseline as OpenAI recorded them)."""
    mapped: list[dict[str, Any]] = []
    for number, criterion in enumerate(value if isinstance(value, list) else []):
        key = f"testing_criteria[{number}]"
        if not isinstance(criterion, dict):
            report.add(file, None, key, "not an object", "ignored")
            continue
        kind = criterion.get("type")
        if kind == "string_check":
            operation = criterion.get("operation")
            source = str(criterion.get("input", ""))
            reference = str(criterion.get("reference", ""))
            if string_check(str(operation), "") is None:
                report.add(file, None, f"{key}.operation", f"{operation!r} is not eq, ne, like or ilike", "not imported")
            elif not _OUTPUT_TEXT.fullmatch(source):
                report.add(file, None, f"{key}.input", f"{source!r} is not {{{{sample.output_text}}}}",
                           "only the model's answer is checked here; criterion not imported")
            elif "{{" in TEMPLATE.sub("", reference) or any(
                    m.group(1).split(".")[0] != "item" for m in TEMPLATE.finditer(reference)):
                report.add(file, None, f"{key}.reference", f"{reference!r} uses more than {{{{item.<field>}}}}",
                           "criterion not imported")
            else:
                mapped.append({"evaluator": _evaluator_name(criterion, number), "replayed": True,
                               "mapping": lambda item, op=str(operation), ref=reference: string_check(
                                   op, render_grader_template(ref, item))})
            continue
        if kind == "python":
            code, threshold = criterion.get("source"), criterion.get("pass_threshold")
            if isinstance(code, str) and code.strip() and isinstance(threshold, (int, float)) \
                    and not isinstance(threshold, bool):
                mapped.append({"evaluator": _evaluator_name(criterion, number), "replayed": True,
                               "mapping": lambda item, src=code, limit=float(threshold): {
                                   "type": "openai_python_grader",
                                   "config": {"source": src, "item": item, "pass_threshold": limit}}})
                report.add(file, None, f"{key} ({criterion.get('name')!r}, python)",
                           "runs in a child process of this Python, not OpenAI's grader image",
                           "a package the grader imports must be installed here", "note")
                continue
            report.add(file, None, f"{key} ({criterion.get('name')!r}, python)",
                       "needs source (text) and pass_threshold (a number)",
                       "not in eval.yaml; baseline.yaml passes it as OpenAI recorded it")
            continue
        if kind == "score_model":
            mapping = _score_model(criterion, key, file, report)
            if mapping is not None:
                mapped.append({"evaluator": _evaluator_name(criterion, number), "replayed": False,
                               "mapping": mapping})
            continue
        if kind == "label_model":
            mapping = _label_model(criterion, key, file, report)
            if mapping is not None:
                mapped.append({"evaluator": _evaluator_name(criterion, number), "replayed": False,
                               "mapping": mapping})
                continue
        why = {
            "text_similarity": _text_similarity_why(criterion.get("evaluation_metric")),
            # The graders guide: graders are nested and combined with multigraders in
            # reinforcement fine-tuning; an eval's testing_criteria do not list `multi`.
            "multi": "a multigrader (a calculate_output formula over other graders' scores) is a reinforcement "
                     "fine-tuning grader, not one of an eval's testing_criteria (label_model, string_check, "
                     "text_similarity, python, score_model); it is not translated",
        }.get(str(kind), f"grader type {kind!r} is not known to the import")
        report.add(file, None, f"{key} ({criterion.get('name')!r}, {kind})", why,
                   "not in eval.yaml; baseline.yaml passes it as OpenAI recorded it")
    return mapped


# OpenAI's graders guide (https://platform.openai.com/docs/guides/graders, "Text similarity
# graders") names each metric and, for two of them, the tool: fuzzy_match "using rapidfuzz",
# cosine "between embedded input and reference, using text-embedding-3-large"; the others
# (bleu, gleu, meteor, rouge_1..rouge_5, rouge_l) are named only. Neither says the function,
# tokenization, smoothing or F-measure, so no evaluator here is known to give OpenAI's score.
TEXT_SIMILARITY_METRICS = {
    "fuzzy_match": "OpenAI's guide names rapidfuzz but not which ratio nor its scale",
    "bleu": "OpenAI's guide names BLEU but not its tokenization, n-gram weights or smoothing",
    "gleu": "OpenAI's guide names Google BLEU but not its tokenization or n-gram range",
    "meteor": "OpenAI's guide names METEOR but not its stemmer, synonyms (WordNet) or parameters",
    "cosine": "cosine similarity of text-embedding-3-large embeddings needs OpenAI's embedding model",
    **{f"rouge_{n}": f"OpenAI's guide names ROUGE-{n.upper()} but not whether precision, recall or F-measure, "
                     "nor its tokenizer or stemming" for n in ("1", "2", "3", "4", "5", "l")},
}


def _text_similarity_why(metric: Any) -> str:
    detail = TEXT_SIMILARITY_METRICS.get(str(metric))
    if detail is None:
        return f"evaluation_metric {metric!r} is not one of OpenAI's ({', '.join(TEXT_SIMILARITY_METRICS)})"
    return f"a {metric} score against pass_threshold is not computed here: {detail}"


def _label_model(criterion: dict[str, Any], key: str, file: str,
                 report: ImportReport) -> Callable[[dict[str, Any]], dict[str, Any]] | None:
    """A ``label_model`` as the ``openai_model_graded`` evaluator (an approximation, reported):
    the grader's messages with the item rendered in and the answer as ``{completion}``, its
    labels as the choices, a passing label scoring 1 and the others 0 (a pass: the top score).
    OpenAI constrains the grader's reply to the labels; here the reply is asked for in text
    (openai/evals' ``classify`` instructions) and parsed."""
    labels, passing = criterion.get("labels"), criterion.get("passing_labels")
    messages, model = criterion.get("input"), criterion.get("model")
    problem = None
    if not (isinstance(labels, list) and labels and all(isinstance(x, str) and x for x in labels)):
        problem = "labels must be a list of texts"
    elif not (isinstance(passing, list) and passing and set(passing) <= set(labels) and set(passing) != set(labels)):
        problem = "passing_labels must be some, not all, of the labels"
    elif not (isinstance(model, str) and model):
        problem = "model is missing"
    elif not (isinstance(messages, list) and messages and all(isinstance(m, dict) for m in messages)):
        problem = "input must be a list of messages"
    else:
        texts = [_content_text(m.get("content")) for m in messages]
        refs = [m.group(1) for t in texts for m in TEMPLATE.finditer(t or "")]
        if any(t is None for t in texts):
            problem = "a message's content is neither text nor an input_text part"
        elif any(r != "sample.output_text" and r.split(".")[0] != "item" for r in refs):
            problem = "its messages use templates other than {{item.<field>}} and {{sample.output_text}}"
    if problem is not None:
        report.add(file, None, f"{key} ({criterion.get('name')!r}, label_model)", problem,
                   "not in eval.yaml; baseline.yaml passes it as OpenAI recorded it")
        return None
    report.add(file, None, f"{key} ({criterion.get('name')!r}, label_model)", "approximated by openai_model_graded",
               "OpenAI constrains the grader's reply to the labels, here it is asked to print one and the reply "
               "is parsed, so verdicts may differ; baseline.yaml passes it as OpenAI recorded it", "note")
    labels, passing, messages = cast(list[str], labels), cast(list[str], passing), cast(list[dict[str, Any]], messages)
    scores = {label: 1.0 if label in passing else 0.0 for label in labels}

    def evaluator(item: dict[str, Any]) -> dict[str, Any]:
        prompt = [{"role": str(m.get("role", "user")), "content": _format_prompt(_content_text(m.get("content")) or "", item)}
                  for m in messages]
        return {"type": "openai_model_graded",
                "config": {"prompt": prompt, "choice_strings": labels, "choice_scores": scores,
                           "eval_type": "classify", "parse_type": "classify", "match_fn": "exact", "model": model}}
    return evaluator


def _score_model(criterion: dict[str, Any], key: str, file: str,
                 report: ImportReport) -> Callable[[dict[str, Any]], dict[str, Any]] | None:
    """A ``score_model`` as the ``openai_score_model`` evaluator: its messages (templates over
    ``item`` and ``sample``, rendered per answer), ``range``, ``pass_threshold``, model and
    sampling parameters, with the case's item."""
    messages, model, threshold = criterion.get("input"), criterion.get("model"), criterion.get("pass_threshold")
    bounds = criterion.get("range", [0, 1])
    params = criterion.get("sampling_params") or {}
    problem = None
    if not (isinstance(model, str) and model):
        problem = "model is missing"
    elif not isinstance(threshold, (int, float)) or isinstance(threshold, bool):
        problem = "pass_threshold must be a number (without it OpenAI records a score, not a verdict)"
    elif not (isinstance(bounds, list) and len(bounds) == 2 and all(
            isinstance(b, (int, float)) and not isinstance(b, bool) for b in bounds) and bounds[0] < bounds[1]):
        problem = "range must be [low, high] with low < high"
    elif not (isinstance(messages, list) and messages and all(isinstance(m, dict) for m in messages)):
        problem = "input must be a list of messages"
    elif not isinstance(params, dict) or set(params) - set(SCORE_SAMPLING):
        problem = f"sampling_params may hold only {', '.join(SCORE_SAMPLING)}"
    else:
        texts = [_content_text(m.get("content")) for m in messages]
        refs = [m.group(1).split(".")[0] for t in texts for m in TEMPLATE.finditer(t or "")]
        if any(t is None for t in texts):
            problem = "a message's content is neither text nor an input_text part"
        elif any(r not in ("item", "sample") for r in refs):
            problem = "its messages use templates outside the item and sample namespaces"
    if problem is not None:
        report.add(file, None, f"{key} ({criterion.get('name')!r}, score_model)", problem,
                   "not in eval.yaml; baseline.yaml passes it as OpenAI recorded it")
        return None
    prompt = [{"role": str(m.get("role", "user")), "content": _content_text(m.get("content")) or ""}
              for m in cast(list[dict[str, Any]], messages)]
    config = {"input": prompt, "range": list(cast(list[float], bounds)), "pass_threshold": float(cast(float, threshold)),
              "model": model, **({"sampling_params": params} if params else {})}
    return lambda item: {"type": "openai_score_model", "config": {**config, "item": item}}


def _content_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, dict) and content.get("type") in ("input_text", "output_text"):
        return str(content.get("text", ""))
    return None


def _format_prompt(text: str, item: dict[str, Any]) -> str:
    """``text`` as a ``str.format`` template (openai_model_graded fills it): the item rendered
    in with its braces doubled, ``{{sample.output_text}}`` as ``{completion}``."""
    parts, last = [], 0
    for found in TEMPLATE.finditer(text):
        parts.append(text[last:found.start()].replace("{", "{{").replace("}", "}}"))
        value = "{completion}" if found.group(1) == "sample.output_text" else \
            render_grader_template(found.group(0), item).replace("{", "{{").replace("}", "}}")
        parts.append(value)
        last = found.end()
    parts.append(text[last:].replace("{", "{{").replace("}", "}}"))
    return "".join(parts)


def _evaluator_name(criterion: dict[str, Any], number: int) -> str:
    name = str(criterion.get("name") or f"{criterion.get('type')}_{number}")
    return _UNSAFE.sub("_", name).strip() or f"criterion_{number}"


def _models(runs: list[dict[str, Any]], report: ImportReport, file: str) -> dict[str, str]:
    """Run id -> the model it sampled (the run's, else its data source's)."""
    found: dict[str, str] = {}
    for number, run in enumerate(runs):
        model = run.get("model") or (run.get("data_source") or {}).get("model")
        if isinstance(model, str) and model:
            found[str(run.get("id"))] = model
        else:
            report.add(file, None, f"runs[{number}].model", "missing", "the run's outputs are left out of the baseline")
    return found


def _sampling(runs: list[dict[str, Any]], file: str, report: ImportReport) -> dict[str, Any]:
    """The first run's sampling parameters as request fields (a run with others is reported)."""
    found: dict[str, Any] | None = None
    for number, run in enumerate(runs):
        params = (run.get("data_source") or {}).get("sampling_params")
        if not isinstance(params, dict):
            continue
        for key in params:
            if key not in _SAMPLING:
                report.add(file, None, f"runs[{number}].data_source.sampling_params.{key}", "not sent", "ignored", "note")
        fields = {_SAMPLING[k]: v for k, v in params.items() if k in _SAMPLING and v is not None}
        if found is None:
            found = fields
        elif fields != found:
            report.add(file, None, f"runs[{number}].data_source.sampling_params",
                       "other values than the first run's", "every system sends the first run's")
    return found or {}


def _result_of(results: list[Any], criterion_name: str) -> dict[str, Any] | None:
    # A result is named after its criterion, or that name with a "-<id>" suffix.
    for result in results:
        if isinstance(result, dict) and (result.get("name") == criterion_name
                                         or str(result.get("name", "")).startswith(f"{criterion_name}-")):
            return result
    return None


def _baseline(cases: list[dict[str, Any]], output_items: list[dict[str, Any]], run_models: dict[str, str],
              mapped: list[dict[str, Any]], the_eval: dict[str, Any], file: str,
              report: ImportReport) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    if not output_items:
        return None
    replayed = {c["evaluator"] for c in mapped if c["replayed"]}
    by_id = {c["metadata"]["datasource_item_id"]: {
        **c, "evaluators": [e for e in c.get("evaluators", []) if e["name"] in replayed], "embedded_traces": {}}
        for c in cases}
    all_criteria = [c for c in (the_eval.get("testing_criteria") or []) if isinstance(c, dict)]
    recorded = {_evaluator_name(c, n): str(c.get("name") or "") for n, c in enumerate(all_criteria)}
    for number, output in enumerate(output_items):
        where = f"output_items[{number}]"
        model = run_models.get(str(output.get("run_id")))
        case = by_id.get(output.get("datasource_item_id"))
        if model is None or case is None:
            report.add(file, None, where, "its run or item is not imported", "left out of the baseline")
            continue
        if model in case["embedded_traces"]:
            report.add(file, None, where, f"a second output of {model!r} for this item (another run of the model)",
                       "left out of the baseline")
            continue
        results = _list(output.get("results"))
        scores = {}
        for evaluator, criterion_name in recorded.items():
            result = _result_of(results, criterion_name)
            if result is None and evaluator not in replayed:
                report.add(file, None, f"{where}.results", f"no result of {criterion_name!r}", "it fails in the baseline")
            scores[evaluator] = {"passed": bool(result and result.get("passed") is True),
                                 "score": (result or {}).get("score")}
        case["embedded_traces"][model] = _trace(output, case, model, scores)
    baseline_cases = [c for c in by_id.values() if c["embedded_traces"]]
    if not baseline_cases:
        return None
    systems = list(dict.fromkeys(m for c in baseline_cases for m in c["embedded_traces"]))
    evaluators = [{"name": evaluator, "type": "exact_match",
                   "config": {"field": f"extra.openai_results.{_key(evaluator)}.passed", "expected": True}}
                  for evaluator in recorded if evaluator not in replayed]
    return ({"dataset": {"type": "yaml", "path": BASELINE_CASES},
             "systems": [{"name": m, "adapter": "replay", "metadata": {"source": "openai-evals", "model": m}}
                         for m in systems],
             "evaluators": evaluators}, baseline_cases)


def _key(name: str) -> str:
    # A dotted field path's part: letters, digits and _ only.
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def _trace(output: dict[str, Any], case: dict[str, Any], model: str, scores: dict[str, Any]) -> dict[str, Any]:
    raw_sample = output.get("sample")
    sample: dict[str, Any] = raw_sample if isinstance(raw_sample, dict) else {}
    texts = [m.get("content") for m in _list(sample.get("output")) if isinstance(m, dict)]
    answer = "".join(t for t in texts if isinstance(t, str))
    raw_usage = sample.get("usage")
    usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
    metrics = {name: usage[key] for name, key in (("token_input", "prompt_tokens"), ("token_output", "completion_tokens"))
               if isinstance(usage.get(key), int) and usage[key] >= 0}
    created = output.get("created_at")
    when = datetime.fromtimestamp(created if isinstance(created, (int, float)) else 0, timezone.utc).isoformat()
    trace: dict[str, Any] = {
        "schema_version": "1.0", "run_id": str(output.get("run_id")), "case_id": case["id"], "variant_name": model,
        "started_at": when, "finished_at": when, "latency_ms": 0,
        "input": case["input"], "output": {"final_answer": answer},
        "messages": [*case["input"].get("messages", []), *[{"role": m.get("role", "assistant"), "content": m.get("content")}
                                                           for m in _list(sample.get("output")) if isinstance(m, dict)]],
        "metrics": metrics,
        "extra": {"source_platform": "openai-evals", "trace_id": output.get("id"), "model": sample.get("model") or model,
                  "openai_results": {_key(name): value for name, value in scores.items()}},
    }
    error = sample.get("error")
    if isinstance(error, dict) and (error.get("code") or error.get("message")) and not answer:
        trace["error"] = {"type": str(error.get("code") or "error"), "message": str(error.get("message") or "")}
    return trace

