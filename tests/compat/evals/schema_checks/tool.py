"""Prints the case input back as JSON with a final_answer (for the schema_checks compat eval)."""

import json
import sys

data = json.loads(sys.stdin.read())
data["final_answer"] = data.pop("answer", "")
print(json.dumps(data))
