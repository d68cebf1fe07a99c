{{/* Names and labels. */}}
{{- define "carrier-sync.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "carrier-sync.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "carrier-sync.labels" -}}
{{ include "carrier-sync.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "carrier-sync.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "carrier-sync.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The spool's access mode: as given, or RWO for one replica and RWX for several. */}}
{{- define "carrier-sync.accessMode" -}}
{{- if .Values.persistence.accessMode -}}
{{- .Values.persistence.accessMode -}}
{{- else if gt (int .Values.replicaCount) 1 -}}
ReadWriteMany
{{- else -}}
ReadWriteOnce
{{- end -}}
{{- end -}}

{{- define "carrier-sync.terminationGrace" -}}
{{- if kindIs "invalid" .Values.terminationGracePeriodSeconds -}}
{{- add (int .Values.shutdownGraceSeconds) 15 -}}
{{- else -}}
{{- int .Values.terminationGracePeriodSeconds -}}
{{- end -}}
{{- end -}}

{{/*
Refusals of combinations values.schema.json cannot express, each in one line naming the fix.
*/}}
{{- define "carrier-sync.check" -}}
{{- $mode := include "carrier-sync.accessMode" . -}}
{{- if and (gt (int .Values.replicaCount) 1) (ne $mode "ReadWriteMany") (not .Values.persistence.existingClaim) -}}
{{- fail (printf "replicaCount %d shares one spool: persistence.accessMode must be ReadWriteMany (it is %s)" (int .Values.replicaCount) $mode) -}}
{{- end -}}
{{- if le (int (include "carrier-sync.terminationGrace" .)) (int .Values.shutdownGraceSeconds) -}}
{{- fail (printf "terminationGracePeriodSeconds (%s) must be above shutdownGraceSeconds (%d): Kubernetes would kill the daemon before its in-flight work ends" (include "carrier-sync.terminationGrace" .) (int .Values.shutdownGraceSeconds)) -}}
{{- end -}}
{{- if and .Values.api.url (not .Values.secrets.existingSecret) -}}
{{- fail "api.url is set: secrets.existingSecret must name the Secret holding carrier-key (CARRIER_SYNC_CARRIER_KEY)" -}}
{{- end -}}
{{- if and (ne .Values.redis.mode "sentinel") (not .Values.redis.url) (not .Values.redis.existingSecret) -}}
{{- fail "the image has no redis-server: set redis.url, or redis.existingSecret with key redis-url" -}}
{{- end -}}
{{- if and (eq .Values.redis.mode "sentinel") (empty .Values.redis.sentinel.hosts) -}}
{{- fail "redis.mode sentinel: list the sentinels in redis.sentinel.hosts (host:port)" -}}
{{- end -}}
{{- if and (eq .Values.redis.mode "cluster") (not (regexMatch "^\\{[^{}]+\\}$" .Values.prefix)) -}}
{{- fail (printf "redis.mode cluster: prefix must be one hash tag such as {carrier-sync} (it is %s)" .Values.prefix) -}}
{{- end -}}
{{- end -}}

{{/* Secret-backed variables: env name → key in secrets.existingSecret. */}}
{{- define "carrier-sync.secretKeys" -}}
CARRIER_SYNC_CARRIER_KEY: carrier-key
CARRIER_SYNC_SELLER_GROUP_KEY: seller-group-key
CARRIER_SYNC_UI_PASSWORD: ui-password
CARRIER_SYNC_INGEST_TOKEN: ingest-token
CARRIER_SYNC_EVENTS_PULL_TOKEN: events-pull-token
CARRIER_SYNC_NOTIFY_WEBHOOK_URL: notify-webhook-url
CARRIER_SYNC_NOTIFY_WEBHOOK_SECRET: notify-webhook-secret
CARRIER_SYNC_NOTIFY_SLACK_URL: notify-slack-url
CARRIER_SYNC_NOTIFY_SMTP_URL: notify-smtp-url
{{- end -}}

{{/* The environment every carrier-sync container gets (both Deployments). */}}
{{- define "carrier-sync.env" -}}
- name: CARRIER_SYNC_PREFIX
  value: {{ .Values.prefix | quote }}
- name: CARRIER_SYNC_HTTP_PORT
  value: {{ .Values.http.port | quote }}
- name: CARRIER_SYNC_GRACE_MS
  value: {{ mul (int .Values.shutdownGraceSeconds) 1000 | quote }}
- name: LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
{{- with .Values.api.url }}
- name: CARRIER_SYNC_API_URL
  value: {{ . | quote }}
{{- end }}
{{- if .Values.redis.url }}
- name: REDIS_URL
  value: {{ .Values.redis.url | quote }}
{{- else if .Values.redis.existingSecret }}
- name: REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ .Values.redis.existingSecret }}
      key: redis-url
      optional: {{ eq .Values.redis.mode "sentinel" }}
{{- end }}
{{- if eq .Values.redis.mode "sentinel" }}
- name: CARRIER_SYNC_REDIS_SENTINELS
  value: {{ join "," .Values.redis.sentinel.hosts | quote }}
- name: CARRIER_SYNC_REDIS_SENTINEL_NAME
  value: {{ .Values.redis.sentinel.name | quote }}
{{- with .Values.redis.existingSecret }}
- name: CARRIER_SYNC_REDIS_SENTINEL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: sentinel-password
      optional: true
{{- end }}
{{- end }}
{{- if eq .Values.redis.mode "cluster" }}
- name: CARRIER_SYNC_REDIS_CLUSTER
  value: "true"
{{- end }}
{{- if .Values.redis.allowEviction }}
- name: CARRIER_SYNC_ALLOW_EVICTING_REDIS
  value: "true"
{{- end }}
{{- if .Values.redis.tls.caSecret }}
- name: NODE_EXTRA_CA_CERTS
  value: /etc/carrier-sync/redis-ca/{{ .Values.redis.tls.caKey }}
{{- end }}
{{- if .Values.secrets.existingSecret }}
{{- $secret := .Values.secrets.existingSecret }}
{{- $needsKey := not (empty .Values.api.url) }}
{{- range $name, $key := include "carrier-sync.secretKeys" . | fromYaml }}
- name: {{ $name }}
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ $key }}
      optional: {{ not (and $needsKey (eq $name "CARRIER_SYNC_CARRIER_KEY")) }}
{{- end }}
{{- end }}
{{- range $name, $value := .Values.env }}
- name: {{ $name }}
  value: {{ $value | quote }}
{{- end }}
{{- end -}}

{{/* Security contexts: non-root uid 1000 (the image's `node`), nothing writable but the spool. */}}
{{- define "carrier-sync.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 1000
runAsGroup: 1000
fsGroup: 1000
fsGroupChangePolicy: OnRootMismatch
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "carrier-sync.containerSecurityContext" -}}
runAsNonRoot: true
runAsUser: 1000
runAsGroup: 1000
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
privileged: false
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "carrier-sync.probes" -}}
startupProbe:
  httpGet: { path: /healthz, port: http }
  periodSeconds: {{ .Values.probes.startup.periodSeconds }}
  failureThreshold: {{ .Values.probes.startup.failureThreshold }}
  timeoutSeconds: {{ .Values.probes.startup.timeoutSeconds }}
livenessProbe:
  httpGet: { path: /healthz, port: http }
  periodSeconds: {{ .Values.probes.liveness.periodSeconds }}
  failureThreshold: {{ .Values.probes.liveness.failureThreshold }}
  timeoutSeconds: {{ .Values.probes.liveness.timeoutSeconds }}
readinessProbe:
  httpGet: { path: /readyz, port: http }
  periodSeconds: {{ .Values.probes.readiness.periodSeconds }}
  failureThreshold: {{ .Values.probes.readiness.failureThreshold }}
  timeoutSeconds: {{ .Values.probes.readiness.timeoutSeconds }}
{{- end -}}

{{/* The parts of a pod spec both Deployments share. */}}
{{- define "carrier-sync.podCommon" -}}
serviceAccountName: {{ include "carrier-sync.serviceAccountName" . }}
automountServiceAccountToken: false
# No Service environment variables: a Service named carrier-sync would inject CARRIER_SYNC_PORT=tcp://…
enableServiceLinks: false
terminationGracePeriodSeconds: {{ include "carrier-sync.terminationGrace" . }}
securityContext:
  {{- include "carrier-sync.podSecurityContext" . | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{- define "carrier-sync.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
