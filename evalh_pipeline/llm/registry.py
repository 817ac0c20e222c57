"""Chat (judge) backend registry: a backend name, or a model name, -> the backend class.

``backend:`` in the evaluator config wins. Otherwise ``provider/model`` picks the backend
that lists the provider, then the model name is matched against each backend's
``model_patterns`` (``gpt-*`` -> openai_compatible, ``claude-*`` -> anthropic). Third-party
backends register under the entry point group ``evalh_pipeline.judges``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase

from evalh_pipeline.errors import UserError
from evalh_pipeline.llm.chat import JudgeBackend
from evalh_pipeline.registry import Registry, UnknownTypeError

ENTRY_POINT_GROUP = "evalh_pipeline.judges"

JUDGE_BACKENDS: Registry[JudgeBackend] = Registry(
    "judge backend",
    ENTRY_POINT_GROUP,
    {
        "anthropic": "evalh_pipeline.llm.anthropic_messages:AnthropicBackend",
        "openai_compatible": "evalh_pipeline.llm.openai_chat:OpenAICompatibleBackend",
    },
)


class BackendNotFound(UserError, ValueError):
    """No backend serves the model; the message says what to configure or install."""


@dataclass(frozen=True)
class ResolvedBackend:
    """The backend chosen for a judge model, and the model name to send to its API."""

    name: str
    cls: type[JudgeBackend]
    api_model: str

    def build(self, env: Mapping[str, str], *, base_url: str | None, api_key_env: str | None,
              timeout_seconds: float, max_tokens: int, temperature: float = 0.0) -> JudgeBackend:
        """The backend for :attr:`api_model`, its URL and key resolved from the config and ``env``."""
        return self.cls(self.cls.settings_from(env, model=self.api_model, base_url=base_url, api_key_env=api_key_env,
                                               timeout_seconds=timeout_seconds, max_tokens=max_tokens,
                                               temperature=temperature))


def _load(name: str) -> type[JudgeBackend]:
    try:
        return JUDGE_BACKENDS.get(name)
    except UnknownTypeError as exc:
        raise BackendNotFound(f"{exc}; install the package that provides it (entry point group "
                              f"{ENTRY_POINT_GROUP!r})") from None
    except Exception as exc:  # noqa: BLE001 - a plugin whose import fails is reported, not raised through
        raise BackendNotFound(f"judge backend {name!r} cannot be loaded ({type(exc).__name__}: {exc}); "
                              f"install its package and dependencies") from None


def resolve_backend(model: str, backend: str | None = None) -> ResolvedBackend:
    """The backend for ``model``; raises :class:`BackendNotFound` naming the fix."""
    provider, slash, rest = model.partition("/")
    if backend is not None:
        cls = _load(backend)
        return ResolvedBackend(backend, cls, rest if slash and provider in cls.providers else model)
    candidates, broken = [], []
    for name in JUDGE_BACKENDS.names():
        try:
            candidates.append((name, _load(name)))
        except BackendNotFound as exc:  # one broken plugin must not hide the working backends
            broken.append(str(exc))
    if slash:
        for name, cls in candidates:
            if provider in cls.providers or provider == name:
                return ResolvedBackend(name, cls, rest)
    for name, cls in candidates:
        if any(fnmatchcase(model, pattern) for pattern in cls.model_patterns):
            return ResolvedBackend(name, cls, model)
    raise BackendNotFound(
        f"no judge backend serves model {model!r}: set `backend:` (known: {', '.join(JUDGE_BACKENDS.names())}) "
        f"with `base_url:` for a compatible server, or install a plugin that registers a backend for it "
        f"(entry point group {ENTRY_POINT_GROUP!r})" + "".join(f"; {problem}" for problem in broken))
