{{- define "common.fullname" -}}
{{ .Release.Name }}-{{ .Values.name }}
{{- end -}}
{{- define "common.labels" -}}
app: {{ include "common.fullname" . }}
chart: {{ .Chart.Name }}
{{- end -}}
