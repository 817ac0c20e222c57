"""Echoes the case's input back as a tool call's arguments (for the yaml_booleans compat eval).

eval-harness's python_function keeps only final_answer and thinking of ``output``, so the
input travels in a tool call, which both tools record whole.
"""


def run(case, variant):
    data = case["input"]
    answer = f"urgent={data.get('urgent')!r} label={data.get('label')!r}"
    if variant["metadata"].get("style") == "loud":
        answer = answer.upper()
    return {"final_answer": answer, "tool_calls": [{"name": "echo", "arguments": data}]}
