"""user_simulator: multi-turn conversations, the user played by an LLM on a loopback server.

The "LLM" is a real HTTP server speaking the Anthropic messages API (what eval-harness's
``user_model: claude-*`` calls), reached through ``ANTHROPIC_BASE_URL``; the system under
test is a python_function in the eval folder.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from evalh_pipeline.config import ConfigError
from evalh_pipeline.runner.loading import load_eval
from tests.support.evalh_process import run_evalh
from tests.support.http_server import FakeHandler, HandlerServer

AGENT = '''
def run(case, variant):
    data = case["input"]
    turn = len([m for m in data["conversation"] if m["role"] == "user"])
    answer = f"reply {turn} to: {data['user_message']}"
    if "thanks" in data["user_message"]:
        answer = "You're welcome, goodbye"
    return {"final_answer": answer, "thinking": f"thinking {turn}",
            "tool_calls": [{"name": "lookup", "arguments": {"turn": turn}}],
            "metrics": {"token_input": 10, "token_output": 5, "cost_usd": 0.001}}
'''


class FakeLLM:
    """Answers /v1/messages: the user role asks two follow-ups then says thanks; the judge says
    yes once the transcript has a goodbye."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        llm = self

        class Handler(FakeHandler):
            def do_POST(self):
                body = self.body_json()
                llm.requests.append({"body": body, "headers": dict(self.headers)})
                prompt = body["messages"][-1]["content"]
                if "binary judge" in body.get("system", ""):
                    text = "yes" if "goodbye" in prompt else "no"
                else:
                    asked = prompt.count("User:") - 1
                    text = "thanks, that's all" if asked >= 3 else f"follow-up question {asked}"
                self.send_json(200, {"model": body["model"], "content": [{"type": "text", "text": text}],
                                     "usage": {"input_tokens": 7, "output_tokens": 3}})

        self.server = HandlerServer(Handler)
        self.url = self.server.url

    def close(self) -> None:
        self.server.close()


@pytest.fixture
def llm():
    server = FakeLLM()
    yield server
    server.close()


def write(folder, stopping: str, max_turns: int = 6):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "agent.py").write_text(AGENT)
    (folder / "cases.yaml").write_text(textwrap.dedent("""\
        schema_version: "1.0"
        cases:
          - {id: buyer, input: {user_message: "Tell me about ABC123", listing_id: ABC123}}
    """))
    (folder / "eval.yaml").write_text(textwrap.dedent(f"""\
        eval: {{name: conversation}}
        dataset: {{type: yaml, path: cases.yaml}}
        systems:
          - name: agent conversational
            adapter: user_simulator
            user_model: claude-4-7
            user_persona_prompt: You are a curious buyer. Stop when satisfied.
            max_turns: {max_turns}
            stopping_criterion: {stopping}
            inner_system:
              adapter: python_function
              target: agent:run
            cost_limit_usd: 0.20
        evaluators:
          - name: polite ending
            type: contains_text
            config: {{any_of: [welcome]}}
          - name: looked up
            type: tool_called
            config: {{tool_name: lookup, min_calls: 2}}
        output:
          - type: local_files
            path: runs/
    """))
    return folder / "eval.yaml"


def _trace(folder):
    (run_dir,) = [p for p in (folder / "runs").iterdir() if p.name != "baselines"]
    (trace,) = [json.loads(line) for line in (run_dir / "traces.jsonl").read_text().splitlines()]
    results = {r["evaluator"]: r["passed"] for r in map(json.loads, (run_dir / "results.jsonl").read_text().splitlines())}
    return trace, results


@pytest.mark.integration
def test_a_conversation_runs_until_the_content_matches(tmp_path, env, llm):
    path = write(tmp_path / "conv", "{type: content_match, patterns: [Goodbye], case_sensitive: false}")
    proc = run_evalh(["run", str(path)], {**env, "ANTHROPIC_BASE_URL": llm.url}, tmp_path / "conv")
    assert proc.returncode == 0, proc.stderr
    trace, results = _trace(tmp_path / "conv")
    assert trace["error"] is None
    roles = [m["role"] for m in trace["messages"]]
    assert roles == ["user", "assistant"] * 4
    assert trace["messages"][0]["content"] == "Tell me about ABC123"
    assert trace["messages"][2]["content"] == "follow-up question 1"
    assert trace["output"]["final_answer"] == "You're welcome, goodbye"
    assert trace["output"]["thinking"] == "thinking 1\n\nthinking 2\n\nthinking 3\n\nthinking 4"
    assert trace["extra"]["user_simulator"] == {"turns": 4, "stop_reason": "content_match('Goodbye')",
                                                "user_model": "claude-4-7", "max_turns": 6}
    assert trace["metrics"]["token_input"] == 4 * 10 + 3 * 7 and trace["metrics"]["cost_usd"] == pytest.approx(0.004)
    assert len(trace["tool_calls"]) == 4
    assert results == {"polite ending": True, "looked up": True}
    (first_user_call, *_) = llm.requests
    assert first_user_call["body"]["system"] == "You are a curious buyer. Stop when satisfied."
    assert first_user_call["body"]["messages"][0]["content"].endswith("\nUser:")


@pytest.mark.integration
def test_turn_count_max_turns_and_judge_stops(tmp_path, env, llm):
    environment = {**env, "ANTHROPIC_BASE_URL": llm.url}
    path = write(tmp_path / "count", "{type: turn_count, n: 2}")
    assert run_evalh(["run", str(path)], environment, tmp_path / "count").returncode == 0
    assert _trace(tmp_path / "count")[0]["extra"]["user_simulator"]["stop_reason"] == "turn_count(n=2)"
    path = write(tmp_path / "ceiling", "{type: content_match, patterns: [never said]}", max_turns=3)
    assert run_evalh(["run", str(path)], environment, tmp_path / "ceiling").returncode == 0
    trace, _ = _trace(tmp_path / "ceiling")
    assert trace["extra"]["user_simulator"]["stop_reason"] == "max_turns_reached"
    assert trace["extra"]["user_simulator"]["turns"] == 3
    path = write(tmp_path / "judged", "{type: judge, model: claude-4-7, question: 'Did the assistant say goodbye?'}")
    assert run_evalh(["run", str(path)], environment, tmp_path / "judged").returncode == 0
    assert _trace(tmp_path / "judged")[0]["extra"]["user_simulator"]["stop_reason"] == "judge(claude-4-7)"


@pytest.mark.parametrize(("change", "message"), [
    (("stopping_criterion: {type: content_match, patterns: [Goodbye], case_sensitive: false}",
      "stopping_criterion: {type: turn_count}"), "turn_count needs n"),
    (("adapter: python_function\n      target: agent:run", "adapter: python_functoin"),
     "inner_system.adapter: unknown adapter 'python_functoin'"),
    (("target: agent:run", "target: agent"), "inner_system.target"),
    (("user_model: claude-4-7", "user_model: mystery-model"), "no judge backend serves model 'mystery-model'"),
])
def test_bad_user_simulator_configs_are_load_errors(tmp_path, change, message):
    path = write(tmp_path / "bad", "{type: content_match, patterns: [Goodbye], case_sensitive: false}")
    path.write_text(path.read_text().replace(*change))
    with pytest.raises(ConfigError) as info:
        load_eval(path)
    assert message in str(info.value) and "systems[0]" in str(info.value)
