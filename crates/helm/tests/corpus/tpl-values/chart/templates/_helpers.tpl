{{- define "tplv.render" -}}
{{- if typeIs "string" .value }}{{ tpl .value .context }}{{ else }}{{ tpl (.value | toYaml) .context }}{{ end }}
{{- end -}}
