{{/*
Registries beside the Forgejo shorthand (docs/adr/024-pull-credentials.md): the REGISTRIES
variable, the mounted registry Secrets, and the RBAC the pull-secret source needs.
*/}}

{{/*
autoroll.hasForgejo: "true" when forgejo.host is set (the Forgejo shorthand: FORGEJO_HOST,
FORGEJO_USER and the token), else "". Takes the root context.
*/}}
{{- define "autoroll.hasForgejo" -}}
{{- if .Values.forgejo.host -}}true{{- end -}}
{{- end -}}

{{/*
autoroll.registrySecretDir: where registries[<index>].secret is mounted read-only, its
.dockerconfigjson as the file the controller reads. Takes the index (an int).
*/}}
{{- define "autoroll.registrySecretDir" -}}
{{- printf "/var/run/secrets/autoroll/registries/%d" (int .) -}}
{{- end -}}

{{/*
autoroll.registries: .Values.registries as the controller's REGISTRIES, a JSON list: each
entry's host, scheme, pullSecrets, limits, caFile (the chart's caBundle when the entry names
none and one is set) and secretFile (where its `secret` is mounted). Fails naming
`registries[<index>].<key>` on a missing host, a host given twice (forgejo.host counts), or
a secret that is not a Secret name (the schema rejects these too; this guards
--skip-schema-validation). Takes the root context.
*/}}
{{- define "autoroll.registries" -}}
{{- $out := list -}}
{{- $seen := list -}}
{{- with .Values.forgejo.host }}{{ $seen = append $seen (lower .) }}{{ end -}}
{{- $caFile := "" -}}
{{- if include "autoroll.caBundle.volume" . }}{{ $caFile = include "autoroll.caBundle.path" . }}{{ end -}}
{{- range $i, $r := .Values.registries | default list -}}
{{- if not (kindIs "map" $r) -}}
{{- fail (printf "registries[%d]: expected a map with at least host, got %v" $i $r) -}}
{{- end -}}
{{- $host := lower (toString (get $r "host" | default "")) -}}
{{- if not $host -}}
{{- fail (printf "registries[%d].host: required, the registry's bare host[:port] (ghcr.io, harbor.example.org:8443)" $i) -}}
{{- end -}}
{{- if has $host $seen -}}
{{- fail (printf "registries[%d].host: %s is listed twice (forgejo.host counts as one entry); list each registry once" $i $host) -}}
{{- end -}}
{{- $seen = append $seen $host -}}
{{- $entry := dict "host" $host "scheme" (get $r "scheme" | default "https") "pullSecrets" (eq (toString (get $r "pullSecrets")) "true") -}}
{{- range $key := list "concurrency" "requestsPerPass" "maxBackoffSeconds" -}}
{{- if hasKey $r $key }}{{ $_ := set $entry $key (int (get $r $key)) }}{{ end -}}
{{- end -}}
{{- $ca := get $r "caFile" | default $caFile -}}
{{- if $ca }}{{ $_ := set $entry "caFile" $ca }}{{ end -}}
{{- with get $r "secret" -}}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$" (toString .)) -}}
{{- fail (printf "registries[%d].secret: %q is not a Secret name; name a kubernetes.io/dockerconfigjson Secret in the release namespace" $i (toString .)) -}}
{{- end -}}
{{- $_ := set $entry "secretFile" (printf "%s/.dockerconfigjson" (include "autoroll.registrySecretDir" $i)) -}}
{{- end -}}
{{- $out = append $out $entry -}}
{{- end -}}
{{- $out | mustToJson -}}
{{- end -}}

{{/*
autoroll.registrySecretVolumes: a JSON list of {name, secret, dir}, one per registries[]
entry with a `secret`: the pod volume and the directory it is mounted at. Takes the root
context.
*/}}
{{- define "autoroll.registrySecretVolumes" -}}
{{- $out := list -}}
{{- range $i, $r := .Values.registries | default list -}}
{{- with get $r "secret" -}}
{{- $out = append $out (dict "name" (printf "registry-%d" $i) "secret" (toString .) "dir" (include "autoroll.registrySecretDir" $i)) -}}
{{- end -}}
{{- end -}}
{{- $out | mustToJson -}}
{{- end -}}

{{/*
autoroll.pullSecretsEnabled: "true" when forgejo.pullSecrets or any registries[].pullSecrets
is on (the controller then reads the pods' pull secrets and their ServiceAccounts), else "".
Takes the root context.
*/}}
{{- define "autoroll.pullSecretsEnabled" -}}
{{- $on := and (include "autoroll.hasForgejo" .) .Values.forgejo.pullSecrets -}}
{{- range .Values.registries | default list -}}
{{- if eq (toString (get . "pullSecrets")) "true" }}{{ $on = true }}{{ end -}}
{{- end -}}
{{- if $on -}}true{{- end -}}
{{- end -}}

{{/*
autoroll.pullSecretRules: the rules the pull-secret source needs, as a JSON list: get (never
list or watch) on core secrets and serviceaccounts when autoroll.pullSecretsEnabled, [] when
not. autoroll.podRules includes them, so namespaced mode grants them per watched namespace.
Takes the root context.
*/}}
{{- define "autoroll.pullSecretRules" -}}
{{- if include "autoroll.pullSecretsEnabled" . -}}
{{- list (dict "apiGroups" (list "") "resources" (list "secrets" "serviceaccounts") "verbs" (list "get")) | mustToJson -}}
{{- else -}}
{{- list | mustToJson -}}
{{- end -}}
{{- end -}}
