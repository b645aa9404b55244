{{- define "strait.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "strait.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "strait.selectorLabels" -}}
app.kubernetes.io/name: {{ include "strait.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "strait.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "strait.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* strait.toml: instance_group, the user's clusters and flows, then the [http] table. */}}
{{- define "strait.toml" -}}
instance_group = {{ .Values.instanceGroup | quote }}

{{ .Values.config }}

[http]
listen = "0.0.0.0:{{ .Values.statusPort }}"
allow_remote = true
{{- end -}}
