{{ define "sub.name" }}defined-in-a-subchart-{{ .Chart.Name }}{{ end }}
