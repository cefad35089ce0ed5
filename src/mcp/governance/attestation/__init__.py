"""Measured launch and remote attestation (docs/security.md).

``MeasurementLog`` keeps what the server measured (code, config, policy bundle, models) as a
TCG-style event log and its replayed PCR value; ``evidence`` signs it with the instance key
over a verifier's nonce, with a TPM 2.0 quote and an SEV-SNP report where configured;
``verify`` checks evidence against a reference.
"""
