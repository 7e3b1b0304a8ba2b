{{- define "overridden" }}second definition (later file wins){{ end -}}
