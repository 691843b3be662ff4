{{- /*
wlmvk.render: one file of manifests/ with the chart's values in place of the manifests' own
settings, as a site's kustomization would change them: the image (kustomize images:), red-box's
socket and its directory, the cluster's name (WLMVK_CLUSTER's value).
*/ -}}
{{- define "wlmvk.render" -}}
{{- $v := .Values -}}
{{- $text := .text -}}
{{- $text = replace "image: wlmvk:latest" (printf "image: %s" $v.image) $text -}}
{{- $text = replace "/var/run/syslurm/red-box.sock" "@@WLMVK_SOCKET@@" $text -}}
{{- $text = replace "/var/run/syslurm" (dir $v.redBoxSocket) $text -}}
{{- $text = replace "@@WLMVK_SOCKET@@" $v.redBoxSocket $text -}}
{{- if $v.cluster -}}
{{- $text = replace "- name: WLMVK_CLUSTER\n" (printf "- name: WLMVK_CLUSTER\n              value: %s\n" ($v.cluster | quote)) $text -}}
{{- end -}}
{{- $text -}}
{{- end -}}
