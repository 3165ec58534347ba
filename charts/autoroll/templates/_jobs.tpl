{{/*
Job groups: spec-hashed Jobs and CronJobs (docs/jobhash-algorithm.md, ADR 003, ADR 012).

The pipeline, one define per step:

  autoroll.jobGroupValues  root, group, job   -> effective values (JSON)      layers merged
  autoroll.jobGroupSpec    effective values   -> the Job .spec (JSON)         the hash input
  autoroll.jobGroupHash    spec JSON          -> sha256 (64 hex)
  autoroll.jobGroupName    root, group, job,  -> "<fullname>-<group[:8]>-<job>[-<sha8>]"
                           hash, kind, suffix

autoroll.jobGroupPlan runs the pipeline for every entry; job-groups.yaml, cronjob-groups.yaml
and NOTES.txt render from the plan, and the Job renders the very spec string that was hashed.

The invariant (ADR 012): two renders that give a Job the same name give it the same .spec (and a
CronJob the same jobTemplate), whatever the chart version, appVersion, controller values or
release-level labels. It holds by construction: everything in the pod template is in the hash
input (its labels are autoroll.jobGroupPodLabels, a function of the group and job keys only),
except the spec-hash label, which is the hash itself, and podAnnotations under
hashIncludePodAnnotations: false, the one documented exception (jobhash diff flags it).

jobhash/ (Python) mirrors every helper here; a change to any of them changes Job names and is
a breaking change of the chart: the golden vectors in tests/golden/ must fail first.
*/}}

{{/*
autoroll.jobs.builtinDefaults: layer 0 of every entry, below jobDefaults. Returns JSON.
These are the values the chart assumes when no layer sets a key (values.yaml repeats them).
podSecurityContext and securityContext are the Pod Security "restricted" profile (ADR 023):
runAsNonRoot and the RuntimeDefault seccomp profile for the pod, no privilege escalation and
every capability dropped for each container. They are maps, so a layer overrides them key by
key (runAsNonRoot: false for an image that must run as root).
*/}}
{{- define "autoroll.jobs.builtinDefaults" -}}
{{- $pod := dict "runAsNonRoot" true "seccompProfile" (dict "type" "RuntimeDefault") -}}
{{- $container := dict "allowPrivilegeEscalation" false "capabilities" (dict "drop" (list "ALL")) -}}
{{- dict "enabled" true "hashSuffix" true "hashIncludePodAnnotations" true "restartPolicy" "Never" "concurrencyPolicy" "Forbid" "podSecurityContext" $pod "securityContext" $container | mustToJson -}}
{{- end -}}

{{/*
autoroll.jobs.keyPattern: the DNS-1123 label pattern group and job keys must match
(values.schema.json uses the same pattern).
*/}}
{{- define "autoroll.jobs.keyPattern" -}}
^[a-z0-9]([-a-z0-9]*[a-z0-9])?$
{{- end -}}

{{/*
autoroll.jobs.mergeInto: deep-merge map .src into map .dst, in place. Returns nothing.
Takes dict "dst" (a map the caller owns: deepCopy it first), "src" (a map), "path" (the
values path of src, for error messages).
Rules: a key present in src always wins, so false, 0 and "" override the layer below (Sprig's
merge/mergeOverwrite would let the lower layer win); map meets map: recurse; anything else
(lists, scalars, a map over a non-map) is replaced by a deep copy of src. A null fails.
*/}}
{{- define "autoroll.jobs.mergeInto" -}}
{{- if not (and (kindIs "map" .dst) (kindIs "map" .src)) -}}
{{- fail (printf "%s: must be a map (autoroll.jobs.mergeInto got %s over %s)" .path (kindOf .src) (kindOf .dst)) -}}
{{- end -}}
{{- $dst := .dst -}}
{{- $path := .path -}}
{{- range $k, $v := .src -}}
{{- $p := printf "%s.%s" $path $k -}}
{{- if kindIs "invalid" $v -}}
{{- fail (printf "%s: null is not allowed; remove the key or give it a value" $p) -}}
{{- end -}}
{{- if kindIs "map" $v -}}
{{- if not (kindIs "map" (get $dst $k)) -}}
{{- $_ := set $dst $k (dict) -}}
{{- end -}}
{{- include "autoroll.jobs.mergeInto" (dict "dst" (get $dst $k) "src" $v "path" $p) -}}
{{- else -}}
{{- $_ := set $dst $k (deepCopy $v) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
autoroll.jobs.applyLayer: apply one layer (jobDefaults, a group, or a job) onto .dst in place.
Takes dict "dst", "src", "path". Returns nothing.
Per-field rules on top of autoroll.jobs.mergeInto:
  jobs                         skipped (a group's job entries are not settings)
  env                          merged by variable name; a value replaces the lower one whole
  envSecrets, envConfigMaps    unioned: lower layers first, first occurrence kept
  everything else              mergeInto (maps merge recursively, lists and scalars replace)
*/}}
{{- define "autoroll.jobs.applyLayer" -}}
{{- $dst := .dst -}}
{{- $src := .src -}}
{{- $path := .path -}}
{{- if not (kindIs "map" $src) -}}
{{- fail (printf "%s: must be a map of job settings, got %s" $path (kindOf $src)) -}}
{{- end -}}
{{- include "autoroll.jobs.mergeInto" (dict "dst" $dst "src" (omit $src "jobs" "env" "envSecrets" "envConfigMaps") "path" $path) -}}
{{- if hasKey $src "env" -}}
{{- include "autoroll.jobs.mergeEnv" (dict "dst" $dst "env" (get $src "env") "path" (printf "%s.env" $path)) -}}
{{- end -}}
{{- range $field := list "envSecrets" "envConfigMaps" -}}
{{- if hasKey $src $field -}}
{{- $add := get $src $field -}}
{{- if not (kindIs "slice" $add) -}}
{{- fail (printf "%s.%s: must be a list of names, got %s" $path $field (kindOf $add)) -}}
{{- end -}}
{{- $cur := get $dst $field | default list -}}
{{- range $name := $add -}}
{{- if not (kindIs "string" $name) -}}
{{- fail (printf "%s.%s: every entry must be a string name, got %s" $path $field (kindOf $name)) -}}
{{- end -}}
{{- if not (has $name $cur) -}}
{{- $cur = append $cur $name -}}
{{- end -}}
{{- end -}}
{{- $_ := set $dst $field $cur -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
autoroll.jobs.mergeEnv: merge an env map (name -> value) into .dst.env by name. Returns nothing.
Takes dict "dst" (map holding, or getting, "env"), "env" (the layer's env map), "path".
A value replaces the lower layer's value whole (a valueFrom map is never merged key by key).
*/}}
{{- define "autoroll.jobs.mergeEnv" -}}
{{- if not (kindIs "map" .env) -}}
{{- fail (printf "%s: must be a map of NAME: value, got %s" .path (kindOf .env)) -}}
{{- end -}}
{{- if not (kindIs "map" (get .dst "env")) -}}
{{- $_ := set .dst "env" (dict) -}}
{{- end -}}
{{- $out := get .dst "env" -}}
{{- $path := .path -}}
{{- range $name, $value := .env -}}
{{- if kindIs "invalid" $value -}}
{{- fail (printf "%s.%s: null is not allowed; remove the variable or give it a value" $path $name) -}}
{{- end -}}
{{- $_ := set $out $name (deepCopy $value) -}}
{{- end -}}
{{- end -}}

{{/*
autoroll.jobGroupValues: step 1, the effective values of one entry. Returns JSON (an object).
Takes dict "root" (the chart context $), "group" and "job" (the keys under jobGroups).
Layers, lowest first: autoroll.jobs.builtinDefaults, .Values.jobDefaults, jobGroups.<group>
(without its "jobs"), jobGroups.<group>.jobs.<job>; see autoroll.jobs.applyLayer for the rules.
Task env (the fourth env layer) is applied per task by autoroll.jobGroupSpec.
*/}}
{{- define "autoroll.jobGroupValues" -}}
{{- if not (and (hasKey . "root") (hasKey . "group") (hasKey . "job")) -}}
{{- fail "autoroll.jobGroupValues: takes dict \"root\" $ \"group\" <key> \"job\" <key>" -}}
{{- end -}}
{{- $groups := .root.Values.jobGroups | default dict -}}
{{- $group := get $groups .group -}}
{{- $gpath := printf "jobGroups.%s" .group -}}
{{- $jpath := printf "jobGroups.%s.jobs.%s" .group .job -}}
{{- if not (kindIs "map" $group) -}}
{{- fail (printf "%s: must be a map of group settings and jobs, got %s" $gpath (kindOf $group)) -}}
{{- end -}}
{{- $job := get ($group.jobs | default dict) .job -}}
{{- if not (kindIs "map" $job) -}}
{{- fail (printf "%s: must be a map of job settings ({} for none), got %s" $jpath (kindOf $job)) -}}
{{- end -}}
{{- $eff := include "autoroll.jobs.builtinDefaults" . | mustFromJson -}}
{{- include "autoroll.jobs.applyLayer" (dict "dst" $eff "src" (.root.Values.jobDefaults | default dict) "path" "jobDefaults") -}}
{{- include "autoroll.jobs.applyLayer" (dict "dst" $eff "src" $group "path" $gpath) -}}
{{- include "autoroll.jobs.applyLayer" (dict "dst" $eff "src" $job "path" $jpath) -}}
{{- mustToJson $eff -}}
{{- end -}}

{{/*
autoroll.jobs.isSet: "true" when a value counts as set for the spec, else "".
Takes the value. Numbers and bools are always set (0 and false are meaningful); strings, lists
and maps are set when non-empty; a missing key (get returns "") is unset.
*/}}
{{- define "autoroll.jobs.isSet" -}}
{{- if or (kindIs "bool" .) (kindIs "float64" .) (kindIs "int64" .) (kindIs "int" .) -}}
true
{{- else if and (not (kindIs "invalid" .)) (not (empty .)) -}}
true
{{- end -}}
{{- end -}}

{{/*
autoroll.jobs.setIfSet: set dst[key] to a deep copy of value when autoroll.jobs.isSet says so.
Takes dict "dst", "key", "value". Returns nothing.
*/}}
{{- define "autoroll.jobs.setIfSet" -}}
{{- if include "autoroll.jobs.isSet" .value -}}
{{- $_ := set .dst .key (deepCopy .value) -}}
{{- end -}}
{{- end -}}

{{/*
autoroll.jobs.scalarString: render an env value or annotation scalar as a string.
Takes a string, bool or number. Strings pass through; bools and numbers are rendered with
Helm's toJson (Go encoding/json): true, 8080, 1.5, 100000000, 1e-7, 1e+21. Sprig's toString is
not used because it formats float64 with %v (100000000 -> 1e+08).
*/}}
{{- define "autoroll.jobs.scalarString" -}}
{{- if kindIs "string" . -}}
{{- . -}}
{{- else if or (kindIs "bool" .) (kindIs "float64" .) (kindIs "int64" .) (kindIs "int" .) -}}
{{- mustToJson . -}}
{{- else -}}
{{- fail (printf "autoroll.jobs.scalarString: expected a string, number or bool, got %s" (kindOf .)) -}}
{{- end -}}
{{- end -}}

{{/*
autoroll.jobs.argv: a command or args value as a list. Returns JSON {"argv": [...]}.
Takes dict "value", "path". A string is one argv element (no shell splitting); a list is taken
as is and every element must be a string.
*/}}
{{- define "autoroll.jobs.argv" -}}
{{- $v := .value -}}
{{- $out := list -}}
{{- if kindIs "string" $v -}}
{{- if $v -}}{{- $out = list $v -}}{{- end -}}
{{- else if kindIs "slice" $v -}}
{{- range $i, $a := $v -}}
{{- if not (kindIs "string" $a) -}}
{{- fail (printf "%s[%d]: must be a string, got %s; quote it" $.path $i (kindOf $a)) -}}
{{- end -}}
{{- end -}}
{{- $out = $v -}}
{{- else if not (kindIs "invalid" $v) -}}
{{- fail (printf "%s: must be a string or a list of strings, got %s" .path (kindOf $v)) -}}
{{- end -}}
{{- dict "argv" $out | mustToJson -}}
{{- end -}}

{{/*
autoroll.jobs.envList: an env map rendered as a container env list. Returns JSON {"env": [...]}.
Takes dict "env" (name -> value), "path". Sorted by name (Go template range order), so the order
is deterministic; note Kubernetes $(VAR) expansion only sees variables earlier in this order.
A string, number or bool becomes {name, value} (see autoroll.jobs.scalarString); a map must hold
exactly one key, valueFrom, and becomes {name, valueFrom}.
*/}}
{{- define "autoroll.jobs.envList" -}}
{{- $out := list -}}
{{- $path := .path -}}
{{- range $name, $value := (.env | default dict) -}}
{{- if kindIs "map" $value -}}
{{- if not (and (hasKey $value "valueFrom") (eq (len $value) 1) (kindIs "map" $value.valueFrom)) -}}
{{- fail (printf "%s.%s: a map value must hold only valueFrom (a map), e.g. {valueFrom: {secretKeyRef: {name: s, key: k}}}" $path $name) -}}
{{- end -}}
{{- $out = append $out (dict "name" $name "valueFrom" (deepCopy $value.valueFrom)) -}}
{{- else -}}
{{- $out = append $out (dict "name" $name "value" (include "autoroll.jobs.scalarString" $value)) -}}
{{- end -}}
{{- end -}}
{{- dict "env" $out | mustToJson -}}
{{- end -}}

{{/*
autoroll.jobs.imageRef: "<repository>:<tag>", "<repository>@<tag>" when the tag is a digest
("sha256:..."), or "<repository>" when the tag is empty. Takes dict "image", "path".
Fails when image.repository is missing or empty.
*/}}
{{- define "autoroll.jobs.imageRef" -}}
{{- $img := .image | default dict -}}
{{- $repo := get $img "repository" -}}
{{- if not (and (kindIs "string" $repo) $repo) -}}
{{- fail (printf "%s.image.repository: is required (a non-empty string); set it on jobDefaults, the group, the job or the task" .path) -}}
{{- end -}}
{{- $tag := get $img "tag" | toString -}}
{{- if not $tag -}}
{{- $repo -}}
{{- else if hasPrefix "sha256:" $tag -}}
{{- printf "%s@%s" $repo $tag -}}
{{- else -}}
{{- printf "%s:%s" $repo $tag -}}
{{- end -}}
{{- end -}}

{{/*
autoroll.jobs.container: one container of the pod. Returns JSON (an object).
Takes dict "name", "image" (effective image map), "command", "args", "env" (effective env map),
"shared" (the effective values: envSecrets, envConfigMaps, volumeMounts, resources and
securityContext are shared by the main container and every task), "path".
Keys whose value is unset (autoroll.jobs.isSet) are left out.
*/}}
{{- define "autoroll.jobs.container" -}}
{{- $s := .shared -}}
{{- $c := dict "name" .name "image" (include "autoroll.jobs.imageRef" (dict "image" .image "path" .path)) -}}
{{- include "autoroll.jobs.setIfSet" (dict "dst" $c "key" "imagePullPolicy" "value" (get .image "pullPolicy")) -}}
{{- include "autoroll.jobs.setIfSet" (dict "dst" $c "key" "command" "value" (include "autoroll.jobs.argv" (dict "value" .command "path" (printf "%s.command" .path)) | mustFromJson).argv) -}}
{{- include "autoroll.jobs.setIfSet" (dict "dst" $c "key" "args" "value" (include "autoroll.jobs.argv" (dict "value" .args "path" (printf "%s.args" .path)) | mustFromJson).argv) -}}
{{- include "autoroll.jobs.setIfSet" (dict "dst" $c "key" "env" "value" (include "autoroll.jobs.envList" (dict "env" .env "path" (printf "%s.env" .path)) | mustFromJson).env) -}}
{{- $envFrom := list -}}
{{- range $n := (get $s "envConfigMaps" | default list) -}}
{{- $envFrom = append $envFrom (dict "configMapRef" (dict "name" $n)) -}}
{{- end -}}
{{- range $n := (get $s "envSecrets" | default list) -}}
{{- $envFrom = append $envFrom (dict "secretRef" (dict "name" $n)) -}}
{{- end -}}
{{- include "autoroll.jobs.setIfSet" (dict "dst" $c "key" "envFrom" "value" $envFrom) -}}
{{- range $k := list "volumeMounts" "resources" "securityContext" -}}
{{- include "autoroll.jobs.setIfSet" (dict "dst" $c "key" $k "value" (get $s $k)) -}}
{{- end -}}
{{- mustToJson $c -}}
{{- end -}}

{{/*
autoroll.jobs.checkPullSecrets: fails, naming the entry, unless an effective imagePullSecrets
is unset (autoroll.jobs.isSet) or a list of maps holding only "name", a non-empty string: the
shape Kubernetes takes ([{name: regcred}]). Takes dict "value", "path". Returns nothing. The
schema refuses other shapes already; this guards --skip-schema-validation and the schema's
message-only alternative, so the Job never renders a pod spec Kubernetes would refuse.
*/}}
{{- define "autoroll.jobs.checkPullSecrets" -}}
{{- $v := .value -}}
{{- $path := .path -}}
{{- if include "autoroll.jobs.isSet" $v -}}
{{- if not (kindIs "slice" $v) -}}
{{- fail (printf "%s: must be a list of {name: <Secret name>}, e.g. [{name: regcred}], got %s" $path (kindOf $v)) -}}
{{- end -}}
{{- range $i, $s := $v -}}
{{- if not (and (kindIs "map" $s) (eq (len $s) 1) (kindIs "string" (get $s "name")) (get $s "name")) -}}
{{- fail (printf "%s[%d]: must be a map holding only name, a Secret's name, e.g. {name: regcred}, got %s" $path $i (kindOf $s)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
autoroll.jobGroupSpec: step 2, the hash input: the Job's .spec as it will be rendered, minus the
spec-hash pod label (it is the hash). Returns JSON (Helm's mustToJson, keys sorted).
Takes dict "values" (the effective values map from autoroll.jobGroupValues), "group", "job".
  {activeDeadlineSeconds, backoffLimit, ttlSecondsAfterFinished,
   template: {metadata: {labels: <autoroll.jobGroupPodLabels>, annotations: podAnnotations},
              spec: <PodSpec>}}
metadata.annotations is present only when hashIncludePodAnnotations is true and they are
non-empty. The PodSpec: containers [main], initContainers (tasks, in order), volumes,
serviceAccountName, imagePullSecrets, restartPolicy, securityContext (from podSecurityContext),
nodeSelector, affinity, tolerations, topologySpreadConstraints. Unset keys are left out
(autoroll.jobs.isSet), so an empty imagePullSecrets adds nothing to the hash input.
Tasks: each task runs as an initContainer named after it, with its image merged over the job's
image, its env merged over the job's effective env (the fourth layer), and the job's envFrom,
volumeMounts, resources and securityContext. The main container, named "main", runs the job's
command/args after every task has succeeded.
*/}}
{{- define "autoroll.jobGroupSpec" -}}
{{- if not (and (hasKey . "values") (hasKey . "group") (hasKey . "job") (kindIs "map" .values)) -}}
{{- fail "autoroll.jobGroupSpec: takes dict \"values\" <effective values map> \"group\" <key> \"job\" <key>" -}}
{{- end -}}
{{- $v := .values -}}
{{- $path := printf "jobGroups.%s.jobs.%s" .group .job -}}
{{- $image := get $v "image" | default dict -}}
{{- $env := get $v "env" | default dict -}}
{{- $main := include "autoroll.jobs.container" (dict "name" "main" "image" $image "command" (get $v "command") "args" (get $v "args") "env" $env "shared" $v "path" $path) | mustFromJson -}}
{{- $pod := dict "containers" (list $main) -}}
{{- $inits := list -}}
{{- $seen := list "main" -}}
{{- $tasks := get $v "tasks" | default list -}}
{{- if not (kindIs "slice" $tasks) -}}
{{- fail (printf "%s.tasks: must be a list of {name, image, command, args, env}, got %s" $path (kindOf $tasks)) -}}
{{- end -}}
{{- range $i, $t := $tasks -}}
{{- $tpath := printf "%s.tasks[%d]" $path $i -}}
{{- if not (kindIs "map" $t) -}}
{{- fail (printf "%s: must be a map {name, image, command, args, env}, got %s" $tpath (kindOf $t)) -}}
{{- end -}}
{{- $name := get $t "name" -}}
{{- if not (and (kindIs "string" $name) (regexMatch (include "autoroll.jobs.keyPattern" $) $name) (le (len $name) 63)) -}}
{{- fail (printf "%s.name: must be a DNS-1123 label (lowercase letters, digits and '-', at most 63 characters), got %v" $tpath $name) -}}
{{- end -}}
{{- if has $name $seen -}}
{{- fail (printf "%s.name: %q is already used by an earlier task or by the main container; task names must be unique and not \"main\"" $tpath $name) -}}
{{- end -}}
{{- $seen = append $seen $name -}}
{{- $timage := deepCopy $image -}}
{{- include "autoroll.jobs.mergeInto" (dict "dst" $timage "src" (get $t "image" | default dict) "path" (printf "%s.image" $tpath)) -}}
{{- $tenv := deepCopy $env -}}
{{- include "autoroll.jobs.mergeEnv" (dict "dst" (dict "env" $tenv) "env" (get $t "env" | default dict) "path" (printf "%s.env" $tpath)) -}}
{{- $inits = append $inits (include "autoroll.jobs.container" (dict "name" $name "image" $timage "command" (get $t "command") "args" (get $t "args") "env" $tenv "shared" $v "path" $tpath) | mustFromJson) -}}
{{- end -}}
{{- include "autoroll.jobs.setIfSet" (dict "dst" $pod "key" "initContainers" "value" $inits) -}}
{{- include "autoroll.jobs.checkPullSecrets" (dict "value" (get $v "imagePullSecrets") "path" (printf "%s.imagePullSecrets" $path)) -}}
{{- include "autoroll.jobs.setIfSet" (dict "dst" $pod "key" "securityContext" "value" (get $v "podSecurityContext")) -}}
{{- range $k := list "volumes" "serviceAccountName" "imagePullSecrets" "restartPolicy" "nodeSelector" "affinity" "tolerations" "topologySpreadConstraints" -}}
{{- include "autoroll.jobs.setIfSet" (dict "dst" $pod "key" $k "value" (get $v $k)) -}}
{{- end -}}
{{- $meta := dict "labels" (include "autoroll.jobGroupPodLabels" (dict "group" .group "job" .job) | mustFromJson) -}}
{{- if and (get $v "hashIncludePodAnnotations") (include "autoroll.jobs.isSet" (get $v "podAnnotations")) -}}
{{- $_ := set $meta "annotations" (deepCopy (get $v "podAnnotations")) -}}
{{- end -}}
{{- $template := dict "metadata" $meta "spec" $pod -}}
{{- $spec := dict "template" $template -}}
{{- range $k := list "backoffLimit" "activeDeadlineSeconds" "ttlSecondsAfterFinished" -}}
{{- include "autoroll.jobs.setIfSet" (dict "dst" $spec "key" $k "value" (get $v $k)) -}}
{{- end -}}
{{- mustToJson $spec -}}
{{- end -}}

{{/*
autoroll.jobGroupHash: step 3, the sha256 (64 lowercase hex) of the spec JSON string from
autoroll.jobGroupSpec, byte for byte. Takes that string; fails on an empty one (a failed toJson
would otherwise hash to a stable, wrong name). The name uses the first 8 characters.
*/}}
{{- define "autoroll.jobGroupHash" -}}
{{- if not (and (kindIs "string" .) (hasPrefix "{" .)) -}}
{{- fail "autoroll.jobGroupHash: takes the JSON string from autoroll.jobGroupSpec" -}}
{{- end -}}
{{- sha256sum . -}}
{{- end -}}

{{/*
autoroll.jobGroupName: step 4, the resource name. Returns a string.
Takes dict "root" ($), "group", "job", "hash" (64 hex), "hashSuffix" (bool), "kind" ("Job" or
"CronJob"). suffix = "-" + group[:8] + "-" + job, plus "-" + hash[:8] when hashSuffix.
Limit: 63 for a Job (its name becomes a label value), 52 for a CronJob (its Jobs append 11
characters). Only the fullname part is shortened: fullname | replace "." "-" |
trunc (limit - len suffix) | trimSuffix "-". The replace keeps the name a DNS-1123 label when
the release name has dots (Helm allows them; the schema keeps them out of fullnameOverride).
Fails, naming group, job and limit, when not even one fullname character fits.
*/}}
{{- define "autoroll.jobGroupName" -}}
{{- if not (and (hasKey . "root") (has .kind (list "Job" "CronJob")) (kindIs "string" .hash) (regexMatch "^[0-9a-f]{64}$" .hash) (kindIs "bool" .hashSuffix)) -}}
{{- fail "autoroll.jobGroupName: takes dict \"root\" $ \"group\" \"job\" \"hash\" <64 hex> \"hashSuffix\" <bool> \"kind\" Job|CronJob" -}}
{{- end -}}
{{- $limit := ternary 52 63 (eq .kind "CronJob") -}}
{{- $suffix := printf "-%s-%s" (trunc 8 .group) .job -}}
{{- if .hashSuffix -}}
{{- $suffix = printf "%s-%s" $suffix (trunc 8 .hash) -}}
{{- end -}}
{{- $budget := sub $limit (len $suffix) -}}
{{- if lt $budget 1 -}}
{{- fail (printf "jobGroups.%s.jobs.%s: the name suffix %q is %d characters, which leaves no room for the release name within the %d-character %s name limit; use a shorter job key" .group .job $suffix (len $suffix) $limit .kind) -}}
{{- end -}}
{{- $base := include "autoroll.fullname" .root | replace "." "-" | trunc (int $budget) | trimSuffix "-" -}}
{{- printf "%s%s" $base $suffix -}}
{{- end -}}

{{/*
autoroll.jobs.deletePolicies: a delete policy as a list of trimmed names. Takes a string
(comma-separated, as the annotation is written) or a list of strings. Returns JSON {"list": [...]}.
*/}}
{{- define "autoroll.jobs.deletePolicies" -}}
{{- $out := list -}}
{{- $raw := . -}}
{{- if kindIs "string" $raw -}}
{{- $raw = splitList "," $raw -}}
{{- end -}}
{{- range $p := ($raw | default list) -}}
{{- $p = trim (toString $p) -}}
{{- if $p -}}{{- $out = append $out $p -}}{{- end -}}
{{- end -}}
{{- dict "list" $out | mustToJson -}}
{{- end -}}

{{/*
autoroll.jobGroupGuard: fail-fast guard. Takes dict "values", "group", "job". Returns nothing.
hashSuffix true with an Argo CD delete policy containing HookSucceeded, or a Helm delete policy
containing hook-succeeded, would re-run the Job on every sync; the render fails instead.
*/}}
{{- define "autoroll.jobGroupGuard" -}}
{{- if not (and (kindIs "map" .values) (hasKey . "group") (hasKey . "job")) -}}
{{- fail "autoroll.jobGroupGuard: takes dict \"values\" <effective values map> \"group\" \"job\"" -}}
{{- end -}}
{{- $v := .values -}}
{{- if get $v "hashSuffix" -}}
{{- $hooks := get $v "hooks" | default dict -}}
{{- $argo := (include "autoroll.jobs.deletePolicies" (get (get $hooks "argocd" | default dict) "deletePolicy") | mustFromJson).list -}}
{{- $helm := (include "autoroll.jobs.deletePolicies" (get (get $hooks "helm" | default dict) "deletePolicy") | mustFromJson).list -}}
{{- $hit := "" -}}
{{- if has "HookSucceeded" $argo -}}
{{- $hit = "hooks.argocd.deletePolicy contains HookSucceeded" -}}
{{- else if has "hook-succeeded" $helm -}}
{{- $hit = "hooks.helm.deletePolicy contains hook-succeeded" -}}
{{- end -}}
{{- if $hit -}}
{{- fail (printf "jobGroups.%s.jobs.%s: hashSuffix is true and %s. Every successful run would delete the Job, so the next sync re-creates it under the same name and it runs again, on every sync. Fix it one of two ways: remove the hook (hooks.argocd.hook/hooks.helm.hook and the delete policy; order the Job with hooks.argocd.syncWave instead) so it is a plain resource that runs once per spec hash; or set hashSuffix: false on group %q to opt out of spec hashing and run it on every sync on purpose." .group .job $hit .group) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
autoroll.jobGroupServiceAccountGuard: fails when an entry would run as the controller's own
ServiceAccount (autoroll.serviceAccountName), which may delete pods wherever the controller
rolls: a Job's code must never hold those rights. An empty serviceAccountName is the
namespace's "default" ServiceAccount, refused too when the controller runs as it. Only while
the controller is rendered (controller.enabled). Takes dict "root", "values", "group", "job".
Returns nothing.
*/}}
{{- define "autoroll.jobGroupServiceAccountGuard" -}}
{{- if not (and (hasKey . "root") (kindIs "map" .values) (hasKey . "group") (hasKey . "job")) -}}
{{- fail "autoroll.jobGroupServiceAccountGuard: takes dict \"root\" \"values\" <effective values map> \"group\" \"job\"" -}}
{{- end -}}
{{- if .root.Values.controller.enabled -}}
{{- $controller := include "autoroll.serviceAccountName" .root -}}
{{- $given := get .values "serviceAccountName" | default "" | toString -}}
{{- if eq ($given | default "default") $controller -}}
{{- fail (printf "jobGroups.%s.jobs.%s: serviceAccountName %q (empty: the namespace's \"default\") is the controller's own ServiceAccount, which may delete pods; give the Job a ServiceAccount of its own with serviceAccountName, or run the controller as another one (serviceAccount.name)" .group .job $given) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
autoroll.jobGroupPodLabels: the identity labels of an entry's pods, part of the hash input.
Returns JSON {"autoroll.aethnet.se/job-group": <group>, "autoroll.aethnet.se/job": <job>}.
Takes dict "group", "job" (the keys: DNS-1123 labels, so valid label values). Deliberately
nothing else: helm.sh/chart and app.kubernetes.io/version change with every chart release,
app.kubernetes.io/name and instance with nameOverride and the release (and they are the
controller's selector labels, so its Service and NetworkPolicy would select these pods), and a
label that changes while the Job name stays makes Kubernetes refuse the update of the Job's
immutable pod template. Only these two keys are hashed; changing this helper renames every Job.
*/}}
{{- define "autoroll.jobGroupPodLabels" -}}
{{- if not (and (kindIs "string" .group) (kindIs "string" .job)) -}}
{{- fail "autoroll.jobGroupPodLabels: takes dict \"group\" <key> \"job\" <key>" -}}
{{- end -}}
{{- dict "autoroll.aethnet.se/job-group" .group "autoroll.aethnet.se/job" .job | mustToJson -}}
{{- end -}}

{{/*
autoroll.jobGroupTemplateLabels: the labels of a pod template and of a CronJob's jobTemplate.
Returns JSON: autoroll.jobGroupPodLabels plus autoroll.aethnet.se/spec-hash (the 8-character
hash). Takes dict "group", "job", "hash". With a hashed name all three are fixed by the name.
*/}}
{{- define "autoroll.jobGroupTemplateLabels" -}}
{{- $labels := include "autoroll.jobGroupPodLabels" . | mustFromJson -}}
{{- $_ := set $labels "autoroll.aethnet.se/spec-hash" (trunc 8 .hash) -}}
{{- mustToJson $labels -}}
{{- end -}}

{{/*
autoroll.jobGroupLabels: the labels of the Job/CronJob object itself. Returns YAML.
Takes dict "root", "group", "job", "hash". autoroll.labels (helm.sh/chart, app.kubernetes.io/*)
plus autoroll.jobGroupTemplateLabels, so `kubectl get jobs -l autoroll.aethnet.se/job-group=db`
finds them. Object metadata is mutable, so these may change with the chart version; they never
reach the pod template (autoroll.jobGroupJobSpec).
*/}}
{{- define "autoroll.jobGroupLabels" -}}
{{ include "autoroll.labels" .root }}
{{- range $k, $v := include "autoroll.jobGroupTemplateLabels" . | mustFromJson }}
{{ $k }}: {{ $v | quote }}
{{- end }}
{{- end -}}

{{/*
autoroll.jobGroupAnnotations: metadata annotations of a Job/CronJob. Returns YAML (sorted).
Takes dict "values", "hash", "group", "job". metadataAnnotations, then the hook annotations (hooks.argocd:
hook, hook-delete-policy, sync-wave; hooks.helm: hook, hook-delete-policy, hook-weight), then
autoroll.aethnet.se/spec-hash with the full hash. None of these are in the hash.
*/}}
{{- define "autoroll.jobGroupAnnotations" -}}
{{- $v := .values -}}
{{- $a := deepCopy (get $v "metadataAnnotations" | default dict) -}}
{{- $hooks := get $v "hooks" | default dict -}}
{{- $argo := get $hooks "argocd" | default dict -}}
{{- $helm := get $hooks "helm" | default dict -}}
{{- $pairs := list
  (list "argocd.argoproj.io/hook" (get $argo "hook"))
  (list "argocd.argoproj.io/hook-delete-policy" (get $argo "deletePolicy"))
  (list "argocd.argoproj.io/sync-wave" (get $argo "syncWave"))
  (list "helm.sh/hook" (get $helm "hook"))
  (list "helm.sh/hook-delete-policy" (get $helm "deletePolicy"))
  (list "helm.sh/hook-weight" (get $helm "weight")) -}}
{{- range $pair := $pairs -}}
{{- $val := index $pair 1 -}}
{{- if kindIs "slice" $val -}}
{{- $val = join "," $val -}}
{{- end -}}
{{- if include "autoroll.jobs.isSet" $val -}}
{{- $_ := set $a (index $pair 0) (include "autoroll.jobs.scalarString" $val) -}}
{{- end -}}
{{- end -}}
{{- $_ := set $a "autoroll.aethnet.se/spec-hash" .hash -}}
{{- include "autoroll.toYaml" (dict "value" $a "path" (printf "jobGroups.%s.jobs.%s (metadata annotations)" .group .job)) -}}
{{- end -}}

{{/*
autoroll.jobs.unwritablePattern: the characters Helm's toYaml cannot write as given: DEL
(U+007F), the C1 controls U+0080-U+009F and the noncharacters U+FFFE and U+FFFF. For all but
U+0085 toYaml renders "" (its YAML parser refuses them: an empty Job spec, a dropped
annotations block); U+0085 (NEL) is a YAML 1.1 line break, which toYaml's JSON-to-YAML step
folds into a space (or a line break), so the Job would not run the spec that was hashed. And
U+2028/U+2029 in a string that also holds a line break: toYaml may write such a string as a
block, where they read back as line breaks (a YAML parse error, or another value). The plan
refuses them all (autoroll.jobs.checkWritable).
*/}}
{{- define "autoroll.jobs.unwritablePattern" -}}
[\x{7f}-\x{9f}\x{fffe}\x{ffff}]|(?s:[\x{2028}\x{2029}].*\n|\n.*[\x{2028}\x{2029}])
{{- end -}}

{{/*
autoroll.jobs.findUnwritable: the values path of the first key or string (maps in sorted key
order, lists in order) holding a character of autoroll.jobs.unwritablePattern, or "".
Takes dict "value", "path", "pattern".
*/}}
{{- define "autoroll.jobs.findUnwritable" -}}
{{- $pattern := .pattern -}}
{{- $path := .path -}}
{{- $found := "" -}}
{{- if kindIs "map" .value -}}
{{- $m := .value -}}
{{- range $k := keys $m | sortAlpha -}}
{{- if not $found -}}
{{- $p := printf "%s.%s" $path $k -}}
{{- if regexMatch $pattern $k -}}
{{- $found = $p -}}
{{- else -}}
{{- $found = include "autoroll.jobs.findUnwritable" (dict "value" (get $m $k) "path" $p "pattern" $pattern) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- else if kindIs "slice" .value -}}
{{- range $i, $item := .value -}}
{{- if not $found -}}
{{- $found = include "autoroll.jobs.findUnwritable" (dict "value" $item "path" (printf "%s[%d]" $path $i) "pattern" $pattern) -}}
{{- end -}}
{{- end -}}
{{- else if and (kindIs "string" .value) (regexMatch $pattern .value) -}}
{{- $found = $path -}}
{{- end -}}
{{- $found -}}
{{- end -}}

{{/*
autoroll.jobs.unwritableMessage: the fail message for a character toYaml cannot write.
Takes the values path. jobhash/writable.py check_writable repeats it verbatim.
*/}}
{{- define "autoroll.jobs.unwritableMessage" -}}
{{- printf "%s: contains DEL (U+007F), a C1 control character (U+0080-U+009F), U+FFFE/U+FFFF, or U+2028/U+2029 together with a line break, which Helm cannot write into the rendered YAML as given (toYaml drops the value, folds U+0085 into a space or line break, or writes a multi-line string as a block where U+2028/U+2029 read as line breaks); remove that character (an escape such as \\x7f in a values file is the same character)" . -}}
{{- end -}}

{{/*
autoroll.jobs.checkWritable: fails, naming the values path and the fix, when a key or string
under jobDefaults or jobGroups holds a character toYaml cannot write (see
autoroll.jobs.unwritablePattern). Takes the chart context ($); returns nothing. One regexMatch
over the JSON of both trees keeps the common case cheap (there a line break and U+2028/U+2029
are escapes: any U+2028/U+2029 is a hit); the walk, over the values themselves, runs only on
a hit and decides.
*/}}
{{- define "autoroll.jobs.checkWritable" -}}
{{- $pattern := include "autoroll.jobs.unwritablePattern" . -}}
{{- if regexMatch `[\x{7f}-\x{9f}\x{fffe}\x{ffff}]|\\u202[89]` (dict "jobDefaults" .Values.jobDefaults "jobGroups" .Values.jobGroups | mustToJson) -}}
{{- $path := include "autoroll.jobs.findUnwritable" (dict "value" .Values.jobDefaults "path" "jobDefaults" "pattern" $pattern) -}}
{{- if not $path -}}
{{- $path = include "autoroll.jobs.findUnwritable" (dict "value" .Values.jobGroups "path" "jobGroups" "pattern" $pattern) -}}
{{- end -}}
{{- if $path -}}
{{- fail (include "autoroll.jobs.unwritableMessage" $path) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
autoroll.jobGroupPlan: the whole pipeline for every enabled entry. Returns JSON
{"items": [{group, job, kind, name, hash, spec (the hashed JSON string), values}]}, sorted by
group then job. Takes the chart context ($). Fails on characters toYaml cannot write
(autoroll.jobs.checkWritable), on keys that cannot form a name, on the guard, and when an entry
gets the name an earlier entry of the same kind already has (only group[:8] enters the name);
entries with enabled: false are left out before the per-entry checks.
*/}}
{{- define "autoroll.jobGroupPlan" -}}
{{- $root := . -}}
{{- $items := list -}}
{{- $seen := dict -}}
{{- $pattern := include "autoroll.jobs.keyPattern" . -}}
{{- $groups := .Values.jobGroups | default dict -}}
{{- if not (kindIs "map" $groups) -}}
{{- fail (printf "jobGroups: must be a map of group name to group settings, got %s" (kindOf $groups)) -}}
{{- end -}}
{{- include "autoroll.jobs.checkWritable" $root -}}
{{- range $g := keys $groups | sortAlpha -}}
{{- if not (and (regexMatch $pattern $g) (le (len $g) 63)) -}}
{{- fail (printf "jobGroups.%s: a group key must be a DNS-1123 label (lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters)" $g) -}}
{{- end -}}
{{- $group := get $groups $g -}}
{{- if not (kindIs "map" $group) -}}
{{- fail (printf "jobGroups.%s: must be a map of group settings and jobs, got %s" $g (kindOf $group)) -}}
{{- end -}}
{{- $jobs := get $group "jobs" | default dict -}}
{{- if not (kindIs "map" $jobs) -}}
{{- fail (printf "jobGroups.%s.jobs: must be a map of job name to job settings, got %s" $g (kindOf $jobs)) -}}
{{- end -}}
{{- range $j := keys $jobs | sortAlpha -}}
{{- if not (and (regexMatch $pattern $j) (le (len $j) 63)) -}}
{{- fail (printf "jobGroups.%s.jobs.%s: a job key must be a DNS-1123 label (lowercase letters, digits and '-', starting and ending with a letter or digit, at most 63 characters)" $g $j) -}}
{{- end -}}
{{- $v := include "autoroll.jobGroupValues" (dict "root" $root "group" $g "job" $j) | mustFromJson -}}
{{- if get $v "enabled" -}}
{{- include "autoroll.jobGroupGuard" (dict "values" $v "group" $g "job" $j) -}}
{{- include "autoroll.jobGroupServiceAccountGuard" (dict "root" $root "values" $v "group" $g "job" $j) -}}
{{- $kind := ternary "CronJob" "Job" (not (empty (get $v "schedule"))) -}}
{{- $spec := include "autoroll.jobGroupSpec" (dict "values" $v "group" $g "job" $j) -}}
{{- $hash := include "autoroll.jobGroupHash" $spec -}}
{{- $name := include "autoroll.jobGroupName" (dict "root" $root "group" $g "job" $j "hash" $hash "hashSuffix" (get $v "hashSuffix") "kind" $kind) -}}
{{- $taken := printf "%s/%s" $kind $name -}}
{{- if hasKey $seen $taken -}}
{{- fail (printf "jobGroups.%s.jobs.%s: its %s name %q is also the name of %s; only the first 8 characters of a group key enter the name, so rename one of the two groups so that their first 8 characters differ (or rename one of the jobs)" $g $j $kind $name (get $seen $taken)) -}}
{{- end -}}
{{- $_ := set $seen $taken (printf "jobGroups.%s.jobs.%s" $g $j) -}}
{{- $items = append $items (dict "group" $g "job" $j "kind" $kind "name" $name "hash" $hash "spec" $spec "values" $v) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- dict "items" $items | mustToJson -}}
{{- end -}}

{{/*
autoroll.jobGroupJobSpec: the rendered .spec of a Job (or a CronJob's jobTemplate.spec). Returns
YAML. Takes dict "item" (a plan item). Parses the very spec string that was hashed, and adds only
the spec-hash pod label (autoroll.jobGroupTemplateLabels: the hash itself) and, when
hashIncludePodAnnotations is false, the pod annotations. Nothing from the chart context (.Chart,
.Release, controller values) reaches it, so a chart upgrade cannot change an existing Job's pod
template, which Kubernetes refuses to update.
*/}}
{{- define "autoroll.jobGroupJobSpec" -}}
{{- $item := .item -}}
{{- $spec := $item.spec | mustFromJson -}}
{{- $template := $spec.template -}}
{{- $meta := $template.metadata -}}
{{- $_ := set $meta "labels" (include "autoroll.jobGroupTemplateLabels" (dict "group" $item.group "job" $item.job "hash" $item.hash) | mustFromJson) -}}
{{- if and (not $item.values.hashIncludePodAnnotations) (include "autoroll.jobs.isSet" (get $item.values "podAnnotations")) -}}
{{- $_ := set $meta "annotations" (get $item.values "podAnnotations") -}}
{{- end -}}
{{- include "autoroll.toYaml" (dict "value" $spec "path" (printf "jobGroups.%s.jobs.%s (Job spec)" $item.group $item.job)) -}}
{{- end -}}

{{/*
autoroll.jobGroupsNotes: the job-groups part of NOTES.txt. Takes the chart context ($).
Lists the rendered Jobs and CronJobs and warns for each hashed Job that
- is an Argo CD or Helm hook: hooks are re-created on every sync/upgrade (both tools delete the
  previous one first by default), so the Job runs every time whatever its hash;
- sets ttlSecondsAfterFinished (ADR 012: a Job removed by its TTL is re-created by the next Helm
  upgrade or Argo CD / Flux sync, and runs again).
*/}}
{{- define "autoroll.jobGroupsNotes" -}}
{{- $items := (include "autoroll.jobGroupPlan" . | mustFromJson).items -}}
{{- if $items }}
Job groups ({{ len $items }}):
{{- range $i := $items }}
  {{ $i.kind }} {{ $i.name }}  (jobGroups.{{ $i.group }}.jobs.{{ $i.job }})
{{- end }}
  List them: kubectl get jobs,cronjobs -n {{ .Release.Namespace }} -l app.kubernetes.io/instance={{ .Release.Name }},autoroll.aethnet.se/job-group
{{- range $i := $items }}
{{- $hooks := $i.values.hooks | default dict }}
{{- $hookSystems := list }}
{{- if (get ($hooks.argocd | default dict) "hook") }}{{ $hookSystems = append $hookSystems "an Argo CD" }}{{ end }}
{{- if (get ($hooks.helm | default dict) "hook") }}{{ $hookSystems = append $hookSystems "a Helm" }}{{ end }}
{{- if and (eq $i.kind "Job") $i.values.hashSuffix $hookSystems }}

WARNING: jobGroups.{{ $i.group }}.jobs.{{ $i.job }} is a hash-named Job and also {{ join " and " $hookSystems }} hook.
  Hooks are re-created on every sync (Argo CD) or every install/upgrade (Helm), and both delete
  the previous one first by default, so this Job runs every time even when its spec is unchanged.
  Remove the hook and order the Job with hooks.argocd.syncWave, or set hashSuffix: false if a run
  on every sync is what you want.
{{- end }}
{{- if and (eq $i.kind "Job") $i.values.hashSuffix (hasKey $i.values "ttlSecondsAfterFinished") }}

WARNING: jobGroups.{{ $i.group }}.jobs.{{ $i.job }} sets ttlSecondsAfterFinished ({{ include "autoroll.jobs.scalarString" $i.values.ttlSecondsAfterFinished }}) on a hash-named Job.
  When the TTL deletes the finished Job, the next helm upgrade, Argo CD self-heal or Flux
  reconcile re-creates it under the same name and it runs again. Old hash-named Jobs are pruned
  when they drop out of the manifest, so a TTL is not needed; remove it (see docs/adr/012).
{{- end }}
{{- end }}
{{- end }}
{{- end -}}
