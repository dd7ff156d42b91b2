#!/bin/sh
# tools/deps.sh — install the Debian packages a make target needs, when they
# are missing, and say what is being installed.  Usage: tools/deps.sh build|test|demo
# Needs root (or sudo) only when something is missing.
set -eu

build_pkgs="gcc g++ make libc6-dev libzstd-dev zstd libunwind-dev libsimdjson-dev zlib1g-dev liblzma-dev python3-dev"
test_pkgs="$build_pkgs tmux python3 python3-venv python3-pytest python3-torch python3-numpy python3-pil util-linux chromium binutils clang libclang-rt-14-dev"
demo_pkgs="$build_pkgs python3 python3-torch python3-numpy python3-pil"

case "${1:-}" in
build) want=$build_pkgs ;;
test) want=$test_pkgs ;;
demo) want=$demo_pkgs ;;
*) echo "usage: tools/deps.sh build|test|demo" >&2; exit 2 ;;
esac

missing=""
for p in $want; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0

echo "gpustarve: installing Debian packages:$missing" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
# apt-get update once per machine: the package lists may be empty on a fresh one
if [ ! -f /var/lib/apt/periodic/gpustarve-updated ]; then
    $SUDO apt-get update -qq
    $SUDO mkdir -p /var/lib/apt/periodic && $SUDO touch /var/lib/apt/periodic/gpustarve-updated
fi
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >&2
