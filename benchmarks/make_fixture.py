"""Write an offline eval fixture: N cases x 2 variants of a stub agent that sleeps LAT seconds.
Usage: python make_fixture.py OUTDIR N LAT
The eval.yaml follows the eval-harness 1.0 config format, so the same files drive
the original `evalh` and this project. (The team's shared benchmark fixture, kept here so
the benchmarks and tests need nothing outside the repository.)"""
import json
import sys
import pathlib
out, n, lat = pathlib.Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
out.mkdir(parents=True, exist_ok=True)
suburbs = ["Richmond", "Brunswick", "Carlton", "Fitzroy"]
with (out / "cases.jsonl").open("w") as f:
    for i in range(n):
        s = suburbs[i % 4]
        f.write(json.dumps({"id": f"c{i:06d}", "input": {"user_message": f"price near listing L{i}?"},
                            "metadata": {"listing_id": f"L{i}", "suburb": s},
                            "expected": {"must_call_tools": ["get_listing_details"],
                                         "answer_should_include": [s]}}) + "\n")
(out / "stub_agent.py").write_text(f'''
import asyncio
LAT = {lat}
async def run(case, variant=None):
    await asyncio.sleep(LAT)
    md = case["metadata"] if isinstance(case, dict) else case.metadata
    i = int(md["listing_id"][1:])
    broken = (variant or {{}}).get("name") == "agent_b" and i % 10 == 0 if isinstance(variant, dict) else False
    suburb = "Nowhere" if broken else md["suburb"]
    return {{"final_answer": f"Listing {{md['listing_id']}} is in {{suburb}}; average is 1.2M.",
            "tool_calls": [{{"name": "get_listing_details", "arguments": {{"listing_id": md["listing_id"]}}}}],
            "metrics": {{"token_input": 100, "token_output": 20, "cost_usd": 0.0001}}}}
''')
(out / "eval.yaml").write_text(f"""
eval:
  name: bench
dataset:
  type: jsonl
  path: {out.resolve()}/cases.jsonl
systems:
  - name: agent_a
    adapter: python_function
    target: stub_agent:run
  - name: agent_b
    adapter: python_function
    target: stub_agent:run
evaluators:
  - name: calls_listing_tool
    type: tool_called
    config: {{tool_name: get_listing_details}}
  - name: mentions_suburb
    type: contains_text
    config: {{any_of: [Richmond, Brunswick, Carlton, Fitzroy]}}
run:
  max_concurrency: 64
  baseline_variant: agent_a
output:
  - type: local_files
    path: {out.resolve()}/runs/
""")
