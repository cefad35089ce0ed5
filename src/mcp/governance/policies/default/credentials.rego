# Deny prompts that carry credentials (cloud keys, private keys, tokens) or ID numbers
# (SSN, resident ID, payment card, IBAN): an LLM API is no place to send them.
package mcp.input

import rego.v1

deny contains {"rule": "input.credentials", "reason": sprintf("the prompt carries a credential (%s); remove it and retry", [f.kind])} if {
	some f in input.findings
	f.category == "secret"
}

deny contains {"rule": "input.id_numbers", "reason": sprintf("the prompt carries an ID number (%s); remove it and retry", [f.kind])} if {
	some f in input.findings
	f.kind in data.mcp.config.deny_input_kinds
}
