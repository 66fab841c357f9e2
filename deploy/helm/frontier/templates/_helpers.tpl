{{/* Names, labels and the pieces every service's objects share. */}}

{{- define "frontier.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "frontier.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The object name of a component: <fullname>-<component>. */}}
{{- define "frontier.component" -}}
{{- printf "%s-%s" (include "frontier.fullname" .root) .component | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "frontier.selectorLabels" -}}
app.kubernetes.io/name: {{ include "frontier.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "frontier.labels" -}}
{{ include "frontier.selectorLabels" . }}
app.kubernetes.io/part-of: frontier
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* Labels common to the whole release (the ConfigMap, the Secret). */}}
{{- define "frontier.commonLabels" -}}
app.kubernetes.io/name: {{ include "frontier.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: frontier
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/*
A service's image (dict root, tag): the service's own `image.tag` when set, else the
global `image.tag`, else the chart's appVersion; one repository for all. Per-service tags
make the ordered upgrade of deploy/README.md possible (one service at a time).
*/}}
{{- define "frontier.image" -}}
{{- $root := .root -}}
{{- $tag := default (default $root.Chart.AppVersion $root.Values.image.tag) .tag -}}
{{- printf "%s:%s" $root.Values.image.repository $tag -}}
{{- end -}}

{{- define "frontier.secretName" -}}
{{- default (include "frontier.fullname" .) .Values.secrets.existingSecret -}}
{{- end -}}

{{/*
The bot-job stream, derived from the platform namespace exactly as
libs/platform/src/names.rs does (Namespace::bot_jobs_stream): upper case, `-` → `_`,
then `_BOT_JOBS`. The services get the same namespace (FRONTIER_NAMESPACE).
*/}}
{{- define "frontier.botJobsStream" -}}
{{- printf "%s_BOT_JOBS" (.Values.platform.namespace | upper | replace "-" "_") -}}
{{- end -}}

{{/*
The finished-games stream fair play consumes, derived like
libs/platform/src/names.rs's Namespace::finished_games_stream: upper case, `-` → `_`, then
`_GAMES`.
*/}}
{{- define "frontier.finishedGamesStream" -}}
{{- printf "%s_GAMES" (.Values.platform.namespace | upper | replace "-" "_") -}}
{{- end -}}

{{/* The durable consumer every bot-worker shares (names.rs: BOT_WORKERS_CONSUMER). */}}
{{- define "frontier.botWorkersConsumer" -}}
bot-workers
{{- end -}}

{{- define "frontier.natsMonitoringEndpoint" -}}
{{- if .Values.nats.monitoringEndpoint -}}
{{- .Values.nats.monitoringEndpoint -}}
{{- else if .Values.dev.enabled -}}
{{- printf "%s-nats.%s.svc.cluster.local:8222" (include "frontier.fullname" .) .Release.Namespace -}}
{{- else -}}
{{- /* The NATS of the default natsUrl (`nats`), as KEDA's operator, in its own namespace, must name it. */ -}}
{{- printf "nats.%s.svc.cluster.local:8222" .Release.Namespace -}}
{{- end -}}
{{- end -}}

{{/* Seconds a pod may take to stop: the preStop sleep, the drain, a margin. */}}
{{- define "frontier.terminationGrace" -}}
{{- add .Values.platform.preStopSleepSeconds .Values.platform.drainTimeoutSeconds .Values.platform.terminationMarginSeconds -}}
{{- end -}}

{{/* The restricted security context of every container. */}}
{{- define "frontier.containerSecurityContext" -}}
runAsNonRoot: true
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Spread a component's pods across zones and nodes, best effort. */}}
{{- define "frontier.topologySpread" -}}
{{- if .root.Values.topologySpread -}}
topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: topology.kubernetes.io/zone
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchLabels:
        {{- include "frontier.selectorLabels" . | nindent 8 }}
  - maxSkew: 1
    topologyKey: kubernetes.io/hostname
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchLabels:
        {{- include "frontier.selectorLabels" . | nindent 8 }}
{{- end }}
{{- end -}}

{{/* A Secret key as an environment variable: (list NAME KEY root [optional]). An optional
key may be missing from the Secret (an existingSecret made before it existed). */}}
{{- define "frontier.secretEnv" -}}
- name: {{ index . 0 }}
  valueFrom:
    secretKeyRef:
      name: {{ include "frontier.secretName" (index . 2) }}
      key: {{ index . 1 }}
      {{- if and (gt (len .) 3) (index . 3) }}
      optional: true
      {{- end }}
{{- end -}}

{{/*
A component's own ServiceAccount (dict root, component): no token is mounted, since no
Frontier pod calls the Kubernetes API (KEDA reads NATS's monitoring port from its own
operator, with no TriggerAuthentication). The pods set automountServiceAccountToken: false
as well.
*/}}
{{- define "frontier.serviceAccount" -}}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "frontier.component" . }}
  labels:
    {{- include "frontier.labels" . | nindent 4 }}
automountServiceAccountToken: false
{{- end -}}

{{/*
What values.schema.json cannot say (JSON Schema does not compare two fields), refused when
the chart renders (services.yaml includes this first): an autoscaler's maxReplicas under
its minReplicas. Checked whether or not the autoscaler is enabled, so that switching it on
later cannot meet a contradiction; deploy/check/bad-values/ has a case for each service.
*/}}
{{- define "frontier.validate" -}}
{{- range $key := list "gateway" "gameSession" "matchmaking" -}}
{{- $a := (index $.Values $key).autoscaling -}}
{{- if lt (int $a.maxReplicas) (int $a.minReplicas) -}}
{{- fail (printf "%s.autoscaling.maxReplicas (%d) is below %s.autoscaling.minReplicas (%d): it must be at least as many" $key (int $a.maxReplicas) $key (int $a.minReplicas)) -}}
{{- end -}}
{{- end -}}
{{- $f := .Values.fairplay.scaling -}}
{{- if lt (int $f.maxReplicas) (int $f.minReplicas) -}}
{{- fail (printf "fairplay.scaling.maxReplicas (%d) is below fairplay.scaling.minReplicas (%d): it must be at least as many (KEDA's maxReplicaCount and minReplicaCount, or the fallback HPA's)" (int $f.maxReplicas) (int $f.minReplicas)) -}}
{{- end -}}
{{- $s := .Values.botWorker.scaling -}}
{{- if lt (int $s.maxReplicas) (int $s.minReplicas) -}}
{{- fail (printf "botWorker.scaling.maxReplicas (%d) is below botWorker.scaling.minReplicas (%d): it must be at least as many (KEDA's maxReplicaCount and minReplicaCount, or the fallback HPA's)" (int $s.maxReplicas) (int $s.minReplicas)) -}}
{{- end -}}
{{- end -}}
