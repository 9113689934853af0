#!/usr/bin/env bash
# A container engine without Docker's engine or an image registry: podman, podman-compose and runc
# from Debian's packages, a containers.conf podman can start containers with on these machines, and a
# local base image made with debootstrap.  Used by scripts/toolchains.sh (toolchain_podman) and by
# tests/integration/test_container.py; docs/container.md tells the story.
#
# Sourced, it defines the functions below; run, it calls one of them:
#   scripts/container_engine.sh install | conf | base | ready | build CONTEXT TAG [--build-arg ...] |
#                               up PROJECT FILE [ARGS...] | down PROJECT FILE
# `ready` is install + conf + base; `conf` prints the containers.conf path to export as CONTAINERS_CONF.
# Runs as root (podman's root storage; debootstrap and apt-get need it).
#
# Settings (environment): CE_WORK (scratch and containers.conf, default ~/.cache/mockbroker-podman),
# CE_BASE (the base image's name), CE_BASE_PKGS (Debian packages in it: python3 and python3-venv so the
# Dockerfile can `python3 -m venv` and pip install there), CE_MIRROR (default: the mirror apt uses).

CE_WORK=${CE_WORK:-${XDG_CACHE_HOME:-$HOME/.cache}/mockbroker-podman}
CE_BASE=${CE_BASE:-localhost/mockbroker-base:bookworm}
CE_BASE_PKGS=${CE_BASE_PKGS:-python3,python3-venv,ca-certificates}
# netavark and aardvark-dns: without them podman 4.3 falls back to CNI, whose networks have no DNS, so
# compose services could not reach each other by name (kafka:9092).  iptables: netavark 1.4 sets up each
# network's NAT and port forwarding with the iptables command; without it every container on a compose
# network fails to start ("netavark: No such file or directory") while podman-compose still exits 0.
# Installed with --no-install-recommends, so everything the path needs is named here (podman only
# suggests iptables).
CE_PACKAGES=(podman podman-compose runc debootstrap netavark aardvark-dns iptables)
# CE_TOOLS: the commands those packages bring that the container path runs (iptables is in /usr/sbin)
CE_TOOLS=(podman podman-compose runc debootstrap iptables)
CE_LIBEXEC=${CE_PODMAN_LIBEXEC:-/usr/lib/podman}

# ce_mirror: the Debian mirror apt already uses (deb822 sources or sources.list), else deb.debian.org.
ce_mirror() {
  if [ -n "${CE_MIRROR:-}" ]; then echo "$CE_MIRROR"; return; fi
  local m=""
  [ -f /etc/apt/sources.list.d/debian.sources ] &&
    m=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources)
  [ -z "$m" ] && [ -f /etc/apt/sources.list ] &&
    m=$(awk '$1=="deb"{print $2; exit}' /etc/apt/sources.list)
  echo "${m:-http://deb.debian.org/debian}"
}

# ce_missing: prints what of the container path is not installed (commands not on PATH, netavark and
# aardvark-dns not in $CE_LIBEXEC); status 1 when nothing is missing.
ce_missing() {
  local tool absent=()
  for tool in "${CE_TOOLS[@]}"; do
    command -v "$tool" >/dev/null 2>&1 || absent+=("$tool")
  done
  for tool in netavark aardvark-dns; do
    [ -x "$CE_LIBEXEC/$tool" ] || absent+=("$CE_LIBEXEC/$tool")
  done
  [ "${#absent[@]}" -ne 0 ] || return 1
  echo "${absent[*]}"
}

# ce_install: apt-get install of $CE_PACKAGES (runc: crun 1.8 refuses this machine's hybrid cgroup
# layout); nothing when all are there; apt-get update only when the install cannot find the packages.
# Status: 0 done, apt-get's when it failed, or 200 (and ce_missing's list on stderr) when the packages
# installed still leave something of the path missing.
ce_install() {
  ce_missing >/dev/null || return 0
  local install=(install -y -qq --no-install-recommends "${CE_PACKAGES[@]}")
  if ! DEBIAN_FRONTEND=noninteractive apt-get "${install[@]}" >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive apt-get "${install[@]}" || return
  fi
  hash -r
  local absent
  if absent=$(ce_missing); then
    echo "$absent" >&2
    return 200
  fi
}

# ce_conf: writes $CE_WORK/containers.conf (runc; netavark, whose networks resolve service names; ulimits no higher than our hard limits: without
# CAP_SYS_RESOURCE podman's defaults nofile=1048576 / nproc=host make every container fail with
# setrlimit errors, and podman caps its own RLIMIT_NPROC at 32768), exports CONTAINERS_CONF, prints it.
ce_conf() {
  local nofile nproc
  nofile=$(ulimit -Hn); nproc=$(ulimit -Hu)
  [ "$nofile" = unlimited ] && nofile=1048576
  if [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; then nproc=32768; fi
  mkdir -p "$CE_WORK" || return
  cat > "$CE_WORK/containers.conf" <<CONF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
[engine]
runtime = "runc"
[network]
network_backend = "netavark"
CONF
  export CONTAINERS_CONF="$CE_WORK/containers.conf"
  echo "$CONTAINERS_CONF"
}

# ce_base: the base image $CE_BASE, made once (about 40 s) with debootstrap (minbase + $CE_BASE_PKGS)
# from the apt mirror and `podman import`; nothing when it exists.
ce_base() {
  podman image exists "$CE_BASE" && return 0
  local rootfs="$CE_WORK/rootfs"
  rm -rf "$rootfs" && mkdir -p "$CE_WORK" || return
  debootstrap --variant=minbase --include="$CE_BASE_PKGS" bookworm "$rootfs" "$(ce_mirror)" >"$CE_WORK/debootstrap.log" 2>&1 || {
    echo "debootstrap failed (log: $CE_WORK/debootstrap.log):" >&2; tail -5 "$CE_WORK/debootstrap.log" >&2
    rm -rf "$rootfs"; return 1; }
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | podman import --change 'CMD ["/bin/bash"]' - "$CE_BASE" >/dev/null || { rm -rf "$rootfs"; return 1; }
  rm -rf "$rootfs"
}

# ce_ready: packages, containers.conf and the base image.
ce_ready() {
  ce_install && ce_conf >/dev/null && ce_base
}

# ce_build CONTEXT TAG [ARGS...]: podman build of CONTEXT/Dockerfile (ARGS may name another with -f)
# with BASE=$CE_BASE, never pulling, in Docker's format (OCI images drop HEALTHCHECK).  The host's CA
# bundle is mounted for pip (PIP_CA: TLS-intercepting proxies) and $CE_WORK/pip-cache as pip's cache
# (PIP_CACHE), so a rebuilt dependency layer downloads nothing again.  RUN steps use the host's network
# (--network host): a netavark bridge here cannot reach the host's resolver, so pip could not resolve
# pypi.org; the host's network is what a build needs anyway (downloads), and nothing listens in a build.
ce_build() {
  local ctx=$1 tag=$2 ca=/etc/ssl/certs/ca-certificates.crt
  shift 2
  local extra=(--build-arg "BASE=$CE_BASE")
  mkdir -p "$CE_WORK/pip-cache" || return
  extra+=(-v "$CE_WORK/pip-cache:/var/cache/mockbroker-pip:rw" --build-arg PIP_CACHE=/var/cache/mockbroker-pip)
  if [ -f "$ca" ]; then
    extra+=(-v "$ca:/run/mockbroker-build-ca.crt:ro" --build-arg PIP_CA=/run/mockbroker-build-ca.crt)
  fi
  case " $* " in
    *" -f "*) ;;
    *) extra+=(-f "$ctx/Dockerfile") ;;
  esac
  podman build --pull=never --format docker --network host "${extra[@]}" -t "$tag" "$@" "$ctx"
}

# ce_up PROJECT FILE [ARGS...]: podman-compose up (detached unless ARGS say otherwise).
ce_up() {
  local project=$1 file=$2
  shift 2
  [ "$#" -eq 0 ] && set -- -d
  podman-compose -p "$project" -f "$file" up "$@"
}

# ce_down PROJECT FILE: stop and remove the project's containers at once (-t 0) and its network, which
# podman-compose 1.0 leaves behind.
ce_down() {
  local project=$1 file=$2
  podman-compose -p "$project" -f "$file" down -t 0 >/dev/null 2>&1
  podman ps -aq --filter "label=io.podman.compose.project=$project" | xargs -r podman rm -f -t 0 >/dev/null 2>&1
  podman network rm -f "${project}_default" >/dev/null 2>&1
  return 0
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -uo pipefail
  cmd=${1:-}
  shift || true
  case "$cmd" in
    install) ce_install ;;
    conf) ce_conf ;;
    base) ce_conf >/dev/null && ce_base ;;
    ready) ce_ready ;;
    build) ce_conf >/dev/null && ce_build "$@" ;;
    up) ce_conf >/dev/null && ce_up "$@" ;;
    down) ce_conf >/dev/null && ce_down "$@" ;;
    *) echo "usage: $0 install|conf|base|ready|build CONTEXT TAG [ARGS]|up PROJECT FILE [ARGS]|down PROJECT FILE" >&2; exit 2 ;;
  esac
fi
