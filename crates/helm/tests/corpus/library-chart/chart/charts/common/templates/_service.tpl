{{- define "common.service" -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "common.fullname" . }}
  labels:
    {{- include "common.labels" . | nindent 4 }}
spec:
  ports:
  {{- range .Values.ports }}
    - port: {{ . }}
  {{- end }}
{{- end -}}
