"""The chat requests every caller of the llm/ backends sends, captured on the loopback fake
judge server and compared with a snapshot: judges (both protocols, with and without a
verdict schema), the user simulator (its user and judge models, its inner http system on
the openai_chat preset) and the grading evaluators.

The snapshot pins what goes on the wire (path, headers, the JSON body with its key order) so a change
to how a request is built shows here. After an intended change, rewrite it with
``EVALH_UPDATE_SNAPSHOTS=1 pytest tests/llm/test_requests_on_the_wire.py`` and review its diff.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from evalh_pipeline.common.context import EvaluatorContext
from evalh_pipeline.evaluators.llm_judge import LlmJudge
from evalh_pipeline.evaluators.openai_model_graded import OpenAIModelGraded
from evalh_pipeline.evaluators.openai_score_model import OpenAIScoreModel
from evalh_pipeline.evaluators.promptfoo_graded import PromptfooGraded
from evalh_pipeline.llm.registry import resolve_backend
from evalh_pipeline.models import EvalCase, RunVariant, Trace, TraceOutput
from evalh_pipeline.systems.base import SystemContext
from evalh_pipeline.systems.user_simulator import UserSimulatorSystem
from tests.support.fake_judge_server import FakeJudgeServer

SNAPSHOT = Path(__file__).parent / "snapshots" / "wire_requests.json"
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
CASE = EvalCase(id="c1", input={"question": "Capital of France?"}, expected={"facts": {"city": "Paris"}})
TRACE = Trace(run_id="r", case_id="c1", variant_name="v", started_at=T0, finished_at=T0, latency_ms=1,
              output=TraceOutput(final_answer="Paris, on the Seine."))
KEYS = {"OPENAI_API_KEY": "sk-wire-test", "ANTHROPIC_API_KEY": "ak-wire-test"}


def _captured(server: FakeJudgeServer) -> list[dict[str, Any]]:
    """Each request as sent: the path, the headers (not Host, whose port differs per run, nor the
    HTTP client's User-Agent), the body in the order of its keys."""
    return [{"path": r["path"], "headers": {k.lower(): v for k, v in sorted(r["headers"].items())
                                            if k.lower() not in ("host", "user-agent")}, "body": r["body"]}
            for r in server.requests]


def _requests(server: FakeJudgeServer) -> dict[str, list[dict[str, Any]]]:
    env = {**KEYS, "OPENAI_BASE_URL": server.openai_base_url}
    context = EvaluatorContext(env=env)
    seen: dict[str, list[dict[str, Any]]] = {}

    def record(name: str) -> None:
        seen[name] = _captured(server)
        server.requests.clear()

    for backend, base_url, model in (("openai_compatible", server.openai_base_url, "judge-1"),
                                     ("openai_compatible", server.openai_base_url, "o3-mini"),
                                     ("anthropic", server.anthropic_base_url, "claude-judge")):
        judge = LlmJudge("quality", "llm_judge", {"backend": backend, "model": model, "base_url": base_url,
                                                  "nl_assertions": ["names the city"]}, context)
        asyncio.run(judge.evaluate(CASE, TRACE, None))
        record(f"llm_judge {backend} {model}")
        # The user simulator's call: plain text (no schema), its own max_tokens.
        resolved = resolve_backend(model, backend)
        chat = resolved.cls(resolved.cls.settings_from(env, model=resolved.api_model, base_url=base_url,
                                                       api_key_env=None, timeout_seconds=5, max_tokens=512))
        asyncio.run(chat.complete("You are a curious buyer.", "User: hi\nAssistant: hello\nUser:", None))
        record(f"plain text {backend} {model}")

    simulator = UserSimulatorSystem(RunVariant(name="v", adapter="user_simulator", config={
        "user_model": "claude-user", "backend": "anthropic", "base_url": server.anthropic_base_url,
        "user_persona_prompt": "You are a curious buyer.", "max_turns": 2,
        "stopping_criterion": {"type": "judge", "model": "claude-judge", "question": "Is the buyer done?"},
        "inner_system": {"adapter": "http", "endpoint": f"{server.openai_base_url}/chat/completions",
                         "provider": "openai_chat", "model": "agent-1", "temperature": 0.2}}),
        SystemContext(eval_dir=Path("."), env=env))

    async def converse() -> None:
        await simulator.start()
        try:
            await simulator.run(EvalCase(id="c1", input={"user_message": "Tell me about ABC123"}), None)
        finally:
            await simulator.close()

    asyncio.run(converse())
    record("user_simulator")
    asyncio.run(OpenAIModelGraded("graded", "openai_model_graded", {
        "prompt": "Is {completion} right?", "choice_strings": ["Y", "N"], "eval_type": "cot_classify",
        "parse_type": "cot_classify", "model": "gpt-4o-mini"}, context).evaluate(CASE, TRACE, None))
    record("openai_model_graded")
    asyncio.run(OpenAIScoreModel("score", "openai_score_model", {
        "input": [{"role": "developer", "content": "Rate {{ item.answer }}."},
                  {"role": "user", "content": "A: {{sample.output_text}}"}],
        "item": {"answer": "Paris"}, "pass_threshold": 0.5, "model": "gpt-4o-mini",
        "sampling_params": {"temperature": 0, "seed": 3}}, context).evaluate(CASE, TRACE, None))
    record("openai_score_model")
    for check in ("model-graded-closedqa", "factuality"):
        asyncio.run(PromptfooGraded("graded", "promptfoo_graded", {
            "check": check, "value": "names Paris", "prompt": "{{ input.question }}", "model": "gpt-4o-mini"},
            context).evaluate(CASE, TRACE, None))
        record(f"promptfoo_graded {check}")
    return seen


def test_the_chat_requests_on_the_wire_match_the_snapshot():
    with FakeJudgeServer(hang_seconds=5) as server:
        seen = _requests(server)
    text = json.dumps(seen, indent=2, ensure_ascii=False) + "\n"
    if os.environ.get("EVALH_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.parent.mkdir(exist_ok=True)
        SNAPSHOT.write_text(text)
    expected = SNAPSHOT.read_text()
    diff = "".join(difflib.unified_diff(expected.splitlines(True), text.splitlines(True), "snapshot", "sent"))
    assert text == expected, ("the chat requests changed; if that is intended, rewrite the snapshot with "
                              "EVALH_UPDATE_SNAPSHOTS=1 pytest tests/llm/test_requests_on_the_wire.py:\n" + diff)
