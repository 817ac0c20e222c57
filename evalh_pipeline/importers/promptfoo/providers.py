"""promptfoo ``providers`` as evalh systems (one per prompt: prompts x providers are the variants).

- ``openai:chat:<model>`` and ``openai:<model>``: an ``http`` system with the ``openai_chat``
  preset; the endpoint is the config's ``apiBaseUrl`` (or ``apiHost``), else
  ``$OPENAI_BASE_URL`` (default OpenAI's), the key ``$OPENAI_API_KEY`` (or the config's
  ``apiKeyEnvar``): eval.yaml names the variable, the key itself is never written.
- ``anthropic:messages:<model>``: ``anthropic_messages``, ``$ANTHROPIC_BASE_URL``, ``$ANTHROPIC_API_KEY``.
- ``http``/``https://…``: the config's ``url``, ``method``, ``headers``, ``body`` (its
  ``{{prompt}}`` is the prompt's text) and ``transformResponse`` when it is a field path.
- ``echo``: a ``python_function`` system whose answer is the rendered prompt; a Python
  provider (``python:x.py``, ``file://x.py[:fn]``) one that calls the copied file (python_provider.py).
- Request settings of the model (``temperature``, ``max_tokens``, …) go into the body.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from evalh_pipeline.common.masking import is_secret_key
from evalh_pipeline.importers.promptfoo.echo import TARGET as ECHO_TARGET
from evalh_pipeline.importers.promptfoo.python_provider import TARGET as PYTHON_TARGET
from evalh_pipeline.importers.promptfoo.prompts import Prompt
from evalh_pipeline.importers.promptfoo.source import Source
from evalh_pipeline.importers.promptfoo.templates import to_evalh
from evalh_pipeline.importers.report import BadSource

# Request fields promptfoo's OpenAI and Anthropic providers send as they are named.
_OPENAI_FIELDS = ("temperature", "max_tokens", "max_completion_tokens", "top_p", "frequency_penalty",
                  "presence_penalty", "stop", "seed", "response_format", "tools", "tool_choice", "n",
                  "reasoning_effort", "logprobs", "top_logprobs", "user")
_ANTHROPIC_FIELDS = ("temperature", "max_tokens", "top_p", "top_k", "stop_sequences", "tools", "tool_choice", "thinking")
# Config keys that only choose where the request goes (read here, not sent).
_ENDPOINT_KEYS = ("apiBaseUrl", "apiHost", "apiKeyEnvar", "apiKey")
# `openai:<kind>:...` ids that are not chat completions of a model named in the id.
_OPENAI_KINDS = ("chat", "completion", "embedding", "embeddings", "responses", "assistant", "realtime",
                 "image", "moderation", "transcription", "codex-sdk", "agents", "chatkit")
_FIELD_PATH = re.compile(r"json((?:\.[A-Za-z_$][\w$]*|\[\d+\]|\[(?:'[^']*'|\"[^\"]*\")\])*)")


@dataclass
class Provider:
    """One mapped provider: its label and how to build a system entry for a prompt."""

    label: str
    kind: str  # openai | anthropic | http | echo | python
    model: str | None
    config: dict[str, Any] = field(default_factory=dict)  # the system entry's keys, minus the request
    prompts: list[str] | None = None  # promptfoo's `providers[].prompts`: the prompt labels it runs
    ident: str = ""  # promptfoo's provider id (a results file names the provider by id or label)
    #: Where its `response_format` is an inline json_schema: promptfoo hands assertions the parsed object.
    structured: tuple[str, str, int | None] | None = None

    @property
    def tools(self) -> list[dict[str, Any]] | None:
        """The OpenAI tools the provider sends (None: none)."""
        tools = self.config.get("tools") if self.kind == "openai" else None
        return tools if isinstance(tools, list) and tools else None

    def runs(self, prompt: Prompt) -> bool:
        """Whether this provider runs ``prompt`` (all prompts unless the provider lists some)."""
        return self.prompts is None or prompt.label in self.prompts or prompt.source_id in self.prompts

    def system(self, name: str, prompt: Prompt) -> dict[str, Any]:
        """The eval.yaml ``systems[]`` entry of this provider sending ``prompt``."""
        entry: dict[str, Any] = {"name": name, "adapter": "http", **self.config}
        if self.kind == "openai":
            entry["request_template"] = {"messages": prompt.messages}
        elif self.kind == "anthropic":
            system = [m["content"] for m in prompt.messages if m["role"] == "system"]
            template: dict[str, Any] = {"messages": [m for m in prompt.messages if m["role"] != "system"]}
            if system:
                template["system"] = "\n\n".join(system)
            entry["request_template"] = template
        elif self.kind in ("echo", "python"):
            entry["adapter"] = "python_function"
            entry["echo_prompt"] = prompt.text
        else:
            entry["request_template"] = _with_prompt(entry.pop("request_template"), prompt.text)
        entry["metadata"] = {"promptfoo_provider": self.label, "prompt": prompt.label,
                             **({"model": self.model} if self.model else {})}
        return entry


def _with_prompt(value: Any, prompt: str) -> Any:
    """``value`` with each ``{{prompt}}`` (already rewritten as ``{{ input.vars.prompt }}``) set to the prompt."""
    if isinstance(value, dict):
        return {k: _with_prompt(v, prompt) for k, v in value.items()}
    if isinstance(value, list):
        return [_with_prompt(v, prompt) for v in value]
    if isinstance(value, str):
        return value.replace("{{ input.vars.prompt }}", prompt)
    return value


def read_providers(source: Source) -> list[Provider]:
    """Every provider of the config that maps (the others are reported and left out)."""
    entries = source.doc.data.get("providers", source.doc.data.get("targets"))
    key = "providers" if "providers" in source.doc.data else "targets"
    if isinstance(entries, str):
        entries = [entries]
    out = []
    for index, entry in enumerate(entries or []):
        place = source.at((key, index))
        if isinstance(entry, dict) and "id" not in entry and len(entry) == 1:
            ((ident, options),) = entry.items()  # `- openai:gpt-4o: {config: ...}`
            entry = {"id": ident, **(options or {})}
        if isinstance(entry, str):
            entry = {"id": entry}
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            source.note(place, "a provider without an id", "provider left out")
            continue
        provider = _provider(source, entry, place)
        if provider is not None:
            provider.ident = entry["id"]
            listed = entry.get("prompts")
            provider.prompts = [listed] if isinstance(listed, str) else listed
            out.append(provider)
    return out


def _provider(source: Source, entry: dict[str, Any], place: tuple[str, str, int | None]) -> Provider | None:
    ident: str = entry["id"]
    label = entry.get("label") or ident
    config = dict(entry.get("config") or {})
    for extra in sorted(set(entry) - {"id", "label", "config", "prompts"}):
        source.note(place, f"provider key {extra!r} not mapped", "left out", "note")
    parts = ident.split(":")
    if parts[0] == "openai":
        if len(parts) >= 3 and parts[1] == "chat":
            return _openai(source, label, ":".join(parts[2:]), config, place)
        if len(parts) == 2 and parts[1] not in _OPENAI_KINDS:
            return _openai(source, label, parts[1], config, place)
    if ident.startswith("anthropic:messages:") and len(parts) >= 3:
        return _anthropic(source, label, ":".join(parts[2:]), config, place)
    if parts[0] == "anthropic" and len(parts) == 2 and parts[1].startswith("claude-"):
        # promptfoo reads `anthropic:<model>` as the Messages API for the models it knows.
        source.note(place, f"{ident}: promptfoo accepts this shorthand only for models it lists",
                    "imported as anthropic:messages", "note")
        return _anthropic(source, label, parts[1], config, place)
    if ident == "echo":
        return Provider(label, "echo", None, {"target": ECHO_TARGET})
    if ident.startswith("python:") or (ident.startswith("file://") and (".py:" in ident or ident.endswith(".py"))):
        return _python(source, label, ident, config, place)
    if ident in ("http", "https") or ident.startswith(("http://", "https://")):
        return _http(source, label, ident, config, place)
    if re.fullmatch(r"(file://)?[^:]+\.(js|cjs|mjs|ts)(:\w+)?", ident):
        # promptfoo loads it as a class with callApi (src/providers/index.ts); not run here yet.
        source.note(place, f"provider {ident!r} is a JavaScript provider, which evalh does not run",
                    "provider left out (its variants are not imported): wrap its call in a Python provider "
                    "(file://provider.py) or an http provider to import it")
        return None
    source.note(place, f"provider {ident!r} has no evalh counterpart here",
                "provider left out (its variants are not imported)")
    return None


def _request_fields(source: Source, config: dict[str, Any], allowed: tuple[str, ...],
                    place: tuple[str, str, int | None]) -> dict[str, Any]:
    fields = {k: v for k, v in config.items() if k in allowed}
    for key in sorted(set(config) - set(allowed) - set(_ENDPOINT_KEYS)):
        source.note(place, f"provider config {key!r} not mapped", "not sent", "note")
    if "apiKey" in config:
        source.note(place, "provider config 'apiKey' (a key written in the config)",
                    "not copied: eval.yaml reads the key from an environment variable", "note")
    return fields


def _openai(source: Source, label: str, model: str | None, config: dict[str, Any],
            place: tuple[str, str, int | None]) -> Provider:
    base = config.get("apiBaseUrl") or (f"https://{config['apiHost']}/v1" if config.get("apiHost") else None)
    base = base or "${OPENAI_BASE_URL:-https://api.openai.com/v1}"
    key_env = config.get("apiKeyEnvar") or "OPENAI_API_KEY"
    # promptfoo parses the answer only when the config itself says json_schema: a file:// value is
    # a string there when it checks (dist/src/chat-CG-lQMid.js:159 and :346).
    response_format = config.get("response_format")
    structured = place if isinstance(response_format, dict) and response_format.get("type") == "json_schema" else None
    config = {k: _file_value(source, v, place) if k in ("response_format", "tools") else v for k, v in config.items()}
    if config.get("tools"):
        source.note(place, "tools: when the model calls one, promptfoo's assertions see the tool calls as the output",
                    "so do the imported promptfoo_assert and promptfoo_script evaluators (openai_tool_calls)", "note")
    system = {"provider": "openai_chat", "endpoint": f"{str(base).rstrip('/')}/chat/completions",
              "headers": {"Authorization": f"Bearer ${{{key_env}}}"}, "model": model,
              **_request_fields(source, config, _OPENAI_FIELDS, place)}
    return Provider(label, "openai", model, system, structured=structured)


def _file_value(source: Source, value: Any, place: tuple[str, str, int | None]) -> Any:
    """A provider config value given as ``file://x.json|yaml``: the file's data, as promptfoo
    loads it before sending (maybeLoadFromExternalFile); other values as they are."""
    if not (isinstance(value, str) and value.startswith("file://")):
        return value
    path = source.resolve(value, place)[0]
    if path.suffix.lower() == ".json":
        try:
            return json.loads(source.read_text(path))
        except ValueError as exc:
            raise BadSource(source.relative(path), None, "", f"invalid JSON: {exc}") from None
    if path.suffix.lower() in (".yaml", ".yml"):
        return source.load_yaml(path).data
    raise BadSource(*_where(place), f"{value}: only .json and .yaml files are read for a provider's config")


def _where(place: tuple[str, str, int | None]) -> tuple[str, int | None, str]:
    file, key, line = place
    return file, line, key


def _anthropic(source: Source, label: str, model: str, config: dict[str, Any],
               place: tuple[str, str, int | None]) -> Provider:
    base = config.get("apiBaseUrl") or "${ANTHROPIC_BASE_URL:-https://api.anthropic.com}"
    key_env = config.get("apiKeyEnvar") or "ANTHROPIC_API_KEY"
    if config.get("tools"):
        source.note(place, "tools: when the model calls one, promptfoo's output joins the text and each tool_use "
                    "block as JSON", "evalh's assertions see the answer text (the calls are in the trace's tool_calls)")
    system = {"provider": "anthropic_messages", "endpoint": f"{str(base).rstrip('/')}/v1/messages",
              "headers": {"x-api-key": f"${{{key_env}}}"}, "model": model,
              **_request_fields(source, config, _ANTHROPIC_FIELDS, place)}
    return Provider(label, "anthropic", model, system)


def _http(source: Source, label: str, ident: str, config: dict[str, Any],
          place: tuple[str, str, int | None]) -> Provider | None:
    url = config.get("url") or (ident if ident.startswith("http") and "://" in ident else None)
    if not isinstance(url, str):
        source.note(place, "http provider without a url", "provider left out")
        return None
    body = config.get("body", {"prompt": "{{prompt}}"})
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            source.note(place, "http provider body that is not JSON", "provider left out")
            return None
    body_text = json.dumps(body)
    template, problems = to_evalh(body_text)
    if problems:
        source.note(place, f"http provider body: {'; '.join(problems)} does not map", "provider left out")
        return None
    system: dict[str, Any] = {"endpoint": url, "method": str(config.get("method", "POST")).upper(),
                              "request_template": json.loads(template)}
    headers = {k: _env_reference(str(v)) for k, v in (config.get("headers") or {}).items()}
    for name, value in headers.items():
        if is_secret_key(name) and "${" not in value:
            # A credential written in the config never reaches disk: eval.yaml names a variable.
            variable = "PROMPTFOO_HEADER_" + re.sub(r"\W", "_", name).upper()
            headers[name] = f"${{{variable}}}"
            source.note(place, f"http header {name!r} holds a credential", f"not copied: eval.yaml reads ${variable}; "
                        "export it before running", "note")
    if headers:
        system["headers"] = headers
    transform = config.get("transformResponse")
    if transform is not None:
        found = _FIELD_PATH.fullmatch(transform.strip()) if isinstance(transform, str) else None
        if found is None:
            source.note(place, f"transformResponse {str(transform)[:60]!r} is code, not a field path",
                        "provider left out (evalh maps responses with JSONPath)")
            return None
        system["response_mapping"] = {"final_answer": "$" + found.group(1)}
    for key in sorted(set(config) - {"url", "method", "headers", "body", "transformResponse"}):
        source.note(place, f"http provider config {key!r} not mapped", "left out", "note")
    return Provider(label, "http", None, system)


def _python(source: Source, label: str, ident: str, config: dict[str, Any],
            place: tuple[str, str, int | None]) -> Provider | None:
    """A Python provider file, copied beside eval.yaml and called through python_provider.respond."""
    target = ident.removeprefix("python:").removeprefix("file://")
    file, _, function = target.partition(".py:")
    file = file if file.endswith(".py") else f"{file}.py"
    path = source.resolve(f"file://{file}", place)[0]
    module = "promptfoo_provider_" + re.sub(r"\W", "_", path.stem)
    source.copies[f"{module}.py"] = path
    siblings = [p.name for p in path.parent.glob("*.py") if p != path]
    if siblings:
        source.note(place, f"{source.relative(path)} is copied alone (as {module}.py)",
                    f"if it imports {', '.join(sorted(siblings)[:3])}, copy those beside eval.yaml", "note")
    entry: dict[str, Any] = {"target": PYTHON_TARGET, "promptfoo_module": module, "promptfoo_config": config}
    if function:
        entry["promptfoo_function"] = function
    return Provider(label, "python", None, entry)


def _env_reference(value: str) -> str:
    """A header value with promptfoo's ``{{env.NAME}}`` as evalh's ``${NAME}`` (read at load)."""
    return re.sub(r"\{\{\s*env\.(\w+)\s*\}\}", r"${\1}", value)
