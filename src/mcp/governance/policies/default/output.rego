# Outputs: redact PII; stop a response that would print a credential.
package mcp.output

import rego.v1

redact contains {"rule": "output.redact_pii", "reason": "personal data is redacted from outputs", "kinds": kinds} if {
	kinds := [f.kind | some f in input.findings; f.category in data.mcp.config.redact_output_categories]
	count(kinds) > 0
}

deny contains {"rule": "output.credentials", "reason": sprintf("the output would carry a credential (%s)", [f.kind])} if {
	some f in input.findings
	f.category == "secret"
}
