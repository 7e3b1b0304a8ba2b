{{ define "x" }}x{{ end }}
