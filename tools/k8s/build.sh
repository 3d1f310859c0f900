#!/usr/bin/env bash
# Builds a local Kubernetes control plane from Go modules (no prebuilt
# binaries, only the `go` command and the Go module proxy):
#
#   k8s    kube-apiserver, kube-scheduler, kube-controller-manager
#          from k8s.io/kubernetes (version pinned in ./go.mod)
#   etcd   etcd from go.etcd.io/etcd/server/v3 (pinned in ./etcd/go.mod)
#   kueue  Kueue's manager from sigs.k8s.io/kueue (pinned in ./kueue/go.mod)
#
# Binaries go to a cache outside the clone, keyed by version:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/octotrain/k8s-v1.37.2/bin/
#   ${XDG_CACHE_HOME:-$HOME/.cache}/octotrain/etcd-v3.6.17/bin/
#   ${XDG_CACHE_HOME:-$HOME/.cache}/octotrain/kueue-v0.17.0/bin/
# A folder that already holds every binary is left alone (warm cache).
#
# Usage: tools/k8s/build.sh [k8s] [etcd] [kueue]     (default: k8s etcd)
# stdout: the bin folder of each component asked for, one per line, in order.
# stderr: progress and per-binary build times.
#
# The environment's GOFLAGS are passed on, e.g. on a busy machine:
#   GOMAXPROCS=1 GOFLAGS=-p=1 nice -n 19 tools/k8s/build.sh
# A cold build of the three k8s binaries is CPU-heavy (tens of minutes on
# 2 cores); see docs/development/testing.md for measured times.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache_root=${XDG_CACHE_HOME:-$HOME/.cache}/octotrain

log() { printf '[k8s-build] %s\n' "$*" >&2; }

# A failed or interrupted build leaves no half-filled bin folder behind.
partial=
trap '[[ -z $partial ]] || rm -rf "$partial"' EXIT

# Version of module $2 as selected by the Go module in dir $1.
mod_version() {
  (cd "$1" && go list -m -f '{{.Version}}' "$2")
}

# build_component NAME VERSION MODULE_DIR GO_ENV -- OUT=PKG ... -- GO_BUILD_FLAGS...
# Builds every OUT from PKG inside MODULE_DIR into $cache_root/NAME-VERSION/bin.
build_component() {
  local name=$1 version=$2 moddir=$3 goenv=$4
  shift 4
  [[ $1 == -- ]] && shift
  local -a targets=()
  while [[ $# -gt 0 && $1 != -- ]]; do targets+=("$1"); shift; done
  [[ $# -gt 0 ]] && shift
  local -a flags=("$@")

  local dest=$cache_root/$name-$version/bin
  local t missing=0
  for t in "${targets[@]}"; do
    [[ -x $dest/${t%%=*} ]] || missing=1
  done
  if [[ $missing == 0 ]]; then
    log "$name $version: warm, nothing to build ($dest)"
    echo "$dest"
    return 0
  fi

  local tmp=$cache_root/$name-$version/bin.partial.$$
  rm -rf "$tmp"
  mkdir -p "$tmp"
  partial=$tmp
  for t in "${targets[@]}"; do
    local out=${t%%=*} pkg=${t#*=} start=$SECONDS
    log "$name $version: building $out from $pkg"
    (cd "$moddir" && env $goenv go build "${flags[@]}" -o "$tmp/$out" "$pkg")
    log "$name $version: $out built in $((SECONDS - start)) s, $(du -h "$tmp/$out" | cut -f1)"
  done
  rm -rf "$dest"
  mv "$tmp" "$dest"
  partial=
  echo "$dest"
}

build_k8s() {
  local v
  v=$(mod_version "$here" k8s.io/kubernetes)
  local major=${v#v}; major=${major%%.*}
  local minor=${v#v*.}; minor=${minor%%.*}
  local date
  date=$(cd "$here" && go list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes)
  # Same version stamping and tags as kubernetes' hack/lib/golang.sh for a
  # non-debug static build (CGO off, -trimpath, -s -w, selinux,notest,grpcnotrace).
  local x="" pkgvar
  for pkgvar in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    x+=" -X $pkgvar.gitVersion=$v -X $pkgvar.gitMajor=$major -X $pkgvar.gitMinor=$minor"
    x+=" -X $pkgvar.gitTreeState=clean -X $pkgvar.buildDate=$date"
  done
  build_component k8s "$v" "$here" "CGO_ENABLED=0" -- \
    kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver \
    kube-scheduler=k8s.io/kubernetes/cmd/kube-scheduler \
    kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager \
    -- -trimpath -buildvcs=false -tags=selinux,notest,grpcnotrace "-ldflags=-s -w$x"
}

build_etcd() {
  local v
  v=$(mod_version "$here/etcd" go.etcd.io/etcd/server/v3)
  build_component etcd "$v" "$here/etcd" "CGO_ENABLED=0" -- \
    etcd=go.etcd.io/etcd/server/v3 \
    -- -trimpath -buildvcs=false "-ldflags=-s -w"
}

build_kueue() {
  local v
  v=$(mod_version "$here/kueue" sigs.k8s.io/kueue)
  local date
  date=$(cd "$here/kueue" && go list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' sigs.k8s.io/kueue)
  # Kueue's Makefile: CGO_ENABLED=0, version stamped into pkg/version.
  local x="-X sigs.k8s.io/kueue/pkg/version.GitVersion=$v -X sigs.k8s.io/kueue/pkg/version.GitCommit="
  x+=" -X sigs.k8s.io/kueue/pkg/version.BuildDate=$date"
  build_component kueue "$v" "$here/kueue" "CGO_ENABLED=0" -- \
    kueue=sigs.k8s.io/kueue/cmd/kueue \
    -- -trimpath -buildvcs=false "-ldflags=-s -w $x"
}

command -v go >/dev/null || { log "the go command is needed"; exit 1; }
[[ $# -gt 0 ]] || set -- k8s etcd
for c in "$@"; do
  case $c in
    k8s) build_k8s ;;
    etcd) build_etcd ;;
    kueue) build_kueue ;;
    *) log "unknown component: $c (k8s, etcd, kueue)"; exit 2 ;;
  esac
done
