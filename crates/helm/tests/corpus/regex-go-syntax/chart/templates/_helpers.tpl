{{- define "regexes.group" -}}
{{- $g := tpl (.Values.group | default "") . -}}
{{- if regexMatch "^[\\w-\\.]+$" $g -}}{{ $g }}{{- else -}}{{ required "A valid group is required (matching ^[\\w-\\.]+$)" "" }}{{- end -}}
{{- end -}}
