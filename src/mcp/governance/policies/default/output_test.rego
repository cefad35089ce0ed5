# Unit tests of the output policies (see input_test.rego for how cases run).
package mcp.output_test

import rego.v1

finding(kind, category) := {"kind": kind, "category": category, "start": 0, "end": 4, "digest": "d", "masked": "*"}

cases := [
	{"name": "a clean output passes", "stage": "output", "input": {"findings": []}, "expect": {"action": "allow", "rules": []}},
	{
		"name": "PII in an output is redacted, by kind",
		"stage": "output",
		"input": {"findings": [finding("email", "pii"), finding("phone", "pii"), finding("prompt_injection", "injection")]},
		"expect": {"action": "redact", "rules": ["output.redact_pii"], "redact_kinds": ["email", "phone"]},
	},
	{
		"name": "a credential stops the output",
		"stage": "output",
		"input": {"findings": [finding("private_key", "secret")]},
		"expect": {"action": "deny", "rules": ["output.credentials"]},
	},
]
