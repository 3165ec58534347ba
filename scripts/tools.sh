#!/usr/bin/env bash
# Tool bootstrap for autoroll: makes helm (v4), the helm-unittest plugin, actionlint,
# helm-docs, docker-registry and htpasswd available, (with `kube`) etcd, kube-apiserver and
# kube-controller-manager, (with `node`) kubelet, kube-proxy, CoreDNS, containerd, runc and
# the CNI plugins, and
# (with `gitea`) Gitea and skopeo for the live-server tier.
#
# Everything is built from Go modules or installed from Debian packages; nothing is
# downloaded from any other URL. Builds are cached by version under
# ${AUTOROLL_TOOLS:-~/.cache/autoroll-tools}, so only the first run is slow.
# A binary already on PATH is preferred when it has the pinned major version.
#
# Usage: scripts/tools.sh [core|kube|node|gitea|image|bench|cosign|release|all]
#   core  helm, helm-unittest, actionlint, helm-docs, apt packages (default)
#   kube  etcd, kube-apiserver, kube-controller-manager (first build: about 10-20 min)
#   node  kube, plus the e2e node: kubelet and kube-proxy (after kube: ~3-5 min), CoreDNS
#         (~5-8 min), containerd + runc shim (~3-5 min), runc, CNI plugins, busybox-static,
#         iproute2 and nftables from Debian
#   gitea core, plus Gitea and skopeo for tests/gitea (first build: about 5 min of 2 idle
#         cores, 550 CPU-seconds); run after `all` it keeps the kube and node paths in .tools/env
#   image podman, runc, skopeo, mmdebstrap (apt), the Debian base image of the controller
#         image (mmdebstrap, first run ~3 min), uv (PyPI; the lock and the lowest tier) and
#         cosign (signs and verifies the image; first build ~6-10 min)
#   bench core, plus stress-ng from Debian (the CPU load of make bench-loaded); keeps the
#         kube paths of an earlier `all` in .tools/env
#   cosign cosign alone, from its Go module
#   release helm and cosign: what the publish job of the workflow needs
#   all   core, kube, node and image (what the demo and every suite but tests/gitea need)
# On success it writes .tools/env (sourced by the Makefile) with PATH and HELM_PLUGINS.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
cache=${AUTOROLL_TOOLS:-$HOME/.cache/autoroll-tools}
envfile="$repo/.tools/env"
mkdir -p "$cache" "$repo/.tools"

say() { printf '[tools] %s\n' "$*" >&2; }
die() { printf '[tools] error: %s\n' "$*" >&2; exit 1; }

need_go() {
  command -v go >/dev/null || die "the Go toolchain is required to build $1 (install Go >= 1.26 from your distribution)"
}

# Run a Go build in a private GOPATH-independent way, quietly unless it fails.
gobuild() {
  local log
  log=$(mktemp)
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2; rm -f "$log"; return 1
  fi
  rm -f "$log"
}

path_dirs=()
add_path() { path_dirs+=("$1"); }
# use_found NAME LABEL: NAME as found on PATH, its directory on the tools' PATH.
use_found() {
  add_path "$(dirname "$(command -v "$1")")"
  say "$2: using $(command -v "$1")"
}

# module_copy MODULE@VERSION: prints a new temporary directory holding a writable copy of
# the module's source, for modules built as the main module (their go.mod has replaces).
module_copy() {
  local src work
  src=$(cd /tmp && go mod download -json "$1" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [ -d "$src" ] || die "could not download $1"
  work=$(mktemp -d)
  cp -r "$src/." "$work/" && chmod -R u+w "$work"
  echo "$work"
}
# Extra `export` lines for .tools/env (e.g. where the base image tarball is).
env_lines=()

# --- helm -------------------------------------------------------------------
helm_bin=""
ensure_helm() {
  if command -v helm >/dev/null && helm version --template '{{.Version}}' 2>/dev/null | grep -q '^v4\.'; then
    helm_bin=$(command -v helm)
    add_path "$(dirname "$helm_bin")"
    say "helm: using $(helm version --template '{{.Version}}') from PATH ($helm_bin)"
    return
  fi
  local dir="$cache/helm/$HELM_VERSION"
  if [ ! -x "$dir/helm" ]; then
    need_go helm
    say "helm: building $HELM_VERSION from the Go module helm.sh/helm/v4 (first run only, ~2-5 min)"
    local tmp; tmp=$(mktemp -d)
    local ld="-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION -X helm.sh/helm/v4/internal/version.gitTreeState=clean"
    (cd "$tmp" && GOBIN="$tmp" gobuild go install -trimpath -ldflags "$ld" "helm.sh/helm/v4/cmd/helm@$HELM_VERSION") \
      || die "building helm $HELM_VERSION failed (see above)"
    mkdir -p "$dir" && mv "$tmp/helm" "$dir/helm" && rm -rf "$tmp"
  fi
  helm_bin="$dir/helm"
  add_path "$dir"
  say "helm: $("$helm_bin" version --template '{{.Version}}') ($helm_bin)"
}

# --- helm-unittest ----------------------------------------------------------
plugins_dir=""
ensure_unittest() {
  if "$helm_bin" unittest --help >/dev/null 2>&1; then
    plugins_dir=$("$helm_bin" env HELM_PLUGINS)
    say "helm-unittest: using the plugin already installed in $plugins_dir"
    return
  fi
  local ver=${HELM_UNITTEST_VERSION#v}
  local dir="$cache/helm-plugins/$HELM_UNITTEST_VERSION"
  local pdir="$dir/unittest"
  if [ ! -x "$pdir/untt" ]; then
    need_go helm-unittest
    say "helm-unittest: building $HELM_UNITTEST_VERSION from its Go module (first run only, ~2-4 min)."
    say "helm-unittest: its go.mod has a replace directive, so it is built as the main module, not with go install."
    local work; work=$(module_copy "github.com/helm-unittest/helm-unittest@$HELM_UNITTEST_VERSION") || exit 1
    mkdir -p "$pdir"
    (cd "$work" && gobuild go build -trimpath -ldflags "-s -w" -o "$pdir/untt" ./cmd/helm-unittest) \
      || die "building helm-unittest failed (see above)"
    rm -rf "$work"
    # A local plugin: no install/update hooks (upstream's hooks download a release binary).
    cat >"$pdir/plugin.yaml" <<PLUGIN
name: "unittest"
version: "$ver"
usage: "unittest for helm charts"
description: "helm-unittest $HELM_UNITTEST_VERSION, built from its Go module by autoroll's scripts/tools.sh"
ignoreFlags: false
platformCommand:
  - command: "\$HELM_PLUGIN_DIR/untt"
PLUGIN
  fi
  plugins_dir="$dir"
  HELM_PLUGINS="$dir" "$helm_bin" unittest --help >/dev/null 2>&1 \
    || die "helm-unittest plugin in $dir does not load in $helm_bin"
  say "helm-unittest: $HELM_UNITTEST_VERSION ($pdir)"
}

# --- actionlint ---------------------------------------------------------------
ensure_actionlint() {
  if command -v actionlint >/dev/null; then use_found actionlint actionlint; return; fi
  go_tool actionlint "$ACTIONLINT_VERSION" github.com/rhysd/actionlint/cmd/actionlint "~1 min"
}

# --- single Go binaries ---------------------------------------------------------
# go_tool NAME VERSION PACKAGE HOW-LONG [LDFLAGS]: `go install PACKAGE@VERSION` into
# $cache/NAME/VERSION unless it is there, then on PATH. Built in a temp dir and moved in
# whole: another worktree may have finished the same build meanwhile, and the first one is
# kept.
go_tool() {
  local name=$1 version=$2 package=$3 how_long=$4 ldflags=${5:-"-s -w"}
  local dir="$cache/$name/$version"
  if [ ! -x "$dir/$name" ]; then
    need_go "$name"
    say "$name: building $version from its Go module (first run only, $how_long)"
    local tmp; tmp=$(mktemp -d)
    (cd /tmp && GOBIN="$tmp" gobuild go install -trimpath -ldflags "$ldflags" "$package@$version") \
      || { rm -rf "$tmp"; die "building $name failed (see above)"; }
    mkdir -p "$(dirname "$dir")"
    if [ -x "$dir/$name" ]; then rm -rf "$tmp"; else mv "$tmp" "$dir"; fi
  fi
  add_path "$dir"
  say "$name: $version ($dir/$name)"
}

# The chart README's values table (make docs; tests/integration/test_chart_docs.py).
ensure_helm_docs() {
  go_tool helm-docs "$HELM_DOCS_VERSION" github.com/norwoodj/helm-docs/cmd/helm-docs "~1 min"
}

# The chart's PrometheusRule and dashboard queries (tests/integration/test_monitoring.py);
# the Prometheus module brings many dependencies.
ensure_promtool() {
  go_tool promtool "$PROMTOOL_VERSION" github.com/prometheus/prometheus/cmd/promtool "~5-10 min"
}

# Signs the images the workflow publishes; the image tier signs the image it built and
# verifies it against the local registry (tests/image/test_signature.py).
ensure_cosign() {
  go_tool cosign "$COSIGN_VERSION" github.com/sigstore/cosign/v2/cmd/cosign "~6-10 min of 2 cores" \
    "-s -w -X sigs.k8s.io/release-utils/version.gitVersion=$COSIGN_VERSION"
}

# --- Debian packages --------------------------------------------------------
ensure_apt() {
  local missing=()
  command -v htpasswd >/dev/null || missing+=(apache2-utils)
  command -v docker-registry >/dev/null || [ -x /usr/bin/docker-registry ] || missing+=(docker-registry)
  [ ${#missing[@]} -eq 0 ] && { say "apt: docker-registry and htpasswd present"; return; }
  apt_install "${missing[@]}"
}

# Install Debian packages by name. Other worktrees may run apt at the same time, so wait
# up to 10 min for dpkg's lock instead of failing at once.
apt_install() {
  command -v apt-get >/dev/null || die "missing $* and no apt-get to install them; install them by hand"
  local sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  local wait=(-o DPkg::Lock::Timeout=600)
  say "apt: installing $*"
  $sudo apt-get "${wait[@]}" update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get "${wait[@]}" install -y -qq --no-install-recommends "$@" >/dev/null \
    || die "apt-get install $* failed"
}

# --- etcd -------------------------------------------------------------------
ensure_etcd() {
  if command -v etcd >/dev/null && etcd --version 2>/dev/null | grep -q "etcd Version: ${ETCD_VERSION#v}"; then
    use_found etcd etcd; return
  fi
  local dir="$cache/etcd/$ETCD_VERSION"
  if [ ! -x "$dir/etcd" ]; then
    need_go etcd
    say "etcd: building $ETCD_VERSION from go.etcd.io/etcd/server/v3 (first run only, ~3-6 min)."
    say "etcd: its go.mod replaces sibling modules with paths, so it is built as the main module."
    local work; work=$(module_copy "go.etcd.io/etcd/server/v3@$ETCD_VERSION") || exit 1
    # Point the sibling-module replaces at their published versions instead of ../ paths.
    (cd "$work" && for m in $(sed -n 's#^\t\(go.etcd.io/etcd/[^ ]*\) => \.\./.*#\1#p' go.mod); do
        go mod edit -dropreplace "$m" -require "$m@$ETCD_VERSION"; done \
      && gobuild go build -mod=mod -trimpath -ldflags "-s -w" -o "$dir/etcd" .) \
      || die "building etcd failed (see above)"
    rm -rf "$work"
  fi
  add_path "$dir"
  say "etcd: $ETCD_VERSION ($dir/etcd)"
}

# --- kube-apiserver + kube-controller-manager ---------------------------------
ensure_kube() {
  if command -v kube-apiserver >/dev/null && command -v kube-controller-manager >/dev/null \
     && kube-apiserver --version 2>/dev/null | grep -q "Kubernetes $KUBERNETES_VERSION\$"; then
    use_found kube-apiserver kubernetes; return
  fi
  local dir="$cache/kubernetes/$KUBERNETES_VERSION"
  if [ ! -x "$dir/kube-apiserver" ] || [ ! -x "$dir/kube-controller-manager" ]; then
    say "kubernetes: building kube-apiserver and kube-controller-manager $KUBERNETES_VERSION from k8s.io/kubernetes."
    say "kubernetes: this is a large build (first run only: about 10-20 min on 2 cores); later runs reuse $dir."
    build_kubernetes "$dir" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
  fi
  add_path "$dir"
  say "kubernetes: $("$dir/kube-apiserver" --version) ($dir)"
}

# Build commands of k8s.io/kubernetes at $KUBERNETES_VERSION into the directory $1 (built in
# $1.partial, then moved into place, so a concurrent run never sees half a directory).
build_kubernetes() {
  local dir=$1; shift
  need_go kubernetes
  local gomod
  gomod=$(cd /tmp && go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
  [ -f "$gomod" ] || die "could not download k8s.io/kubernetes@$KUBERNETES_VERSION"
  local minor=${KUBERNETES_VERSION#v1.}; minor=${minor%%.*}
  local staging_ver="v0.${KUBERNETES_VERSION#v1.}"
  local work; work=$(mktemp -d)
  # k8s.io/kubernetes replaces its staging modules with ./staging paths, which only work
  # inside its own repository; a wrapper module maps each to its published version.
  {
    echo "module autoroll.local/kubebuild"
    echo
    echo "go $(sed -n 's/^go \(.*\)/\1/p' "$gomod")"
    echo
    echo "require k8s.io/kubernetes $KUBERNETES_VERSION"
    sed -n 's#^\t\(k8s.io/[^ ]*\) => \./staging/.*#replace \1 => \1 '"$staging_ver"'#p' "$gomod"
  } >"$work/go.mod"
  local pkg=k8s.io/component-base/version
  local ld="-s -w -X $pkg.gitVersion=$KUBERNETES_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ld="$ld -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  mkdir -p "$dir.partial"
  (cd "$work" && gobuild go build -mod=mod -trimpath -ldflags "$ld" -o "$dir.partial/" "$@") \
    || die "building $* $KUBERNETES_VERSION failed (see above)"
  rm -rf "$work" "$dir" && mv "$dir.partial" "$dir"
}

# --- the e2e node: kubelet, containerd, runc, CNI plugins, busybox ---------------
# The kubelet has its own cache directory, so building it never touches a kube-apiserver
# build in $cache/kubernetes. It reuses the Go build cache of that build (same modules).
# kube-proxy lives beside it: the node's Service routing (tests/e2e/node_network.py).
ensure_kubelet() {
  local dir="$cache/kubernetes-node/$KUBERNETES_VERSION"
  if [ ! -x "$dir/kubelet" ] || [ ! -x "$dir/kube-proxy" ]; then
    say "kubelet: building kubelet and kube-proxy $KUBERNETES_VERSION from k8s.io/kubernetes (first"
    say "kubelet: run only: about 3-5 min after kube-apiserver, whose build cache they share)."
    build_kubernetes "$dir" k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy
  fi
  add_path "$dir"
  say "kubelet: $("$dir/kubelet" --version), kube-proxy ($dir)"
}

# The node's cluster DNS (tests/e2e/node_network.py), from its Go module (no replace
# directives); its default plugin set, as a cluster runs it.
ensure_coredns() {
  go_tool coredns "$COREDNS_VERSION" github.com/coredns/coredns "~5-8 min of 2 cores"
}

# containerd and its runc shim from the containerd Go module (no replace directives, so
# `go install` works). The shim lives beside containerd, which finds it there before PATH
# (Debian's containerd 1.6 shim, if installed, does not work with containerd 2.x).
ensure_containerd() {
  local dir="$cache/containerd/$CONTAINERD_VERSION"
  if [ ! -x "$dir/containerd" ] || [ ! -x "$dir/containerd-shim-runc-v2" ]; then
    need_go containerd
    say "containerd: building $CONTAINERD_VERSION and its runc shim from github.com/containerd/containerd/v2 (first run only, ~3-5 min)"
    local mod=github.com/containerd/containerd/v2
    local ld="-s -w -X $mod/version.Version=$CONTAINERD_VERSION -X $mod/version.Package=$mod"
    # No cgo: the btrfs snapshotter (the only cgo user) is left out; the node uses overlayfs.
    rm -rf "$dir.partial" && mkdir -p "$dir.partial"
    (cd /tmp && CGO_ENABLED=0 GOBIN="$dir.partial" gobuild go install -trimpath \
        -tags "urfave_cli_no_docs no_btrfs osusergo netgo" -ldflags "$ld" \
        "$mod/cmd/containerd@$CONTAINERD_VERSION") \
      && (cd /tmp && CGO_ENABLED=0 GOBIN="$dir.partial" gobuild go install -trimpath \
        -tags "urfave_cli_no_docs no_btrfs no_grpc osusergo netgo" -ldflags "$ld" \
        "$mod/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION") \
      || die "building containerd $CONTAINERD_VERSION failed (see above)"
    rm -rf "$dir" && mv "$dir.partial" "$dir"
  fi
  add_path "$dir"
  say "containerd: $("$dir/containerd" --version) ($dir)"
}

# runc, the CNI plugins, busybox-static and iproute2 from Debian.
ensure_node_apt() {
  local missing=()
  [ -x /usr/sbin/runc ] || command -v runc >/dev/null || missing+=(runc)
  [ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] && [ -x /usr/lib/cni/loopback ] \
    || missing+=(containernetworking-plugins)
  # The test images need the static busybox (the dynamic one cannot run in an empty rootfs).
  dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' \
    || missing+=(busybox-static)
  command -v ip >/dev/null || missing+=(iproute2)
  # kube-proxy's nftables mode runs `nft`.
  command -v nft >/dev/null || [ -x /usr/sbin/nft ] || missing+=(nftables)
  [ ${#missing[@]} -eq 0 ] || apt_install "${missing[@]}"
  say "node packages: runc $(runc --version | sed -n 's/^runc version //p'), CNI plugins in /usr/lib/cni, busybox, nft"
}

# --- Gitea (the live Forgejo-family server of the gitea test tier) ----------------
# Forgejo cannot be fetched here; its upstream Gitea can, and the container registry and
# webhook code are the code Forgejo forked. The Go module (published as
# code.gitea.io/gitea, declaring itself gitea.dev) is built as the main module in a copy.
# Its default SQLite driver (modernc) is pure Go, so no cgo and no build tags are needed:
# the old `sqlite sqlite_unlock_notify` tags select nothing in this version (the cgo driver
# wants `sqlite_mattn`). Without the `bindata` tag Gitea reads its locales, templates and
# public files from STATIC_ROOT_PATH; the three directories it needs are copied next to
# the binary, so the cache does not depend on GOMODCACHE (which `go clean` may empty).
ensure_gitea() {
  local dir="$cache/gitea/$GITEA_VERSION"
  if [ ! -x "$dir/gitea" ] || [ ! -d "$dir/static/options" ]; then
    need_go gitea
    say "gitea: building $GITEA_VERSION from the Go module code.gitea.io/gitea (first run only: ~550 CPU-seconds, ~5 min on 2 idle cores)"
    local work; work=$(module_copy "code.gitea.io/gitea@$GITEA_VERSION") || exit 1
    local ver=${GITEA_VERSION#v}
    mkdir -p "$dir.partial/static"
    (cd "$work" && CGO_ENABLED=0 gobuild go build -trimpath \
        -ldflags "-s -w -X main.Version=$ver" -o "$dir.partial/gitea" .) \
      || { rm -rf "$work" "$dir.partial"; die "building gitea $GITEA_VERSION failed (see above)"; }
    cp -r "$work/options" "$work/templates" "$work/public" "$dir.partial/static/"
    rm -rf "$work" "$dir" && mv "$dir.partial" "$dir"
  fi
  add_path "$dir"
  say "gitea: $("$dir/gitea" --version) ($dir)"
}

# stress-ng: a fixed number of CPU workers with a time limit beside the loaded benchmark run.
ensure_bench_apt() {
  local missing=()
  for pkg in $BENCH_APT_PACKAGES; do
    command -v "$pkg" >/dev/null || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && { say "apt: $BENCH_APT_PACKAGES present"; return; }
  apt_install "${missing[@]}"
}

# skopeo pushes images into Gitea's registry; Gitea itself runs git. Both from Debian.
ensure_gitea_apt() {
  local missing=()
  command -v skopeo >/dev/null || missing+=(skopeo)
  command -v git >/dev/null || missing+=(git)
  [ ${#missing[@]} -eq 0 ] && { say "apt: skopeo and git present"; return; }
  apt_install "${missing[@]}"
}

# --- the controller image: podman and friends, the Debian base, uv ---------------------
# Debian packages that build, run and push the controller image (tests/image/, make image).
ensure_image_apt() {
  local missing=() pkg
  for pkg in $IMAGE_APT_PACKAGES; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && { say "apt: $IMAGE_APT_PACKAGES present"; return; }
  apt_install "${missing[@]}"
}

# The base of every stage of the controller image when CI builds it: a minimal Debian made
# by mmdebstrap (no registry can be pulled from), as a root filesystem tarball that
# tests/support/image.py imports into its private podman storage. Cached by suite, variant
# and package list; docs, man pages and locales are left out as in Debian's slim images.
base_image_key() {
  # shellcheck disable=SC2086  # one line per package
  printf '%s\n' "$BASE_IMAGE_SUITE" "$BASE_IMAGE_VARIANT" $BASE_IMAGE_PACKAGES | sha256sum | cut -c1-12
}

# Point .tools/env at the base image tarball (AUTOROLL_BASE_ROOTFS) and name its image.
record_base_image() {
  local key; key=$(base_image_key)
  local dir="$cache/base-image/$BASE_IMAGE_SUITE-$key"
  [ -f "$dir/rootfs.tar" ] || return 0
  env_lines+=("export AUTOROLL_BASE_ROOTFS=\"$dir/rootfs.tar\"")
  env_lines+=("export AUTOROLL_BASE_IMAGE=\"localhost/autoroll-base:$BASE_IMAGE_SUITE-$key\"")
}

ensure_base_image() {
  command -v mmdebstrap >/dev/null || die "mmdebstrap is missing (scripts/tools.sh image installs it)"
  local key; key=$(base_image_key)
  local dir="$cache/base-image/$BASE_IMAGE_SUITE-$key"
  mkdir -p "$cache/base-image"
  (
    # One build at a time across checkouts; the loser of the race finds it done.
    flock 9
    if [ ! -f "$dir/rootfs.tar" ]; then
      say "base image: mmdebstrap $BASE_IMAGE_SUITE ($BASE_IMAGE_VARIANT + $BASE_IMAGE_PACKAGES), first run only (~3 min)"
      local tmp; tmp=$(mktemp -d "$cache/base-image/.build.XXXXXX")
      local log="$tmp/mmdebstrap.log"
      if ! mmdebstrap --variant="$BASE_IMAGE_VARIANT" --include="${BASE_IMAGE_PACKAGES// /,}" \
          --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
          --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
          --dpkgopt='path-include=/usr/share/doc/*/copyright' \
          --customize-hook="chroot \"\$1\" dpkg-query -W -f='\${Package} \${Version}\n' > '$tmp/packages.txt'" \
          "$BASE_IMAGE_SUITE" "$tmp/rootfs.tar" >"$log" 2>&1; then
        cat "$log" >&2; rm -rf "$tmp"; die "mmdebstrap $BASE_IMAGE_SUITE failed (see above)"
      fi
      rm -f "$log"
      printf '%s\n' "suite=$BASE_IMAGE_SUITE" "variant=$BASE_IMAGE_VARIANT" "packages=$BASE_IMAGE_PACKAGES" >"$tmp/base-image.txt"
      rm -rf "$dir" && mv "$tmp" "$dir"
    fi
  ) 9>"$cache/base-image/.lock"
  [ -f "$dir/rootfs.tar" ] || die "base image $dir/rootfs.tar is missing"
  record_base_image
  say "base image: $BASE_IMAGE_SUITE-$key ($dir/rootfs.tar, $(wc -l <"$dir/packages.txt") packages)"
}

# uv, from its PyPI wheel (a static binary): compiles the lock and installs lowest bounds.
ensure_uv() {
  local dir="$cache/uv/$UV_VERSION"
  if [ ! -x "$dir/uv" ]; then
    say "uv: installing $UV_VERSION from PyPI (first run only)"
    local tmp; tmp=$(mktemp -d)
    python3 -m venv "$tmp/venv" && "$tmp/venv/bin/pip" install --quiet --disable-pip-version-check \
      --only-binary :all: "uv==$UV_VERSION" || { rm -rf "$tmp"; die "pip install uv==$UV_VERSION failed"; }
    mkdir -p "$dir.partial.$$" && cp "$tmp/venv/bin/uv" "$dir.partial.$$/uv" && rm -rf "$tmp"
    rm -rf "$dir" && mv "$dir.partial.$$" "$dir"
  fi
  add_path "$dir"
  say "uv: $("$dir/uv" --version) ($dir/uv)"
}

ensure_image_tools() { ensure_image_apt; ensure_base_image; ensure_uv; ensure_cosign; }

# --- public charts for the e2e tier --------------------------------------------
# metrics-server's chart, from its Go module (the module cache keeps it by version).
metrics_server_chart() {
  echo "$(go env GOMODCACHE)/sigs.k8s.io/metrics-server@$METRICS_SERVER_CHART_VERSION/charts/metrics-server"
}
record_public_charts() {
  command -v go >/dev/null || return 0
  local dir; dir=$(metrics_server_chart)
  [ -f "$dir/Chart.yaml" ] && env_lines+=("export AUTOROLL_METRICS_SERVER_CHART=\"$dir\"")
  return 0
}
ensure_public_charts() {
  need_go "the metrics-server chart"
  if [ ! -f "$(metrics_server_chart)/Chart.yaml" ]; then
    say "charts: metrics-server $METRICS_SERVER_CHART_VERSION from its Go module (seconds)"
    (cd /tmp && go mod download "sigs.k8s.io/metrics-server@$METRICS_SERVER_CHART_VERSION") \
      || die "could not download sigs.k8s.io/metrics-server@$METRICS_SERVER_CHART_VERSION"
  fi
  record_public_charts
  say "charts: metrics-server $METRICS_SERVER_CHART_VERSION ($(metrics_server_chart))"
}

# Record an already-built cached tool without building it (so `core` keeps the kube paths).
add_cached() { [ -x "$1/$2" ] && add_path "$1"; return 0; }
# The cluster's builds (etcd, the control plane, the node's), when an earlier run made them.
add_cached_cluster() {
  add_cached "$cache/etcd/$ETCD_VERSION" etcd
  add_cached "$cache/kubernetes/$KUBERNETES_VERSION" kube-apiserver
  add_cached "$cache/kubernetes-node/$KUBERNETES_VERSION" kubelet
  add_cached "$cache/coredns/$COREDNS_VERSION" coredns
  add_cached "$cache/containerd/$CONTAINERD_VERSION" containerd
}

write_env() {
  local p=""
  for d in "${path_dirs[@]}"; do p="$p$d:"; done
  {
    echo "# written by scripts/tools.sh; source it to use the pinned tools"
    echo "export PATH=\"$p\$PATH\""
    [ -n "$plugins_dir" ] && echo "export HELM_PLUGINS=\"$plugins_dir\""
    # uv trusts only the roots it was built with; a machine that reaches PyPI through a
    # proxy with a CA of its own has that CA in the system store only (as pip and Go use).
    echo "export UV_SYSTEM_CERTS=1"
    for line in "${env_lines[@]}"; do echo "$line"; done
  } >"$envfile.new"
  mv "$envfile.new" "$envfile"
}

# What the chart's tests and lint need (helm, helm-unittest, actionlint, helm-docs, promtool).
ensure_chart_tools() { ensure_helm; ensure_unittest; ensure_actionlint; ensure_helm_docs; ensure_promtool; }

# The whole script runs from main, so editing this file while it runs cannot break that run.
main() {
  local what=${1:-core}
  case "$what" in
    core) ensure_apt; ensure_chart_tools
          add_cached_cluster
          add_cached "$cache/gitea/$GITEA_VERSION" gitea
          add_cached "$cache/uv/$UV_VERSION" uv; record_base_image; record_public_charts
          add_cached "$cache/cosign/$COSIGN_VERSION" cosign ;;
    kube) ensure_chart_tools; ensure_etcd; ensure_kube ;;
    node) ensure_chart_tools; ensure_etcd; ensure_kube
          ensure_node_apt; ensure_containerd; ensure_kubelet; ensure_coredns
          add_cached "$cache/gitea/$GITEA_VERSION" gitea
          add_cached "$cache/uv/$UV_VERSION" uv; record_base_image; record_public_charts ;;
    gitea) ensure_apt; ensure_chart_tools
          add_cached_cluster
          add_cached "$cache/uv/$UV_VERSION" uv; record_base_image
          add_cached "$cache/cosign/$COSIGN_VERSION" cosign
          record_public_charts; ensure_gitea_apt; ensure_gitea ;;
    image) ensure_chart_tools; ensure_image_tools
          add_cached_cluster
          add_cached "$cache/gitea/$GITEA_VERSION" gitea; record_public_charts ;;
    bench) ensure_apt; ensure_chart_tools
          add_cached_cluster
          add_cached "$cache/gitea/$GITEA_VERSION" gitea
          add_cached "$cache/uv/$UV_VERSION" uv; record_base_image; record_public_charts
          add_cached "$cache/cosign/$COSIGN_VERSION" cosign; ensure_bench_apt ;;
    cosign) ensure_cosign ;;
    release) ensure_helm; ensure_cosign ;;
    all)  ensure_apt; ensure_chart_tools; ensure_etcd; ensure_kube
          ensure_node_apt; ensure_containerd; ensure_kubelet; ensure_coredns; ensure_image_tools
          ensure_public_charts
          add_cached "$cache/gitea/$GITEA_VERSION" gitea ;;
    *) die "unknown target '$what' (expected core, kube, node, gitea, image, bench, cosign, release or all)" ;;
  esac
  write_env
  say "ready: source $envfile"
}

main "$@"
