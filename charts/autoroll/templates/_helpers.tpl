{{/*
autoroll.name: the chart name, or .Values.nameOverride; at most 63 characters.
*/}}
{{- define "autoroll.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
autoroll.fullname: the prefix of every resource name. fullnameOverride wins; otherwise
"<release>-<name>", or just the release name when it already contains the chart name.
Truncated to 63 characters (a DNS-1123 label) with a trailing "-" trimmed.
jobhash/names.py mirrors this helper; keep them in sync.
*/}}
{{- define "autoroll.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
autoroll.chart: "<chart>-<version>" for the helm.sh/chart label ("+" is not allowed in labels).
*/}}
{{- define "autoroll.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
autoroll.selectorLabels: the immutable labels a selector matches on.
*/}}
{{- define "autoroll.selectorLabels" -}}
app.kubernetes.io/name: {{ include "autoroll.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/*
autoroll.labels: the standard app.kubernetes.io/* set, on every object the chart renders.
*/}}
{{- define "autoroll.labels" -}}
helm.sh/chart: {{ include "autoroll.chart" . }}
{{ include "autoroll.selectorLabels" . }}
{{- if .Chart.AppVersion }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/*
autoroll.serviceAccountName: the ServiceAccount the controller runs as.
*/}}
{{- define "autoroll.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "autoroll.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}
