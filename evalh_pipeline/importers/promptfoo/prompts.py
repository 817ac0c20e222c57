"""promptfoo ``prompts``: text or chat prompts, inline or ``file://``, as chat messages templates."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from evalh_pipeline.importers.promptfoo.source import Source
from evalh_pipeline.importers.promptfoo.templates import to_evalh

_ROLES = ("system", "user", "assistant")
# Prompt files promptfoo runs for their output (src/prompts/index.ts, processExecutableFile).
_EXECUTABLE = (".sh", ".bash", ".exe", ".bat", ".cmd", ".ps1", ".rb", ".pl")


@dataclass
class Prompt:
    """One prompt: a label and the chat messages it sends (contents are evalh templates)."""

    label: str
    messages: list[dict[str, str]]
    text: str  # the prompt as one evalh template (what ``{{prompt}}`` and ``echo`` give)
    source_id: str = ""  # its ``id``/``file://`` reference in the config (providers[].prompts may name it)
    index: int = 0  # its place among promptfoo's prompts (a results file's ``promptIdx``)


def _messages_of(text: str) -> list[dict[str, Any]] | None:
    """The messages of a chat prompt (a JSON or YAML list of ``{role, content}``), else None."""
    stripped = text.strip()
    if not stripped.startswith(("[", "- ")):
        return None
    try:
        data = json.loads(stripped) if stripped.startswith("[") else yaml.safe_load(stripped)
    except (ValueError, yaml.YAMLError):
        return None
    if isinstance(data, list) and data and all(
            isinstance(m, dict) and m.get("role") in _ROLES and isinstance(m.get("content"), str) for m in data):
        return data
    return None


def read_prompts(source: Source) -> list[Prompt]:
    """Every prompt of the config (``prompts:`` a string, a list, or a mapping of file to label)."""
    entries = source.doc.data.get("prompts")
    if entries is None:
        return [Prompt("prompt", [{"role": "user", "content": "{{ input.vars.prompt }}"}], "{{prompt}}")]
    if isinstance(entries, (str, dict)) and not (isinstance(entries, dict) and ("raw" in entries or "id" in entries)):
        entries = [entries] if isinstance(entries, str) else [{"id": k, "label": v} for k, v in entries.items()]
    if isinstance(entries, dict):
        entries = [entries]
    prompts: list[Prompt] = []
    for index, entry in enumerate(entries):
        place = source.at(("prompts", index))
        label = None
        if isinstance(entry, dict):
            label = entry.get("label")
            unknown = sorted(set(entry) - {"id", "label", "raw", "config"})
            if entry.get("config") or unknown:
                source.note(place, f"prompt keys {sorted(set(entry) - {'id', 'label', 'raw'})} not mapped",
                            "the prompt's text is used without them")
            text = entry.get("raw") if entry.get("raw") is not None else entry.get("id")
        else:
            text = entry
        if not isinstance(text, str):
            source.note(place, "a prompt that is not text", "prompt left out")
            continue
        found = (_file_prompts(source, text, label, place) if text.startswith("file://")
                 else _text_prompts(source, text, label or f"prompt-{index + 1}", place))
        for prompt in found:
            prompt.source_id = text
        prompts += found
    return prompts


def _file_prompts(source: Source, ref: str, label: str | None, place: tuple[str, str, int | None]) -> list[Prompt]:
    target = ref.removeprefix("file://")
    if ":" in Path(target).name:  # file://prompts.py:function_name
        source.note(place, f"prompt function {ref}", "prompt left out (prompt functions are not imported)")
        return []
    out: list[Prompt] = []
    for path in source.resolve(ref, place, many=True):
        suffix = path.suffix.lower()
        if suffix in (".py", ".js", ".ts", ".mjs", ".cjs"):
            source.prompt_count += 1
            source.note(place, f"prompt function {source.relative(path)}", "prompt left out (prompt functions are not imported)")
            continue
        if suffix in _EXECUTABLE:
            source.prompt_count += 1
            source.note(place, f"prompt script {source.relative(path)}", "prompt left out (promptfoo runs it for its output)")
            continue
        text = source.read_text(path)
        name = label or source.relative(path)
        if suffix == ".csv":
            for row_text, row_label in _csv_rows(text, label):
                out += _text_prompts(source, row_text, row_label, place)
            continue
        if suffix == ".jsonl":
            # src/prompts/processors/jsonl.ts (graders-DC7jJ-Ea.js processJsonlFile): one chat prompt a line
            lines = [line for line in text.splitlines() if line]
            for line in lines:
                out += _text_prompts(source, line, f"{name}: {line}" if len(lines) > 1 else name, place)
            continue
        if suffix in (".json", ".yaml", ".yml") or _messages_of(text) is not None:
            if _messages_of(text) is None:
                why = ("builds its messages with Nunjucks tags" if "{%" in text
                       else "is not a list of chat messages with text content")
                source.note(place, f"prompt file {source.relative(path)} {why}", "prompt left out")
                continue
            out += _text_prompts(source, text, name, place)
            continue
        # A text file holds several prompts separated by a line of `---` (promptfoo's rule).
        parts = [p.strip() for p in text.split("\n---\n")] if "\n---\n" in text else [text]
        for number, part in enumerate(parts, 1):
            out += _text_prompts(source, part, name if len(parts) == 1 else f"{name}:{number}", place)
    return out


def _csv_rows(text: str, label: str | None) -> list[tuple[str, str]]:
    """(prompt, label) of each prompt of a CSV prompts file, as promptfoo's processCsvPrompts
    reads it (src/prompts/processors/csv.ts, dist/src/graders-DC7jJ-Ea.js:1019-1060): with no
    comma, one prompt a non-empty line after an optional ``prompt`` header; else a ``prompt``
    column (fields trimmed, empty ones skipped) and an optional ``label`` column."""
    if "," not in text:
        lines = [line for line in text.splitlines() if line.strip()]
        lines = lines[1:] if lines and lines[0].strip().lower() == "prompt" else lines
        return [(line, label or f"Prompt {i + 1} - {line}") for i, line in enumerate(lines)]
    rows = [{(k or "").strip(): (v or "").strip() for k, v in row.items()}
            for row in csv.DictReader(io.StringIO(text.removeprefix("\ufeff")))]
    prompts = [row for row in rows if row.get("prompt")]
    return [(row["prompt"], row.get("label") or label or f"Prompt {i + 1} - {row['prompt']}")
            for i, row in enumerate(prompts)]


def _text_prompts(source: Source, text: str, label: str, place: tuple[str, str, int | None]) -> list[Prompt]:
    index = source.prompt_count
    source.prompt_count += 1
    messages = _messages_of(text)
    if messages is None:
        messages = [{"role": "user", "content": text}]
    text_form, _ = to_evalh(text)  # its problems are the messages' (reported below)
    converted = []
    for message in messages:
        content, problems = to_evalh(message["content"])
        if problems:
            source.note(place, f"prompt {label!r}: {'; '.join(problems)} does not map to evalh templating",
                        "prompt left out (its variants are not imported)")
            return []
        converted.append({"role": message["role"], "content": content})
    return [Prompt(label, converted, text_form, index=index)]
