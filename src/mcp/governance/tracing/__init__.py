"""OpenTelemetry spans of inferences (GenAI semantic conventions), exported over OTLP/HTTP."""
