#!/usr/bin/env bash
# Provides the binaries the operator tests run against: kube-apiserver, etcd and kubectl.
# See docs/kube-apiserver.md. Order, first that works wins, for kube-apiserver:
#   1. $KUBE_APISERVER_BIN (a path the caller built or downloaded elsewhere);
#   2. the per-machine cache, keyed by version;
#   3. a build from Debian's `kubernetes` source package with Debian's Go 1.19, stored in the cache.
# etcd and kubectl: $ETCD_BIN / $KUBECTL_BIN, else Debian's etcd-server / kubernetes-client,
# installed with apt-get when missing. Safe to run again: every step is skipped once done.
# Prints the three paths as KEY=VALUE lines at the end (also written to $CACHE_DIR/paths.env).
set -euo pipefail

K8S_VERSION=v1.20.2
DEB_SOURCE_VERSION=1.20.5+really1.20.2-1.1+deb12u1
GO=/usr/lib/go-1.19/bin/go
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/htcondor-sidecar"
CACHE_DIR="$CACHE_ROOT/kube-apiserver-$K8S_VERSION"
WORK="$CACHE_DIR/build"

say() { printf '[kube-apiserver.sh] %s\n' "$*" >&2; }
die() {
  say "error: $*"
  exit 1
}

# apt_get, apt_update: they wait for another apt (an unattended upgrade) instead of failing on its lock.
# shellcheck source=lib/apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/apt.sh"
apt_updated=0
apt_install() {
  if ((apt_updated == 0)); then
    say "apt-get update (once)"
    apt_update
    apt_updated=1
  fi
  say "apt-get install $*"
  apt_get install -y -qq --no-install-recommends "$@" >&2
}

# --- etcd and kubectl ---------------------------------------------------------------------------
want=()
if [[ -n "${ETCD_BIN:-}" ]]; then
  [[ -x "$ETCD_BIN" ]] || die "ETCD_BIN names '$ETCD_BIN', which is not an executable file"
elif ! command -v etcd >/dev/null; then
  want+=(etcd-server)
fi
if [[ -n "${KUBECTL_BIN:-}" ]]; then
  [[ -x "$KUBECTL_BIN" ]] || die "KUBECTL_BIN names '$KUBECTL_BIN', which is not an executable file"
elif ! command -v kubectl >/dev/null; then
  want+=(kubernetes-client)
fi
if ((${#want[@]})); then
  # On a machine with systemd the package also starts an etcd service on the default ports; the
  # tests never use it (each test file starts its own on free ports), and it is left alone.
  apt_install "${want[@]}"
fi
etcd="${ETCD_BIN:-$(command -v etcd)}"
kubectl="${KUBECTL_BIN:-$(command -v kubectl)}"
say "etcd: $etcd ($("$etcd" --version 2>/dev/null | head -1))"
say "kubectl: $kubectl"

# --- kube-apiserver -----------------------------------------------------------------------------
finish() {
  local apiserver="$1"
  mkdir -p "$CACHE_DIR"
  printf 'KUBE_APISERVER_BIN=%s\nETCD_BIN=%s\nKUBECTL_BIN=%s\n' "$apiserver" "$etcd" "$kubectl" >"$CACHE_DIR/paths.env"
  cat "$CACHE_DIR/paths.env"
  exit 0
}

if [[ -n "${KUBE_APISERVER_BIN:-}" ]]; then
  [[ -x "$KUBE_APISERVER_BIN" ]] || die "KUBE_APISERVER_BIN names '$KUBE_APISERVER_BIN', which is not an executable file"
  say "kube-apiserver: from KUBE_APISERVER_BIN"
  finish "$KUBE_APISERVER_BIN"
fi

cached="$CACHE_DIR/kube-apiserver"
mkdir -p "$CACHE_DIR"
# Two runs at once (two CI jobs on one machine) would build into the same folder: one waits.
exec 9>"$CACHE_DIR/.lock"
flock 9

if [[ -x "$cached" ]] && "$cached" --version 2>/dev/null | grep -qx "Kubernetes $K8S_VERSION"; then
  say "kube-apiserver: cached"
  finish "$cached"
fi

say "kube-apiserver $K8S_VERSION not cached: building it into $CACHE_DIR (8-18 min of CPU, once per machine)"
build_started=$(date +%s)
[[ -x "$GO" ]] || apt_install golang-1.19-go
command -v dpkg-deb >/dev/null || die "dpkg-deb is needed to unpack the replacement Go libraries"
mkdir -p "$WORK"
cd "$WORK"
# As root, apt hands downloads to its _apt user, who cannot write into this folder; it would fall
# back with a warning per file. Saying so up front keeps the log quiet.
apt_sandbox=()
((EUID == 0)) && apt_sandbox=(-o APT::Sandbox::User=root)

# Step 1: the source. A private apt configuration that adds deb-src for the repositories the
# machine's own sources name, so /etc/apt stays as it is.
tarballs=(kubernetes_*.orig.tar.gz)
if [[ ! -f "${tarballs[0]}" ]]; then
  say "download: source package kubernetes=$DEB_SOURCE_VERSION (private apt config for deb-src)"
  mkdir -p apt/sources.list.d apt/lists/partial
  : >apt/sources.list
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -f "$f" ]] || continue
    sed -n 's/^[[:space:]]*deb[[:space:]]/deb-src /p' "$f" >>apt/sources.list
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f "$f" ]] || continue
    sed 's/^Types:.*/Types: deb-src/' "$f" >"apt/sources.list.d/$(basename "$f")"
  done
  apt_opts=(-o "Dir::Etc::sourcelist=$WORK/apt/sources.list" -o "Dir::Etc::sourceparts=$WORK/apt/sources.list.d"
    -o "Dir::State::Lists=$WORK/apt/lists")
  apt-get "${apt_opts[@]}" "${apt_sandbox[@]}" update -qq
  apt-get "${apt_opts[@]}" "${apt_sandbox[@]}" source --download-only -qq "kubernetes=$DEB_SOURCE_VERSION" >&2
  tarballs=(kubernetes_*.orig.tar.gz)
  [[ -f "${tarballs[0]}" ]] || die "apt-get source left no kubernetes_*.orig.tar.gz in '$WORK'"
fi
tarball="${tarballs[0]}"
if [[ ! -f src/.unpacked ]]; then
  say "unpack: $tarball"
  rm -rf src && mkdir src
  tar -xzf "$tarball" -C src --strip-components=1
  touch src/.unpacked
fi
tree="$WORK/src"

# Step 2 (trap 1): GOPATH mode, as upstream 1.20 builds; module mode wants to rewrite go.mod.
# GOTMPDIR too, so that an interrupted build leaves nothing in /tmp.
export GOPATH="$WORK/gopath" GOCACHE="$WORK/gocache" GOTMPDIR="$WORK/tmp" GO111MODULE=off GOPROXY=off CGO_ENABLED=0 GOFLAGS=
mkdir -p "$GOPATH/src/k8s.io" "$GOTMPDIR"
ln -sfn "$tree" "$GOPATH/src/k8s.io/kubernetes"
pkgdir="$GOPATH/src/k8s.io/kubernetes"

# Step 3 (trap 3): the vendored reflect2 1.0.1 crashes under Go >= 1.18; Debian's newer
# reflect2 and json-iterator replace it.
if [[ ! -f "$tree/.vendor-replaced" ]]; then
  say "vendor: replace modern-go/reflect2 and json-iterator/go with Debian's sources"
  rm -rf debs && mkdir -p debs/x
  (cd debs && apt-get "${apt_sandbox[@]}" download -qq golang-github-modern-go-reflect2-dev golang-github-json-iterator-go-dev >&2)
  for d in debs/*.deb; do dpkg-deb -x "$d" debs/x; done
  for p in github.com/modern-go/reflect2 github.com/json-iterator/go; do
    [[ -d "debs/x/usr/share/gocode/src/$p" ]] || die "the Debian package holds no sources for '$p'"
    rm -rf "${tree:?}/vendor/$p"
    cp -rL "debs/x/usr/share/gocode/src/$p" "$tree/vendor/$p"
    # Debian's source folders may carry tests and examples with imports the vendor tree lacks.
    find "$tree/vendor/$p" -name '*_test.go' -delete
  done
  touch "$tree/.vendor-replaced"
fi

# Step 4 (trap 2): the generated OpenAPI definitions are not in the tarball; `make` would run openapi-gen.
openapi="$tree/pkg/generated/openapi/zz_generated.openapi.go"
if [[ ! -f "$openapi" ]]; then
  say "generate: openapi-gen over every package tagged +k8s:openapi-gen="
  (cd "$pkgdir" && nice -n 19 "$GO" build -o "$WORK/openapi-gen" ./vendor/k8s.io/kube-openapi/cmd/openapi-gen)
  # Staging packages are read through vendor/ (vendor/k8s.io/* link to staging/src/k8s.io/*).
  dirs=$(cd "$pkgdir" && grep -Rl --include='*.go' -e '+k8s:openapi-gen=' \
    --exclude-dir=testdata --exclude-dir=_output --exclude-dir=.git --exclude-dir=staging . 2>/dev/null |
    sed 's|^\./||' | grep -v -e '^vendor/k8s.io/code-generator/' -e '^vendor/k8s.io/sample-apiserver/' |
    xargs -n1 dirname | LC_ALL=C sort -u | sed 's|^|k8s.io/kubernetes/|' | paste -sd, -)
  [[ -n "$dirs" ]] || die "found no package tagged +k8s:openapi-gen= in '$tree'"
  say "generate: $(tr ',' '\n' <<<"$dirs" | wc -l) packages"
  (cd "$pkgdir" && nice -n 19 "$WORK/openapi-gen" \
    --input-dirs "$dirs" \
    --output-base "$GOPATH/src" \
    --output-package k8s.io/kubernetes/pkg/generated/openapi \
    --output-file-base zz_generated.openapi \
    --go-header-file "$tree/vendor/k8s.io/code-generator/hack/boilerplate.go.txt" \
    --report-filename "$WORK/api-rules.report" >&2)
  # A different rule report than upstream's means a different set of packages than upstream used.
  if diff -q <(LC_ALL=C sort "$WORK/api-rules.report") <(LC_ALL=C sort "$tree/api/api-rules/violation_exceptions.list") >/dev/null; then
    say "generate: the API-rule report equals upstream's violation_exceptions.list"
  else
    say "warning: the API-rule report differs from upstream's violation_exceptions.list (see $WORK/api-rules.report)"
  fi
fi

# Step 5: the build, version stamped so --version prints what upstream's would.
say "build: go build k8s.io/kubernetes/cmd/kube-apiserver (nice -n 19)"
v=k8s.io/kubernetes/vendor/k8s.io
ldflags="-s -w"
for pkg in "$v/component-base/version" "$v/client-go/pkg/version"; do
  ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=20"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done
(cd "$pkgdir" && nice -n 19 "$GO" build -ldflags "$ldflags" -o "$WORK/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver)
"$WORK/kube-apiserver" --version | grep -qx "Kubernetes $K8S_VERSION" ||
  die "the built binary prints '$("$WORK/kube-apiserver" --version)' instead of 'Kubernetes $K8S_VERSION'"
mv -f "$WORK/kube-apiserver" "$cached"
say "build: done in $(($(date +%s) - build_started)) s; $(du -h "$cached" | cut -f1) binary"
# The source and Go build cache (about 1.9 GB) are only worth keeping for a rebuild.
if [[ "${KEEP_KUBE_BUILD:-0}" != 1 ]]; then
  say "cleanup: removing $WORK (set KEEP_KUBE_BUILD=1 to keep it)"
  chmod -R u+w "$WORK" 2>/dev/null || true
  rm -rf "$WORK"
fi
finish "$cached"
