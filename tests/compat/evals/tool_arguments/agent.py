"""A deterministic agent whose tool calls vary per case (for the tool_arguments compat eval)."""


def run(case, variant):
    data = case["input"]
    calls = [{"name": "get_listing_details",
              "arguments": {"listing_id": data["listing_id"], "max_price": data.get("max_price")}}]
    if data.get("suburbs") is not None:
        calls.append({"name": "compare_suburbs", "arguments": {"suburbs": data["suburbs"]}})
    for search in data.get("searches", []):
        calls.append({"name": "search", "arguments": search})
    if data.get("delete"):
        calls.append({"name": "delete_listing", "arguments": {"listing_id": data["listing_id"]}})
    return {"final_answer": f"Listing {data['listing_id']} checked.", "tool_calls": calls}
