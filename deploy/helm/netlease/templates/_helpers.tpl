{{/* The image both workers and install-cni run; `netlease.imageOf` with a component's own tag. */}}
{{- define "netlease.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}
{{- define "netlease.imageOf" -}}
{{- if .tag -}}
{{ .root.Values.image.repository }}:{{ .tag }}
{{- else -}}
{{ include "netlease.image" .root }}
{{- end -}}
{{- end }}

{{- define "netlease.labels" -}}
app.kubernetes.io/part-of: netlease
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
{{- end }}

{{/* The `temporal` settings every part shares (domain/config TemporalConnectionSchema). */}}
{{- define "netlease.temporal" -}}
{{- $t := dict "address" .Values.temporal.address "namespace" .Values.temporal.namespace "taskQueue" .Values.temporal.taskQueue -}}
{{- if .Values.temporal.tls.enabled -}}
{{- $tls := dict -}}
{{- if .Values.temporal.tls.secretName -}}
{{- $_ := set $tls "serverRootCACertificateFile" "/etc/netlease/tls/ca.crt" -}}
{{- end -}}
{{- if .Values.temporal.tls.clientCertificate -}}
{{- $_ := set $tls "clientCertFile" "/etc/netlease/tls/tls.crt" -}}
{{- $_ := set $tls "clientKeyFile" "/etc/netlease/tls/tls.key" -}}
{{- end -}}
{{- with .Values.temporal.tls.serverNameOverride -}}
{{- $_ := set $tls "serverNameOverride" . -}}
{{- end -}}
{{- $_ := set $t "tls" $tls -}}
{{- end -}}
{{- toYaml $t -}}
{{- end }}

{{/* KUBERNETES_SERVICE_HOST/PORT when kubernetesApi names the API server (no kube-proxy). */}}
{{- define "netlease.kubernetesApiEnv" -}}
{{- if .Values.kubernetesApi.host -}}
- { name: KUBERNETES_SERVICE_HOST, value: {{ .Values.kubernetesApi.host | quote }} }
- { name: KUBERNETES_SERVICE_PORT, value: {{ .Values.kubernetesApi.port | toString | quote }} }
{{- end }}
{{- end }}

{{/* The TLS Secret's volume and mount, when TLS names one. */}}
{{- define "netlease.tlsMount" -}}
{{- if and .Values.temporal.tls.enabled .Values.temporal.tls.secretName -}}
- { name: temporal-tls, mountPath: /etc/netlease/tls, readOnly: true }
{{- end }}
{{- end }}
{{- define "netlease.tlsVolume" -}}
{{- if and .Values.temporal.tls.enabled .Values.temporal.tls.secretName -}}
- name: temporal-tls
  secret: { secretName: {{ .Values.temporal.tls.secretName }} }
{{- end }}
{{- end }}

{{/* A host directory of the node (per node under it with hostPaths.perNode). */}}
{{- define "netlease.hostDir" -}}
{{- if .root.Values.hostPaths.perNode -}}
{{ .path }}/$(NETLEASE_NODE_NAME)
{{- else -}}
{{ .path }}
{{- end -}}
{{- end }}

{{/*
The node agent pod's mounts, by volume name. Host directories are mounted where the agent and
install-cni look by default; with hostPaths.perNode, each node's own subdirectory of them.
*/}}
{{- define "netlease.nodeMounts" -}}
{{- $perNode := .root.Values.hostPaths.perNode -}}
{{- $mounts := dict
  "config" "{ name: config, mountPath: /etc/netlease, readOnly: true }"
  "tmp" "{ name: tmp, mountPath: /tmp }"
  "netns" (printf "{ name: netns, mountPath: %s, mountPropagation: HostToContainer }" .root.Values.hostPaths.netns)
  "run" "{ name: run, mountPath: /run/netlease%s }"
  "state" "{ name: state, mountPath: /var/lib/netlease%s }"
  "cni-bin" "{ name: cni-bin, mountPath: /host/opt/cni/bin%s }"
  "cni-conf" "{ name: cni-conf, mountPath: /host/etc/cni/net.d%s }"
-}}
{{- range .names }}
{{- $mount := get $mounts . }}
{{- if contains "%s" $mount }}
{{- $mount = printf $mount (ternary ", subPathExpr: $(NETLEASE_NODE_NAME)" "" $perNode) }}
{{- end }}
- {{ $mount }}
{{- end }}
{{- end }}
