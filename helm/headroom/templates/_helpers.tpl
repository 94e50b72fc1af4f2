{{/*
Names, labels and the process contract (subcommands and flags of the `headroom` binary).
Flag names used by the chart appear only in this file.
*/}}

{{- define "headroom.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "headroom.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "headroom.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "headroom.labels" -}}
helm.sh/chart: {{ include "headroom.chart" . }}
app.kubernetes.io/name: {{ include "headroom.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: headroom
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Selector labels; call with (dict "ctx" $ "component" "router"|"group") */}}
{{- define "headroom.selectorLabels" -}}
app.kubernetes.io/name: {{ include "headroom.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "headroom.routerName" -}}{{ include "headroom.fullname" . }}-router{{- end -}}
{{- define "headroom.groupName" -}}{{ include "headroom.fullname" . }}-group{{- end -}}
{{/* Headless Service the router resolves (ready group pods only). */}}
{{- define "headroom.groupHeadlessName" -}}{{ include "headroom.fullname" . }}-group-headless{{- end -}}
{{/* Headless Service for scraping (includes pods that are loading or draining). */}}
{{- define "headroom.groupMetricsName" -}}{{ include "headroom.fullname" . }}-group-metrics{{- end -}}
{{- define "headroom.engineConfigName" -}}{{ include "headroom.fullname" . }}-engine{{- end -}}

{{- define "headroom.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "headroom.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "headroom.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "headroom.apiKeySecretName" -}}
{{- default (printf "%s-api-key" (include "headroom.fullname" .)) .Values.apiKey.existingSecret -}}
{{- end -}}

{{- define "headroom.apiKeyDir" -}}/etc/headroom{{- end -}}
{{- define "headroom.engineConfigDir" -}}/etc/headroom/engine{{- end -}}

{{/* Tensor parallel size = GPUs per group pod = ranks per group pod. */}}
{{- define "headroom.tp" -}}
{{- int (index .Values.engine "tensor-parallel-size") -}}
{{- end -}}

{{- define "headroom.groupGracePeriod" -}}
{{- if .Values.group.terminationGracePeriodSeconds -}}
{{- int .Values.group.terminationGracePeriodSeconds -}}
{{- else -}}
{{- add (int .Values.group.preStopSleepSeconds) (int .Values.group.drainTimeoutS) 30 -}}
{{- end -}}
{{- end -}}

{{/* All engine flags (vLLM names) as a YAML list of argv words. */}}
{{- define "headroom.engineArgs" -}}
{{- $flags := merge (deepCopy .Values.extraEngineFlags) (deepCopy .Values.engine) -}}
{{- $args := list -}}
{{- range $k := keys $flags | sortAlpha -}}
{{- $v := index $flags $k -}}
{{- if kindIs "bool" $v -}}
{{- if $v -}}{{- $args = append $args (printf "--%s" $k) -}}{{- end -}}
{{- else if kindIs "slice" $v -}}
{{- /* A list flag (vLLM's nargs='+', e.g. lora-modules): the flag, then each value. */ -}}
{{- if $v -}}
{{- $args = append $args (printf "--%s" $k) -}}
{{- range $item := $v -}}{{- $args = append $args (toString $item) -}}{{- end -}}
{{- end -}}
{{- else if and (not (kindIs "invalid" $v)) (ne (toString $v) "") -}}
{{- $args = append $args (printf "--%s" $k) -}}
{{- if kindIs "float64" $v -}}
{{- $args = append $args (regexReplaceAll "\\.0$" (toString $v) "") -}}
{{- else -}}
{{- $args = append $args (toString $v) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toYaml $args -}}
{{- end -}}

{{- define "headroom.modelArg" -}}
{{- $m := .Values.group.model.name -}}
{{- if or (hasPrefix "/" $m) (hasPrefix "dummy:" $m) (eq .Values.group.model.source "none") -}}
{{- $m -}}
{{- else -}}
{{- printf "%s/%s" (trimSuffix "/" .Values.group.model.mountPath) $m -}}
{{- end -}}
{{- end -}}

{{/* argv of the worker group container (after the `headroom` entrypoint). */}}
{{- define "headroom.workerArgs" -}}
{{- $args := list "worker" "--model" (include "headroom.modelArg" .) -}}
{{- $args = concat $args (fromYamlArray (include "headroom.engineArgs" .)) -}}
{{- $args = concat $args (list "--port" (toString .Values.ports.worker) "--metrics-port" (toString .Values.ports.workerMetrics) "--drain-timeout-s" (toString (int .Values.group.drainTimeoutS))) -}}
{{- $args = concat $args (list "--step-stall-timeout-s" (toString (int .Values.group.stepStallTimeoutS))) -}}
{{- $args = concat $args .Values.group.extraArgs -}}
{{- toYaml $args -}}
{{- end -}}

{{/* --discovery target of the router. */}}
{{- define "headroom.discovery" -}}
{{- $port := int .Values.ports.worker -}}
{{- $domain := .Values.router.clusterDomain -}}
{{- $headless := printf "%s.%s.svc.%s" (include "headroom.groupHeadlessName" .) .Release.Namespace $domain -}}
{{- if eq .Values.router.discovery.mode "static" -}}
{{- $targets := .Values.router.discovery.static -}}
{{- if not $targets -}}
{{- $targets = list -}}
{{- range $i := until (int .Values.group.replicas) -}}
{{- $targets = append $targets (printf "%s-%d.%s:%d" (include "headroom.groupName" $) $i $headless $port) -}}
{{- end -}}
{{- end -}}
{{- printf "static:///%s" (join "," $targets) -}}
{{- else -}}
{{- printf "dns:///%s:%d" $headless $port -}}
{{- end -}}
{{- end -}}

{{/* argv of the router container (after the `headroom` entrypoint). */}}
{{- define "headroom.routerArgs" -}}
{{- $args := list "router" "--http-port" (toString .Values.ports.routerHttp) "--grpc-port" (toString .Values.ports.routerGrpc) "--discovery" (include "headroom.discovery" .) -}}
{{- if .Values.apiKey.enabled -}}
{{- $args = concat $args (list "--api-key-file" (printf "%s/%s" (include "headroom.apiKeyDir" .) .Values.apiKey.secretKey)) -}}
{{- end -}}
{{- if .Values.router.maxQueueLen -}}
{{- $args = concat $args (list "--max-queue-len" (toString (int .Values.router.maxQueueLen))) -}}
{{- end -}}
{{- if .Values.router.requestTimeoutS -}}
{{- $args = concat $args (list "--request-timeout-s" (toString (int .Values.router.requestTimeoutS))) -}}
{{- end -}}
{{- $args = concat $args (list "--shutdown-timeout-s" (toString (int .Values.router.shutdownTimeoutS))) -}}
{{- $args = concat $args (list "--prefix-affinity-weight" (toString .Values.router.prefixAffinityWeight)) -}}
{{- $silence := int .Values.router.groupSilenceTimeoutS -}}
{{- if and (gt $silence 0) (lt $silence 3) -}}
{{- fail (printf "router.groupSilenceTimeoutS (%d) must be 0 (never) or at least 3: a group is out of placement after 2 s without a report" $silence) -}}
{{- end -}}
{{- $args = concat $args (list "--group-silence-timeout-s" (toString $silence)) -}}
{{- if .Values.router.maxConnections -}}
{{- $args = concat $args (list "--max-connections" (toString (int .Values.router.maxConnections))) -}}
{{- end -}}
{{- $args = concat $args .Values.router.extraArgs -}}
{{- toYaml $args -}}
{{- end -}}
