{{/* render a value that may contain templates: a string or a structure */}}
{{- define "idioms.tplvalues.render" -}}
{{- $value := typeIs "string" .value | ternary .value (.value | toYaml) }}
{{- if contains "{{" (toJson .value) }}
  {{- if .scope }}
      {{- tpl (cat "{{- with $.RelativeScope -}}" $value "{{- end }}") (merge (dict "RelativeScope" .scope) .context) }}
  {{- else }}
    {{- tpl $value .context }}
  {{- end }}
{{- else }}
    {{- $value }}
{{- end }}
{{- end -}}

{{- define "idioms.images.image" -}}
{{- $registry := .imageRoot.registry -}}
{{- if .global }}{{- if .global.imageRegistry }}{{- $registry = .global.imageRegistry -}}{{- end -}}{{- end -}}
{{- $tag := include "idioms.tplvalues.render" (dict "value" .imageRoot.tag "context" .context) -}}
{{- printf "%s/%s:%s" $registry .imageRoot.repository $tag -}}
{{- end -}}

{{- define "idioms.labels" -}}
{{- $default := dict "app.kubernetes.io/name" .context.Chart.Name "app.kubernetes.io/instance" .context.Release.Name -}}
{{- $custom := include "idioms.tplvalues.render" (dict "value" .customLabels "context" .context) | fromYaml -}}
{{- toYaml (merge $custom $default) -}}
{{- end -}}

{{- define "idioms.resources.preset" -}}
{{- $presets := dict "small" (dict "requests" (dict "cpu" "250m" "memory" "256Mi") "limits" (dict "cpu" "375m" "memory" "384Mi")) "large" (dict "requests" (dict "cpu" "1" "memory" "2Gi")) -}}
{{- if hasKey $presets .type -}}
{{- index $presets .type | toYaml -}}
{{- else -}}
{{- printf "ERROR: Preset key '%s' invalid. Allowed values are %s" .type (join "," (keys $presets | sortAlpha)) | fail -}}
{{- end -}}
{{- end -}}

{{- define "idioms.kubeVersion" -}}
{{- default (default .Capabilities.KubeVersion.Version .Values.kubeVersionOverride) ((.Values.global).kubeVersion) -}}
{{- end -}}
