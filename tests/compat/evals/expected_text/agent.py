"""Answers from the case input (for the expected_text compat eval)."""


def run(case, variant):
    data = case["input"]
    return {"final_answer": data["say"], "thinking": data.get("think"), "structured": data.get("structured")}
