{{/*
The chart's name (nameOverride).
*/}}
{{- define "celcost.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The names of the release's objects: the release name, with the chart's name appended unless it
already contains it. `helm install celcost ...` gives the names of config/default (celcost,
celcost-webhook, celcost-metrics, ...). Truncated so that "-leader-election" still fits 63.
*/}}
{{- define "celcost.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 47 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 47 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 47 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "celcost.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Helm's standard labels.
*/}}
{{- define "celcost.labels" -}}
helm.sh/chart: {{ include "celcost.chart" . }}
{{ include "celcost.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "celcost.selectorLabels" -}}
app.kubernetes.io/name: {{ include "celcost.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
What selects the operator's pods (Deployment, spread, PDB, Services, ServiceMonitor).
*/}}
{{- define "celcost.podSelectorLabels" -}}
{{ include "celcost.selectorLabels" . }}
app.kubernetes.io/component: controller
{{- end }}

{{/*
Names the operator must be told when they are not its defaults (release names other than
"celcost"): the Lease, and the webhook's Service, Secret and configuration.
*/}}
{{- define "celcost.webhookService" -}}
{{ include "celcost.fullname" . }}-webhook
{{- end }}

{{- define "celcost.metricsService" -}}
{{ include "celcost.fullname" . }}-metrics
{{- end }}

{{/*
The metrics port's name: https-metrics (metrics.secure, the default) or http-metrics.
*/}}
{{- define "celcost.metricsPort" -}}
{{ if .Values.metrics.secure }}https-metrics{{ else }}http-metrics{{ end }}
{{- end }}

{{- define "celcost.webhookSecret" -}}
{{ include "celcost.fullname" . }}-webhook-tls
{{- end }}

{{- define "celcost.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/*
resources.limits.memory in MiB ("256Mi", "1Gi"), or empty for another form.
*/}}
{{- define "celcost.memoryLimitMiB" -}}
{{- $m := "" }}
{{- with .Values.resources }}{{ with .limits }}{{ with .memory }}{{ $m = toString . }}{{ end }}{{ end }}{{ end }}
{{- if regexMatch "^[0-9]+Mi$" $m }}
{{- trimSuffix "Mi" $m }}
{{- else if regexMatch "^[0-9]+Gi$" $m }}
{{- mul (trimSuffix "Gi" $m | atoi) 1024 }}
{{- end }}
{{- end }}
