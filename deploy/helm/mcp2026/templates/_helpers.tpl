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
