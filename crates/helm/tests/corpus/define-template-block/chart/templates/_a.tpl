{{- define "user" -}}
{{ .name }}{{ if .admin }} (admin){{ end }}
{{- end -}}
{{- define "withRoot" -}}
{{ .root.Release.Name }}/{{ .item.name }}
{{- end -}}
{{- define "overridden" }}first definition{{ end -}}
