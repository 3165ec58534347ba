{{/*
Reused values from an older release (docs/adr/022-upgrades-and-private-registries.md).

`helm upgrade --reuse-values` renders the new templates with the old release's values: the
old chart's defaults plus what the user set, and none of the defaults this chart added. Every
key added since 0.2.0 would then be nil (helm/helm#3655, #9000). The helpers below put the
missing ones back, each with the default values.yaml gives it, so the templates render the
same with or without them. The README's command (`--reset-then-reuse-values`) never needs this;
it is the net under the command users already have in their shell history.

When you add a value: add it to autoroll.compat.addedSince020 with the same default. That
includes a jobDefaults key whose absence renders as its empty default (imagePullSecrets), so
the rule needs no exception; one that autoroll.jobs.builtinDefaults (layer 0) holds is covered there.
tests/integration/test_chart_compat.py renders the chart with each added key removed and fails when
the output differs from the defaults' (or when a new key is missing from the list).
*/}}

{{/*
autoroll.compat.addedSince020: the values this chart has that chart 0.2.0 did not, with
their values.yaml defaults, as YAML. Takes the root context (unused). Keep the defaults equal
to values.yaml's.
*/}}
{{- define "autoroll.compat.addedSince020" -}}
forgejo:
  scheme: https
  pullSecrets: false
registries: []
secret:
  mountAsFiles: true
  receivers: {}
webhookReceivers: []
probePort: 8081
tenancy:
  namespaces: []
  namespaced: false
  registryLookupsPerNamespace: 200
workloadKinds: [deployment, statefulset, daemonset]
watchCache:
  enabled: true
  resyncSeconds: 1800
guardrails:
  budget:
    deletions: 30
    periodSeconds: 60
    inFlight: 10
  minAgeSeconds: 0
  window: ""
  paused: false
  healthySeconds: 0
  platformAware: false
rolloutHaltedAfterSeconds: 600
apiServer:
  host: ""
  port: 443
hostNetwork: false
caBundle:
  configMap: ""
  secret: ""
  key: ca.crt
  pem: ""
extraEnv: []
extraEnvFrom: []
extraVolumes: []
extraVolumeMounts: []
podDisruptionBudget:
  enabled: true
  minAvailable: 1
topologySpreadConstraints: []
helmTest:
  enabled: true
prometheusRule:
  enabled: false
  labels: {}
  selector: ""
  for:
    rolloutHalted: 5m
    passesFailing: 10m
    registryUnknown: 30m
    noLeader: 5m
    webhookSignatureFailures: 10m
  webhookFailuresPer10m: 5
grafanaDashboard:
  enabled: false
  labels:
    grafana_dashboard: "1"
  namespace: ""
  annotations: {}
jobDefaults:
  imagePullSecrets: []
{{- end -}}

{{/*
autoroll.compat.fill: sets, in place, each key of dict "from" that dict "into" lacks (or holds
as null), to a deep copy of its value, and recurses where both hold a map. A key "into" has
keeps its value, false, 0 and "" included (Sprig's merge would let those lose). Takes
(dict "into" <map> "from" <map>); returns nothing.
*/}}
{{- define "autoroll.compat.fill" -}}
{{- $into := .into -}}
{{- range $key, $default := .from -}}
{{- $have := get $into $key -}}
{{- if or (not (hasKey $into $key)) (kindIs "invalid" $have) -}}
{{- $_ := set $into $key (deepCopy $default) -}}
{{- else if and (kindIs "map" $default) (kindIs "map" $have) -}}
{{- include "autoroll.compat.fill" (dict "into" $have "from" $default) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
autoroll.compat.backfill: fills .Values with autoroll.compat.addedSince020 where a reused
older release lacks a key. Takes the root context; returns nothing. Idempotent, so every
template that reads an added key includes it first, whatever order Helm renders them in.
*/}}
{{- define "autoroll.compat.backfill" -}}
{{- include "autoroll.compat.fill" (dict "into" .Values "from" (include "autoroll.compat.addedSince020" . | fromYaml)) -}}
{{- end -}}
