{{/*
autoroll.controllerNotes: the post-install notes for the controller. Takes the root
context; returns text. Names the Secret but never prints its values.
*/}}
{{- define "autoroll.controllerNotes" -}}
{{- $fullname := include "autoroll.fullname" . -}}
autoroll {{ .Chart.AppVersion }} is watching {{ include "autoroll.workloadKinds" . | replace "," ", " }} objects labelled {{ .Values.labelSelector | quote }}
for moved tags on {{ .Values.forgejo.host }}{{ if .Values.dryRun }} (DRY RUN: it deletes nothing){{ end }}.

1. Point a Forgejo package webhook at the controller: in the settings of the user or
   organisation that owns the images, Webhooks -> Add webhook -> Forgejo, trigger on
   "Package" events (step by step: examples/forgejo-webhook.md):

     Target URL:  {{ include "autoroll.webhookUrl" . }}
     Method:      POST, content type application/json
     Secret:      the webhook secret stored under key {{ .Values.secret.webhookSecretKey | quote }} of Secret {{ include "autoroll.secretName" . | quote }}

   Forgejo delivers webhooks only to external addresses by default ([webhook]
   ALLOWED_HOST_LIST = external), so it refuses the in-cluster URL above and any
   private address. If Forgejo calls the controller inside the cluster, allow exactly
   that host in Forgejo's app.ini and restart Forgejo:

     [webhook]
     ALLOWED_HOST_LIST = external,{{ $fullname }}.{{ .Release.Namespace }}.svc

   Without a webhook the controller still polls every {{ .Values.pollIntervalSeconds }} seconds.
{{- with .Values.webhookReceivers }}
{{- $base := trimSuffix "/webhook" (include "autoroll.webhookUrl" $) }}

   The registry receivers that are on (docs/adr/025-webhook-receivers.md), each with its
   secret under its key in Secret {{ include "autoroll.secretName" $ | quote }}:
{{ range . }}
     {{ printf "%-13s" . }} {{ $base }}/webhook/{{ . }}{{ if include "autoroll.receiverTakesPathToken" . }}/<token>{{ end }}   ({{ include "autoroll.receiverVariable" . }})
{{- end }}
{{- end }}
{{- if and .Values.networkPolicy.enabled (not .Values.networkPolicy.ingressFrom) }}

   The NetworkPolicy lets nothing connect to the controller yet: list the webhook's sender
   (the ingress controller's namespace, or Forgejo's) and your metrics scraper in
   networkPolicy.ingressFrom.
{{- end }}

2. Check what the controller sees and would do: one dry pass inside the controller's pod,
   with this release's token, selector, kinds and guardrails (it deletes nothing):

     kubectl -n {{ .Release.Namespace }} exec deploy/{{ $fullname }} -- autoroll plan

   and its own view:
{{- if .Values.helmTest.enabled }}

     helm test {{ .Release.Name }} -n {{ .Release.Namespace }}   # /readyz through the Service
{{- end }}
     kubectl -n {{ .Release.Namespace }} logs deploy/{{ $fullname }}
     kubectl -n {{ .Release.Namespace }} port-forward svc/{{ $fullname }} {{ .Values.service.port }} &
     curl -s localhost:{{ .Values.service.port }}/metrics

3. Enroll an app: label its Deployment object {{ .Values.labelSelector | quote }} and set
   imagePullPolicy: Always on its containers (see examples/example-app.yaml).
{{- if and .Values.selfRoll (not .Values.image.digest) }}
{{- if ne (include "autoroll.imagePullPolicy" .) "Always" }}

WARNING: selfRoll is on but image.pullPolicy is {{ include "autoroll.imagePullPolicy" . }},
so the controller skips its own container and will not roll itself.
{{- else if hasPrefix (printf "%s/" .Values.forgejo.host) .Values.image.repository }}

The controller is enrolled in itself: a new {{ include "autoroll.image" . }} rolls it.
{{- else }}

WARNING: selfRoll is on but image.repository is not on {{ .Values.forgejo.host }},
so the controller will not roll itself.
{{- end }}
{{- end }}
{{- if include "autoroll.leaderElection" . }}

Leader election is on: {{ .Values.replicaCount }} replica(s) answer webhooks, one reconciles. The
leader is the holder of Lease {{ .Release.Namespace }}/{{ include "autoroll.fullname" . }}:
  kubectl -n {{ .Release.Namespace }} get lease {{ include "autoroll.fullname" . }}
{{- end }}
{{- end -}}

{{/*
autoroll.webhookUrl: the URL Forgejo's webhook posts to: the Ingress's, else the HTTPRoute's
first host name, else the in-cluster Service's. Takes the root context; returns the URL.
*/}}
{{- define "autoroll.webhookUrl" -}}
{{- if .Values.ingress.enabled -}}
{{ if .Values.ingress.tlsSecretName }}https{{ else }}http{{ end }}://{{ .Values.ingress.host }}/webhook
{{- else if and .Values.httpRoute.enabled .Values.httpRoute.hostnames -}}
https://{{ first .Values.httpRoute.hostnames }}/webhook
{{- else -}}
{{ printf "http://%s.%s.svc:%d/webhook" (include "autoroll.fullname" .) .Release.Namespace (int .Values.service.port) }}
{{- end -}}
{{- end -}}
