{{/*
One Frontier service: its Deployment, its Service (its port if it has one, and the admin
port for /metrics), its PodDisruptionBudget. Called with a dict:
  root       the top context
  component  the service's name, also its subcommand (`frontier <component>`)
  values     its values (.Values.gateway, …)
  port       its listening port, or 0 (clock, bot-worker: admin port only)
  portName   `http` or `grpc`
  secrets    list of (list ENV_VAR secret-key): only the secrets this service uses
  env        extra environment variables of this service ([{name, value}])
  scaled     true when an HPA or KEDA owns the replica count (spec.replicas left out)
*/}}
{{- define "frontier.workload" -}}
{{- $root := .root -}}
{{- $v := .values -}}
{{- $ctx := dict "root" $root "component" .component -}}
{{- $name := include "frontier.component" $ctx -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ $name }}
  labels:
    {{- include "frontier.labels" $ctx | nindent 4 }}
spec:
  {{- if not .scaled }}
  replicas: {{ $v.replicas }}
  {{- end }}
  revisionHistoryLimit: 5
  strategy:
    type: RollingUpdate
    rollingUpdate:
      # Capacity is kept during a rollout: a new pod is ready before an old one goes.
      maxSurge: 25%
      maxUnavailable: 0
  selector:
    matchLabels:
      {{- include "frontier.selectorLabels" $ctx | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "frontier.selectorLabels" $ctx | nindent 8 }}
      {{- $annotations := deepCopy (default (dict) $v.podAnnotations) }}
      {{- if $root.Values.configChecksum }}
      {{- /* A changed configuration or secret rolls the pods. */}}
      {{- $_ := set $annotations "checksum/config" (print (include (print $root.Template.BasePath "/config.yaml") $root) (include (print $root.Template.BasePath "/secret.yaml") $root) | sha256sum) }}
      {{- end }}
      {{- with $annotations }}
      annotations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    spec:
      # Its own ServiceAccount, without a token: no service calls the Kubernetes API.
      serviceAccountName: {{ $name }}
      automountServiceAccountToken: false
      enableServiceLinks: false
      # preStop sleep + drain (--drain-timeout) + margin: the drain is never cut short.
      terminationGracePeriodSeconds: {{ include "frontier.terminationGrace" $root }}
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        runAsGroup: 65532
        fsGroup: 65532
        seccompProfile:
          type: RuntimeDefault
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with include "frontier.topologySpread" $ctx }}
      {{- . | nindent 6 }}
      {{- end }}
      {{- with $v.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: {{ .component }}
          image: {{ include "frontier.image" (dict "root" $root "tag" $v.image.tag) }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          args: [{{ .component | quote }}]
          ports:
            {{- if .port }}
            - name: {{ .portName }}
              containerPort: {{ .port }}
              protocol: TCP
            {{- end }}
            - name: admin
              containerPort: 9100
              protocol: TCP
          envFrom:
            - configMapRef:
                name: {{ include "frontier.fullname" $root }}
          env:
            {{- range .secrets }}
            {{- include "frontier.secretEnv" (list (index . 0) (index . 1) $root (and (gt (len .) 2) (index . 2))) | nindent 12 }}
            {{- end }}
            {{- with .env }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
            {{- with $root.Values.platform.extraEnv }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
            {{- with $v.extraEnv }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          # Started: the process answers at all (the gateway and rating apply their
          # migrations before the admin port opens).
          startupProbe:
            httpGet: {path: /healthz, port: admin}
            periodSeconds: 2
            failureThreshold: 60
          # The admin port closes at the first SIGTERM: liveness allows more failures than
          # the drain lasts, so a draining pod is never restarted.
          livenessProbe:
            httpGet: {path: /healthz, port: admin}
            periodSeconds: 10
            timeoutSeconds: 3
            failureThreshold: {{ add (div $root.Values.platform.drainTimeoutSeconds 10) 3 }}
          # Ready: every dependency answers. The admin listener closes at the first
          # SIGTERM, so readiness fails from then on.
          readinessProbe:
            httpGet: {path: /readyz, port: admin}
            periodSeconds: 5
            timeoutSeconds: 3
            failureThreshold: 2
          lifecycle:
            # Endpoints and load balancers drop the pod while it still serves; SIGTERM
            # (the drain) comes after.
            preStop:
              sleep:
                seconds: {{ $root.Values.platform.preStopSleepSeconds }}
          resources:
            {{- toYaml $v.resources | nindent 12 }}
          securityContext:
            {{- include "frontier.containerSecurityContext" $root | nindent 12 }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
      volumes:
        - name: tmp
          emptyDir:
            sizeLimit: 64Mi
---
{{ include "frontier.serviceAccount" $ctx }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ $name }}
  labels:
    {{- include "frontier.labels" $ctx | nindent 4 }}
  {{- with .serviceAnnotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  type: {{ default "ClusterIP" .serviceType }}
  selector:
    {{- include "frontier.selectorLabels" $ctx | nindent 4 }}
  ports:
    {{- if .port }}
    - name: {{ .portName }}
      port: {{ default .port .servicePort }}
      targetPort: {{ .portName }}
      protocol: TCP
      {{- if eq .portName "grpc" }}
      appProtocol: grpc
      {{- end }}
    {{- end }}
    - name: admin
      port: 9100
      targetPort: admin
      protocol: TCP
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ $name }}
  labels:
    {{- include "frontier.labels" $ctx | nindent 4 }}
spec:
  maxUnavailable: {{ $v.pdb.maxUnavailable }}
  selector:
    matchLabels:
      {{- include "frontier.selectorLabels" $ctx | nindent 6 }}
{{- end -}}

{{/* An HPA on CPU for a component: dict root, component, min, max, target. */}}
{{- define "frontier.hpa" -}}
{{- $ctx := dict "root" .root "component" .component -}}
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ include "frontier.component" $ctx }}
  labels:
    {{- include "frontier.labels" $ctx | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ include "frontier.component" $ctx }}
  minReplicas: {{ .min }}
  maxReplicas: {{ .max }}
  metrics:
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ .target }}
  behavior:
    scaleDown:
      # Scaling a gateway down moves its sockets (1001, clients resume elsewhere): slowly.
      stabilizationWindowSeconds: 300
      policies:
        - type: Pods
          value: 1
          periodSeconds: 60
{{- end -}}
