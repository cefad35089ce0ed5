{{/* The prefix of every object's name: the release name unless nameOverride is set. */}}
{{- define "mcp2026.name" -}}
{{- default .Release.Name .Values.nameOverride | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{- define "mcp2026.labels" -}}
app.kubernetes.io/name: mcp2026
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "mcp2026.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end -}}

{{- define "mcp2026.containerSecurity" -}}
{allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
{{- end -}}

{{/* What values.schema.json cannot say: relations between values. Each breach stops the render
with a message that names the values. */}}
{{- define "mcp2026.checkValues" -}}
{{- $e := .Values.engine -}}
{{- if gt (int $e.autoscaling.minReplicas) (int $e.autoscaling.maxReplicas) -}}
{{- fail (printf "engine.autoscaling.minReplicas (%v) is over engine.autoscaling.maxReplicas (%v)" $e.autoscaling.minReplicas $e.autoscaling.maxReplicas) -}}
{{- end -}}
{{- if ge (int $e.pdbMinAvailable) (int $e.autoscaling.minReplicas) -}}
{{- fail (printf "engine.pdbMinAvailable (%v) must be below engine.autoscaling.minReplicas (%v): otherwise no engine pod may ever be evicted and node drains hang" $e.pdbMinAvailable $e.autoscaling.minReplicas) -}}
{{- end -}}
{{- if ge (int .Values.gateway.pdbMinAvailable) (int .Values.gateway.replicas) -}}
{{- fail (printf "gateway.pdbMinAvailable (%v) must be below gateway.replicas (%v): otherwise no gateway pod may ever be evicted and node drains hang" .Values.gateway.pdbMinAvailable .Values.gateway.replicas) -}}
{{- end -}}
{{- if and (not $e.vllmMetrics) (or (eq $e.autoscaling.mode "keda") .Values.inferenceExtension.enabled) -}}
{{- fail "engine.vllmMetrics is false, but engine.autoscaling.mode keda and inferenceExtension.enabled read the engines' vllm: metrics: turn it on or use neither" -}}
{{- end -}}
{{- $previous := 0 -}}
{{- range $e.canary.steps -}}
{{- if le (int .) $previous -}}
{{- fail (printf "engine.canary.steps must rise: %v follows %v in %v" . $previous $e.canary.steps) -}}
{{- end -}}
{{- $previous = int . -}}
{{- end -}}
{{- end -}}

{{/* The engine's mcp-config.yaml: its ConfigMap holds it and the Rollout's pod template carries its
sha256, so a config change rolls out through the canary (the engines read it once, at start). The
policy bundle is not in it: the engines reload that when it changes. */}}
{{- define "mcp2026.engineConfig" -}}
version: 1
runtime: {{- toYaml .Values.engine.runtime | nindent 2 }}
scheduler: {{- toYaml .Values.engine.scheduler | nindent 2 }}
serving:
  host: 0.0.0.0
  port: 8000
  service_name: {{ .Values.engine.serviceName }}
  models:
    - {name: {{ .Values.engine.model.name }}, source: {{ .Values.engine.model.catalog }}, version: {{ .Values.engine.model.version | quote }}}
  timeouts: {{- toYaml .Values.engine.timeouts | nindent 4 }}
  metrics: {vllm: {{ .Values.engine.vllmMetrics }}}
  {{- with .Values.engine.governance }}
  governance: {{- toYaml . | nindent 4 }}
  {{- end }}
  tenants:
    - {name: gateway, key_sha256: [{{ required "keys.engineApiKey is required" .Values.keys.engineApiKey | sha256sum }}]}
{{- end -}}
