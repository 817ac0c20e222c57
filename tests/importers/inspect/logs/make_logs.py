"""Writes the fixture logs of this folder (run once from here; the files are committed).

Hand-written after inspect_ai's documented log schema (src/inspect_ai/log/_log.py: EvalLog,
EvalSample, ModelOutput, Score); the .eval form is the zip Inspect writes: _journal/start.json,
samples/<id>_epoch_<n>.json and header.json (the log without its samples).

echo-mockllm-inspect-0.3.285.eval is not made here: inspect_ai 0.3.285 wrote it, offline, with
`eval(Task(dataset=[Sample(id="s1", ...), Sample(id=2, ...)], solver=generate(),
scorer=[match(), includes()]), model="mockllm/model", log_format="eval")`. Its members are
zstd-compressed (Inspect's default) and both samples errored (mockllm could not fetch its
tokenizer without network), so the log's status is `error` and no sample has a score."""

import json
import zipfile

SAMPLES = [
    ("q1", "What is 2+2?", "4"), ("q2", "What is 3*3?", "9"), ("q3", "What is 10-7?", "3"),
    ("q4", [{"role": "system", "content": "Answer with a number only."},
            {"role": "user", "content": [{"type": "text", "text": "What is 6/2?"}]}], "3"),
    ("q5", "What is 5+5?", "10"), ("q6", "What is 2**5?", "32"),
]
ANSWERS = {"openai/model-a": ["4", "9", "4", "3", "11", "31"], "openai/model-b": ["4", "9", "3", "3", "10", "32"]}


def log(model):
    out = []
    for (sid, inp, target), ans in zip(SAMPLES, ANSWERS[model]):
        msgs = [{"role": "user", "content": inp}] if isinstance(inp, str) else list(inp)
        out.append({
            "id": sid, "epoch": 1, "input": inp, "target": target,
            "messages": msgs + [{"role": "assistant", "content": ans, "source": "generate"}],
            "output": {"model": model.split("/")[1],
                       "choices": [{"message": {"role": "assistant", "content": ans}, "stop_reason": "stop"}],
                       "completion": ans, "usage": {"input_tokens": 12, "output_tokens": 1, "total_tokens": 13}},
            "scores": {"match": {"value": "C" if ans == target else "I", "answer": ans, "explanation": ans},
                       "closeness": {"value": 1.0 if ans == target else 0.5}},
            "metadata": {"topic": "arithmetic"},
            "started_at": "2026-11-20T10:00:00+00:00", "total_time": 0.25,
        })
    return {"version": 2, "status": "success",
            "eval": {"task": "arithmetic", "task_id": "T1", "created": "2026-11-20T10:00:00+00:00", "model": model,
                     "dataset": {"name": "arithmetic", "samples": 6}, "config": {}},
            "plan": {"name": "plan", "steps": [{"solver": "generate", "params": {}}]},
            "results": {"total_samples": 6, "completed_samples": 6,
                        "scores": [{"name": "match", "scorer": "match",
                                    "metrics": {"accuracy": {"name": "accuracy", "value": 0}}}]},
            "stats": {"started_at": "2026-11-20T10:00:00+00:00", "completed_at": "2026-11-20T10:00:02+00:00"},
            "samples": out}


if __name__ == "__main__":
    for name, model in (("model-a", "openai/model-a"), ("model-b", "openai/model-b")):
        with open(f"arithmetic-{name}.json", "w") as f:
            json.dump(log(model), f, indent=1)
    full = log("openai/model-b")
    with zipfile.ZipFile("arithmetic-model-b.eval", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("_journal/start.json", json.dumps({"version": 2, "eval": full["eval"], "plan": full["plan"]}))
        for s in full["samples"]:
            z.writestr(f"samples/{s['id']}_epoch_1.json", json.dumps(s))
        z.writestr("header.json", json.dumps({k: v for k, v in full.items() if k != "samples"}))
