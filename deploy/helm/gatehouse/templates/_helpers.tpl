{{/* The chart's name. */}}
{{- define "gatehouse.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's name for its objects: the release name, with the chart's unless it holds it. */}}
{{- define "gatehouse.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "gatehouse.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gatehouse.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "gatehouse.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "gatehouse.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "gatehouse.secretName" -}}
{{- .Values.existingSecret | default (include "gatehouse.fullname" .) -}}
{{- end -}}

{{- define "gatehouse.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "gatehouse.fullname" .) -}}
{{- else -}}
{{- .Values.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{/* The gateway's config: the values' config with what the chart sets. */}}
{{- define "gatehouse.config" -}}
{{- $cfg := deepCopy (.Values.config | default dict) -}}
{{- range $k := list "listen" "shutdownDrain" "shutdownTimeout" "metrics" -}}
{{- if hasKey $cfg $k -}}
{{- fail (printf "config.%s is set by the chart: remove it from config (see values.yaml: containerPort, shutdown, metrics)" $k) -}}
{{- end -}}
{{- end -}}
{{- $_ := set $cfg "listen" (printf "0.0.0.0:%d" (int .Values.containerPort)) -}}
{{- $_ := set $cfg "shutdownDrain" (printf "%ds" (int .Values.shutdown.drainSeconds)) -}}
{{- $_ := set $cfg "shutdownTimeout" (printf "%ds" (int .Values.shutdown.timeoutSeconds)) -}}
{{- if .Values.metrics.enabled -}}
{{- $_ := set $cfg "metrics" (dict "listen" (printf "0.0.0.0:%d" (int .Values.metrics.port)) "allowRemote" true) -}}
{{- end -}}
{{- if not (hasKey $cfg "store") -}}
{{- $_ := set $cfg "store" "sqlite:/var/lib/gatehouse/gatehouse.db" -}}
{{- end -}}
{{- toYaml $cfg -}}
{{- end -}}

{{/* validate fails the render on values that cannot work, saying what to change. */}}
{{- define "gatehouse.validate" -}}
{{- $v := .Values -}}
{{- if not (has $v.kind (list "StatefulSet" "Deployment")) -}}
{{- fail (printf "kind %q: use StatefulSet or Deployment" (toString $v.kind)) -}}
{{- end -}}
{{- if lt (int $v.shutdown.drainSeconds) 0 -}}
{{- fail "shutdown.drainSeconds must not be negative (0: no drain)" -}}
{{- end -}}
{{- if le (int $v.shutdown.timeoutSeconds) 0 -}}
{{- fail "shutdown.timeoutSeconds must be positive" -}}
{{- end -}}
{{- $need := add (int $v.shutdown.drainSeconds) (int $v.shutdown.timeoutSeconds) -}}
{{- if le (int $v.terminationGracePeriodSeconds) $need -}}
{{- fail (printf "terminationGracePeriodSeconds %d must be larger than shutdown.drainSeconds + shutdown.timeoutSeconds (%d), or Kubernetes kills the pod while it drains or finishes its calls" (int $v.terminationGracePeriodSeconds) $need) -}}
{{- end -}}
{{- $sqlite := and (not $v.existingSecret) (not $v.store.dsn) (hasPrefix "sqlite:" (toString ((($v.config | default dict)).store | default "sqlite:"))) -}}
{{- if and $sqlite (or (gt (int $v.replicaCount) 1) $v.autoscaling.enabled) -}}
{{- fail "more than one replica (or autoscaling) needs a PostgreSQL store: set store.dsn or existingSecret (a SQLite file serves one process)" -}}
{{- end -}}
{{- if and $v.autoscaling.enabled (gt (int $v.autoscaling.minReplicas) (int $v.autoscaling.maxReplicas)) -}}
{{- fail "autoscaling.minReplicas is larger than autoscaling.maxReplicas" -}}
{{- end -}}
{{- if eq (int $v.containerPort) (int $v.metrics.port) -}}
{{- fail "metrics.port must differ from containerPort" -}}
{{- end -}}
{{- end -}}
