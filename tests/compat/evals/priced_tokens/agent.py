"""Reports token counts (and, for one variant, its own cost) per case (priced_tokens compat eval)."""


def run(case, variant):
    data = case["input"]
    metrics = {"token_input": data["tin"], "token_output": data["tout"], "token_thinking": data.get("tthink")}
    if variant["metadata"].get("report_cost"):
        metrics["cost_usd"] = 0.015
    return {"final_answer": "ok", "metrics": metrics}
