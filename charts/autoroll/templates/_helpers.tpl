{{/*
autoroll.name: the chart name, or .Values.nameOverride; at most 63 characters.
*/}}
{{- define "autoroll.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
autoroll.fullname: the prefix of every resource name. fullnameOverride wins; otherwise
"<release>-<name>", or just the release name when it already contains the chart name.
Truncated to 63 characters (a DNS-1123 label) with a trailing "-" trimmed.
jobhash/names.py mirrors this helper; keep them in sync.
*/}}
{{- define "autoroll.fullname" -}}
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

{{/*
autoroll.chart: "<chart>-<version>" for the helm.sh/chart label ("+" is not allowed in labels).
*/}}
{{- define "autoroll.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
autoroll.selectorLabels: the immutable labels a selector matches on.
*/}}
{{- define "autoroll.selectorLabels" -}}
app.kubernetes.io/name: {{ include "autoroll.name" . | quote }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
{{- end -}}

{{/*
autoroll.labels: the standard app.kubernetes.io/* set, on every object the chart renders.
*/}}
{{- define "autoroll.labels" -}}
helm.sh/chart: {{ include "autoroll.chart" . }}
{{ include "autoroll.selectorLabels" . }}
{{- if .Chart.AppVersion }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/*
autoroll.serviceAccountName: the ServiceAccount the controller runs as.
*/}}
{{- define "autoroll.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "autoroll.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/*
autoroll.image: the controller's image reference from .Values.image, "<repository>@<digest>"
when a digest is set (the tag is then ignored), else "<repository>:<tag>", the tag defaulting
to the chart's appVersion (the release this chart was made with).
*/}}
{{- define "autoroll.image" -}}
{{- $image := .Values.image -}}
{{- if $image.digest -}}
{{- printf "%s@%s" $image.repository $image.digest -}}
{{- else -}}
{{- printf "%s:%s" $image.repository (default .Chart.AppVersion $image.tag) -}}
{{- end -}}
{{- end -}}

{{/*
autoroll.imagePullPolicy: .Values.image.pullPolicy when set; otherwise "Always" for a
tag, because a mutable tag that moved must be pulled again (the controller itself skips
containers that are not Always), and "IfNotPresent" for a digest, which cannot move.
*/}}
{{- define "autoroll.imagePullPolicy" -}}
{{- if .Values.image.pullPolicy -}}
{{- .Values.image.pullPolicy -}}
{{- else if .Values.image.digest -}}
IfNotPresent
{{- else -}}
Always
{{- end -}}
{{- end -}}

{{/*
autoroll.secretName: the Secret holding the token and the webhook secret:
.Values.secret.existingSecret, or the one the chart creates ("<fullname>").
*/}}
{{- define "autoroll.secretName" -}}
{{- default (include "autoroll.fullname" .) .Values.secret.existingSecret -}}
{{- end -}}

{{/*
autoroll.secretMountPath: where the Secret is mounted read-only when secret.mountAsFiles is on
(its keys as the files forgejo-token and webhook-secret), "/var/run/secrets/autoroll".
*/}}
{{- define "autoroll.secretMountPath" -}}
/var/run/secrets/autoroll
{{- end -}}

{{/*
autoroll.validateSecret: fails unless exactly one source of the two secrets is configured:
secret.existingSecret, or both secret.forgejoToken and secret.webhookSecret (>= 16 chars);
secret.forgejoToken only when forgejo.host is set (without the Forgejo shorthand there is no
token). Renders nothing; include it from every template that needs the Secret.
*/}}
{{- define "autoroll.validateSecret" -}}
{{- $s := .Values.secret -}}
{{- if $s.existingSecret -}}
{{- if or $s.forgejoToken $s.webhookSecret -}}
{{- fail "secret.existingSecret is set together with secret.forgejoToken/secret.webhookSecret: use one source only (an existing Secret, or the two values)" -}}
{{- end -}}
{{- else -}}
{{- $missing := list -}}
{{- if and (not $s.forgejoToken) .Values.forgejo.host }}{{ $missing = append $missing "secret.forgejoToken" }}{{ end -}}
{{- if not $s.webhookSecret }}{{ $missing = append $missing "secret.webhookSecret" }}{{ end -}}
{{- if $missing -}}
{{- fail (printf "%s: required when secret.existingSecret is empty (or name an existing Secret with secret.existingSecret)" (join ", " $missing)) -}}
{{- end -}}
{{- if lt (len $s.webhookSecret) 16 -}}
{{- fail "secret.webhookSecret: must be at least 16 characters" -}}
{{- end -}}
{{- end -}}
{{- include "autoroll.validateReceivers" . -}}
{{- end -}}

{{/*
autoroll.receiverVariable: the variable (and Secret key) holding a webhook receiver's secret.
Takes the source's name ("harbor"); fails naming webhookReceivers for an unknown one. Keep in
sync with RECEIVERS in autoroll/core/receivers/sources.py (tests/unit/test_chart_receivers.py).
*/}}
{{- define "autoroll.receiverVariable" -}}
{{- $variables := dict
  "distribution" "DISTRIBUTION_WEBHOOK_TOKEN"
  "gitlab" "GITLAB_WEBHOOK_TOKEN"
  "harbor" "HARBOR_WEBHOOK_TOKEN"
  "github" "GITHUB_WEBHOOK_SECRET"
  "dockerhub" "DOCKERHUB_WEBHOOK_TOKEN"
  "quay" "QUAY_WEBHOOK_TOKEN"
  "generic" "GENERIC_WEBHOOK_SECRET"
  "cloudevents" "CLOUDEVENTS_WEBHOOK_TOKEN" -}}
{{- if not (hasKey $variables .) -}}
{{- fail (printf "webhookReceivers: %q is not a receiver; choose from %s" . (keys $variables | sortAlpha | join ", ")) -}}
{{- end -}}
{{- get $variables . -}}
{{- end -}}

{{/*
autoroll.receiverTakesPathToken: "true" for the receivers whose token is the last part of
their URL (/webhook/<source>/<token>: Docker Hub and Quay cannot sign), else "". Takes the
source's name.
*/}}
{{- define "autoroll.receiverTakesPathToken" -}}
{{- if has . (list "dockerhub" "quay") }}true{{ end -}}
{{- end -}}

{{/*
autoroll.validateReceivers: each of webhookReceivers needs its secret: in secret.receivers
(at least 16 characters; a path token only letters, digits and ._~-) when the chart creates
the Secret, and nowhere in the values with secret.existingSecret (the key is then the
Secret's business). A secret given for a receiver not listed is refused too, so a typo never
leaves a receiver silently off. Renders nothing.
*/}}
{{- define "autoroll.validateReceivers" -}}
{{- $given := .Values.secret.receivers | default dict -}}
{{- $listed := .Values.webhookReceivers | default list -}}
{{- range $listed -}}
{{- $_ := include "autoroll.receiverVariable" . -}}
{{- end -}}
{{- if .Values.secret.existingSecret -}}
{{- if $given -}}
{{- fail (printf "secret.receivers: set together with secret.existingSecret; put each receiver's key (%s) in the existing Secret instead" (include "autoroll.receiverVariable" (keys $given | sortAlpha | first))) -}}
{{- end -}}
{{- else -}}
{{- range $source := keys $given | sortAlpha -}}
{{- if not (has $source $listed) -}}
{{- fail (printf "secret.receivers.%s: given, but %s is not in webhookReceivers; list it there to turn the receiver on, or remove the secret" $source $source) -}}
{{- end -}}
{{- end -}}
{{- range $source := $listed -}}
{{- $value := get $given $source | default "" | toString -}}
{{- if lt (len $value) 16 -}}
{{- fail (printf "secret.receivers.%s: required (at least 16 characters) while %s is in webhookReceivers and secret.existingSecret is empty" $source $source) -}}
{{- end -}}
{{- if and (include "autoroll.receiverTakesPathToken" $source) (not (regexMatch "^[A-Za-z0-9._~-]+$" $value)) -}}
{{- fail (printf "secret.receivers.%s: the token is part of the URL; use only letters, digits and . _ ~ - (e.g. openssl rand -hex 32)" $source) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
autoroll.validateRequired: fails naming forgejo.host, forgejo.user or image.repository when
empty: forgejo.host unless registries lists the registries, forgejo.user whenever
forgejo.host is set. The schema rejects these already; this guards installs run with
--skip-schema-validation. Renders nothing.
*/}}
{{- define "autoroll.validateRequired" -}}
{{- $missing := list -}}
{{- if not (or .Values.forgejo.host .Values.registries) }}{{ $missing = append $missing "forgejo.host (bare host[:port] of the Forgejo registry; or list registries)" }}{{ end -}}
{{- if and .Values.forgejo.host (not .Values.forgejo.user) }}{{ $missing = append $missing "forgejo.user (owner of the token)" }}{{ end -}}
{{- if not .Values.image.repository }}{{ $missing = append $missing "image.repository (<host>/<owner>/<repo> of the controller image)" }}{{ end -}}
{{- if $missing -}}
{{- fail (printf "required values are empty: %s" (join "; " $missing)) -}}
{{- end -}}
{{- end -}}

{{/*
autoroll.enrollmentLabels: .Values.labelSelector turned into labels, for the Deployment
object when selfRoll is on. Takes the root context; returns YAML ("key: \"value\"" lines).
Only equality terms ("k=v" or "k==v", comma-separated) can become labels; any other term
fails with a message naming labelSelector and selfRoll.
*/}}
{{- define "autoroll.enrollmentLabels" -}}
{{- range $term := splitList "," .Values.labelSelector }}
{{- $term = trim $term }}
{{- if not (regexMatch "^[A-Za-z0-9./_-]+ *==? *[A-Za-z0-9._-]*$" $term) }}
{{- fail (printf "labelSelector: term %q is not key=value, so selfRoll cannot turn it into a label; set selfRoll=false and add the labels with deploymentLabels" $term) }}
{{- end }}
{{- $kv := regexSplit " *==? *" $term 2 }}
{{ index $kv 0 }}: {{ index $kv 1 | quote }}
{{- end }}
{{- end -}}

{{/*
autoroll.workloadKinds: .Values.workloadKinds as WORKLOAD_KINDS takes it, comma-separated in
the kinds' own order ("deployment,statefulset,daemonset"). Takes the root context; fails,
naming workloadKinds, when it is not a list, is empty, repeats a kind or names an unknown
one (the schema rejects these already; this guards --skip-schema-validation). Also fails
when selfRoll is on without deployment: the controller runs as a Deployment, and a label on
an object autoroll does not list would silently never roll it.
*/}}
{{- define "autoroll.workloadKinds" -}}
{{- $known := list "deployment" "statefulset" "daemonset" -}}
{{- $given := .Values.workloadKinds -}}
{{- if not (kindIs "slice" $given) -}}
{{- fail (printf "workloadKinds: expected a list of kinds (some of %s), got %v" (join ", " $known) $given) -}}
{{- end -}}
{{- if not $given -}}
{{- fail (printf "workloadKinds: name at least one kind to roll (%s)" (join ", " $known)) -}}
{{- end -}}
{{- range $given -}}
{{- if not (has . $known) -}}
{{- fail (printf "workloadKinds: %v is not a kind autoroll rolls; expected some of %s" . (join ", " $known)) -}}
{{- end -}}
{{- end -}}
{{- if ne (len (uniq $given)) (len $given) -}}
{{- fail (printf "workloadKinds: %v names a kind twice; name each once" $given) -}}
{{- end -}}
{{- if and .Values.selfRoll (not .Values.image.digest) (not (has "deployment" $given)) -}}
{{- fail "selfRoll: the controller runs as a Deployment, which is only rolled when workloadKinds lists deployment; add it, or set selfRoll=false" -}}
{{- end -}}
{{- $kinds := list -}}
{{- range $known }}{{ if has . $given }}{{ $kinds = append $kinds . }}{{ end }}{{ end -}}
{{- join "," $kinds -}}
{{- end -}}

{{/*
autoroll.workloadResources: the apps/v1 resources the ClusterRole lets the controller list,
one per kind in workloadKinds ("deployments", "statefulsets", "daemonsets"), as a JSON list.
Takes the root context.
*/}}
{{- define "autoroll.workloadResources" -}}
{{- $resources := list -}}
{{- range splitList "," (include "autoroll.workloadKinds" .) }}{{ $resources = append $resources (printf "%ss" .) }}{{ end -}}
{{- $resources | mustToJson -}}
{{- end -}}

{{/*
autoroll.readVerbs: the verbs the ClusterRole grants on what the controller reads (the
workload kinds and pods): ["list"], and "watch" beside it when the watched cache is on
(watchCache.enabled), as a JSON list. Takes the root context.
*/}}
{{- define "autoroll.readVerbs" -}}
{{- if .Values.watchCache.enabled -}}
{{- list "list" "watch" | mustToJson -}}
{{- else -}}
{{- list "list" | mustToJson -}}
{{- end -}}
{{- end -}}

{{/*
autoroll.podRules: the rules the controller needs where it rolls, as a JSON list of RBAC
rules: list (and watch, with the watched cache) on each kind in workloadKinds and on pods,
the rollout method's one write (pods: delete, or pods/eviction: create for evict, never
both), core events: create when emitEvents is on, and secrets and serviceaccounts: get
when a registry reads the pods' pull secrets (autoroll.pullSecretRules). The ClusterRole grants them
cluster-wide; in namespaced mode (tenancy.namespaced) each watched namespace's Role grants
them there. Takes the root context.
*/}}
{{- define "autoroll.podRules" -}}
{{- $read := include "autoroll.readVerbs" . | mustFromJson -}}
{{- $rules := list (dict "apiGroups" (list "apps") "resources" (include "autoroll.workloadResources" . | mustFromJson) "verbs" $read) -}}
{{- if eq .Values.rolloutMethod "evict" -}}
{{- $rules = append $rules (dict "apiGroups" (list "") "resources" (list "pods") "verbs" $read) -}}
{{- $rules = append $rules (dict "apiGroups" (list "") "resources" (list "pods/eviction") "verbs" (list "create")) -}}
{{- else -}}
{{- $rules = append $rules (dict "apiGroups" (list "") "resources" (list "pods") "verbs" (mustAppend $read "delete")) -}}
{{- end -}}
{{- if .Values.emitEvents -}}
{{- /* core/v1 Events, the API the controller calls and `kubectl describe` reads. */ -}}
{{- $rules = append $rules (dict "apiGroups" (list "") "resources" (list "events") "verbs" (list "create")) -}}
{{- end -}}
{{- $rules = concat $rules (include "autoroll.pullSecretRules" . | mustFromJson) -}}
{{- $rules | mustToJson -}}
{{- end -}}

{{/*
autoroll.nodeRules: the cluster-scoped rule on Nodes, as a JSON list of at most one rule:
nodes: get with daemonset in workloadKinds (a DaemonSet pod is deleted only once its Node is
read Ready; one GET per deletion, never a list) and nodes: list with
guardrails.platformAware (one metadata-only list per pass: the nodes' kubernetes.io/os and
/arch labels); [] when neither is used. Nodes cannot be granted by a Role, so namespaced
mode keeps this rule, and only it, in a ClusterRole. Takes the root context.
*/}}
{{- define "autoroll.nodeRules" -}}
{{- $verbs := list -}}
{{- if has "daemonset" .Values.workloadKinds }}{{ $verbs = append $verbs "get" }}{{ end -}}
{{- if .Values.guardrails.platformAware }}{{ $verbs = append $verbs "list" }}{{ end -}}
{{- if $verbs -}}
{{- list (dict "apiGroups" (list "") "resources" (list "nodes") "verbs" $verbs) | mustToJson -}}
{{- else -}}
{{- list | mustToJson -}}
{{- end -}}
{{- end -}}

{{/*
autoroll.clusterRules: the ClusterRole's rules as a JSON list: autoroll.podRules and
autoroll.nodeRules, or in namespaced mode autoroll.nodeRules alone ([] when it is empty:
then no ClusterRole and no ClusterRoleBinding are rendered). Takes the root context.
*/}}
{{- define "autoroll.clusterRules" -}}
{{- $nodes := include "autoroll.nodeRules" . | mustFromJson -}}
{{- if include "autoroll.namespaced" . -}}
{{- $nodes | mustToJson -}}
{{- else -}}
{{- concat (include "autoroll.podRules" . | mustFromJson) $nodes | mustToJson -}}
{{- end -}}
{{- end -}}

{{/*
autoroll.namespaced: "true" in namespaced mode (tenancy.namespaced: per-namespace lists,
watches and Roles, no cluster-wide right on pods or workloads), else "". Fails, naming
tenancy.namespaces, when the mode is on without namespaces to watch. Takes the root context.
*/}}
{{- define "autoroll.namespaced" -}}
{{- if .Values.tenancy.namespaced -}}
{{- if not .Values.tenancy.namespaces -}}
{{- fail "tenancy.namespaced: needs tenancy.namespaces, the namespaces to watch and grant Roles in; name them, or set tenancy.namespaced=false to roll every namespace" -}}
{{- end -}}
true
{{- end -}}
{{- end -}}

{{/*
autoroll.tenantNamespaces: tenancy.namespaces sorted and checked, as a JSON list ([]: every
namespace). Fails, naming tenancy.namespaces, on a name that is not a DNS-1123 label or is
given twice (the schema rejects these already; this guards --skip-schema-validation), and,
naming selfRoll, when the controller would roll itself but its own namespace is not among
them (the label on its Deployment would silently never roll it). Takes the root context.
*/}}
{{- define "autoroll.tenantNamespaces" -}}
{{- $given := .Values.tenancy.namespaces | default list -}}
{{- range $given -}}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$" (toString .)) -}}
{{- fail (printf "tenancy.namespaces: %q is not a namespace name (a DNS-1123 label: lowercase letters, digits and '-', at most 63 characters)" (toString .)) -}}
{{- end -}}
{{- end -}}
{{- if ne (len (uniq $given)) (len $given) -}}
{{- fail (printf "tenancy.namespaces: %v names a namespace twice; name each once" $given) -}}
{{- end -}}
{{- if and $given .Values.selfRoll (not .Values.image.digest) (not (has .Release.Namespace $given)) -}}
{{- fail (printf "selfRoll: the controller's own namespace %q is not in tenancy.namespaces, so its Deployment would never be rolled; add it, or set selfRoll=false" .Release.Namespace) -}}
{{- end -}}
{{- sortAlpha $given | mustToJson -}}
{{- end -}}

{{/*
autoroll.tenantRoleName: the name of the Role and RoleBinding namespaced mode renders in each
watched namespace, "<fullname>-tenant" (distinct from the Lease Role's "<fullname>", which
may sit in the same namespace). Takes the root context.
*/}}
{{- define "autoroll.tenantRoleName" -}}
{{- printf "%s-tenant" (include "autoroll.fullname" .) -}}
{{- end -}}

{{/*
autoroll.networkPolicy.require: fails, naming the value, when a list the NetworkPolicy needs
is empty while networkPolicy.enabled is on (an empty peer list would otherwise mean "any
destination"). Takes dict "value" (the list), "path" (its values path) and "what" (what to
list there, for the message). Renders nothing.
*/}}
{{- define "autoroll.networkPolicy.require" -}}
{{- if not .value -}}
{{- fail (printf "%s: required while networkPolicy.enabled is true: list %s, or set networkPolicy.enabled=false when another layer filters the controller's traffic" .path .what) -}}
{{- end -}}
{{- end -}}

{{/*
autoroll.leaderElection: "true" when replicaCount > 1 or leaderElection.force is set (only
then do replicas elect a leader, and only then does the chart grant Lease access), else "".
Takes the root context.
*/}}
{{- define "autoroll.leaderElection" -}}
{{- if or (gt (int .Values.replicaCount) 1) .Values.leaderElection.force -}}true{{- end -}}
{{- end -}}

{{/*
autoroll.validateLeaderElection: fails, naming the values, when the election timings are out
of order (the controller would refuse them at startup with exit 2). Takes the root context;
returns nothing. The order is what keeps a former leader from deleting after its Lease could
have been taken: renewDeadline at least 1 s below leaseDuration, retryPeriod at most half of
renewDeadline.
*/}}
{{- define "autoroll.validateLeaderElection" -}}
{{- $le := .Values.leaderElection -}}
{{- if include "autoroll.leaderElection" . -}}
{{- if gt (add1 (int $le.renewDeadlineSeconds)) (int $le.leaseDurationSeconds) -}}
{{- fail (printf "leaderElection.renewDeadlineSeconds (%d) must be at least 1 below leaderElection.leaseDurationSeconds (%d): a leader must stop deleting before another replica can take the Lease" (int $le.renewDeadlineSeconds) (int $le.leaseDurationSeconds)) -}}
{{- end -}}
{{- if gt (mul 2 (int $le.retryPeriodSeconds)) (int $le.renewDeadlineSeconds) -}}
{{- fail (printf "leaderElection.retryPeriodSeconds (%d) must be at most half of leaderElection.renewDeadlineSeconds (%d)" (int $le.retryPeriodSeconds) (int $le.renewDeadlineSeconds)) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
autoroll.toYaml: Helm's toYaml, but a value it cannot write fails the render, naming the
values path, instead of rendering "" (an empty Job spec, a dropped annotations block).
Takes dict "value", "path" (the values path of value, for the message). Returns YAML.
toYaml returns "" only on error (an empty map is "{}", an empty string '""'); it cannot write
DEL, C1 controls but U+0085, U+FFFE and U+FFFF (its YAML parser refuses them; see
autoroll.jobs.unwritablePattern, which also names U+0085: toYaml folds it into a space). Helm's mustToYaml would fail too, but not every engine that
renders this chart has it (helm-unittest does not), and its error names no value.
*/}}
{{- define "autoroll.toYaml" -}}
{{- $out := toYaml .value -}}
{{- if not $out -}}
{{- $where := include "autoroll.jobs.findUnwritable" (dict "value" .value "path" .path "pattern" (include "autoroll.jobs.unwritablePattern" .)) | default .path -}}
{{- fail (include "autoroll.jobs.unwritableMessage" $where) -}}
{{- end -}}
{{- $out -}}
{{- end -}}

{{/*
The label matchers that pick this release's series out of Prometheus: the ServiceMonitor's
job label (the Service's name) and the namespace, unless prometheusRule.selector replaces
them (a scrape config of your own labels them differently).
*/}}
{{- define "autoroll.metricsSelector" -}}
{{- if .Values.prometheusRule.selector -}}
{{- .Values.prometheusRule.selector -}}
{{- else -}}
{{- printf "job=%q,namespace=%q" (include "autoroll.fullname" .) .Release.Namespace -}}
{{- end -}}
{{- end }}

{{/*
autoroll.caBundle.volume: the pod volume source (YAML, without its name) of the private CA the
registry client trusts beside the default roots: caBundle.configMap, caBundle.secret, or the
ConfigMap the chart makes from caBundle.pem; "" when none is set. Takes the root context;
fails, naming the values, when more than one is set.
*/}}
{{- define "autoroll.caBundle.volume" -}}
{{- $ca := .Values.caBundle -}}
{{- $set := list -}}
{{- range $k := list "configMap" "secret" "pem" }}{{ if get $ca $k }}{{ $set = append $set (printf "caBundle.%s" $k) }}{{ end }}{{ end -}}
{{- if gt (len $set) 1 -}}
{{- fail (printf "caBundle: set one of caBundle.configMap, caBundle.secret or caBundle.pem, not %s" (join " and " $set)) -}}
{{- end -}}
{{- $items := list (dict "key" $ca.key "path" $ca.key) -}}
{{- if $ca.secret -}}
{{- dict "secret" (dict "secretName" $ca.secret "items" $items) | toYaml -}}
{{- else if $ca.configMap -}}
{{- dict "configMap" (dict "name" $ca.configMap "items" $items) | toYaml -}}
{{- else if $ca.pem -}}
{{- dict "configMap" (dict "name" (include "autoroll.caBundle.configMapName" .) "items" $items) | toYaml -}}
{{- end -}}
{{- end -}}

{{/*
autoroll.caBundle.configMapName: the ConfigMap the chart creates for an inline caBundle.pem
("<fullname>-ca"). Takes the root context.
*/}}
{{- define "autoroll.caBundle.configMapName" -}}
{{- printf "%s-ca" (include "autoroll.fullname" . | trunc 60 | trimSuffix "-") -}}
{{- end -}}

{{/*
autoroll.caBundle.dir: where the CA bundle is mounted in the controller (read-only).
*/}}
{{- define "autoroll.caBundle.dir" -}}
/etc/autoroll/ca
{{- end -}}

{{/*
autoroll.caBundle.path: the CA file the controller reads (REGISTRY_CA_FILE):
"<caBundle.dir>/<caBundle.key>". Takes the root context.
*/}}
{{- define "autoroll.caBundle.path" -}}
{{- printf "%s/%s" (include "autoroll.caBundle.dir" .) .Values.caBundle.key -}}
{{- end -}}
