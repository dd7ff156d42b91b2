#!/bin/sh
# tools/deps.sh — install the Debian packages make targets need, when they
# are missing, and say what is being installed.
#   Usage: tools/deps.sh [--stamp FILE] build|check|test|demo|fuzz|venv...
# Several sets install their union. --stamp FILE: write FILE when something
# was installed or FILE is missing (the Makefile includes FILE, so make
# reads itself again with the packages in place: see "Debian packages
# first" there). Needs root (or sudo) only when something is missing.
set -eu

build_pkgs="gcc g++ make libc6-dev libzstd-dev zstd libunwind-dev libsimdjson-dev zlib1g-dev liblzma-dev python3-dev"
test_pkgs="$build_pkgs tmux python3 python3-venv python3-pytest python3-torch python3-numpy python3-pil util-linux chromium binutils clang libclang-rt-14-dev"
check_pkgs="$build_pkgs python3 python3-pytest"
demo_pkgs="$build_pkgs python3 python3-torch python3-numpy python3-pil"
fuzz_pkgs="$build_pkgs clang libclang-rt-14-dev"
venv_pkgs="python3 python3-venv"

usage() { echo "usage: tools/deps.sh [--stamp FILE] build|check|test|demo|fuzz|venv..." >&2; exit 2; }
stamp=""
if [ "${1:-}" = --stamp ]; then
    [ $# -ge 2 ] || usage
    stamp=$2
    shift 2
fi
[ $# -ge 1 ] || usage
want=""
for set in "$@"; do
    case "$set" in
    build) want="$want $build_pkgs" ;;
    check) want="$want $check_pkgs" ;;
    test) want="$want $test_pkgs" ;;
    demo) want="$want $demo_pkgs" ;;
    fuzz) want="$want $fuzz_pkgs" ;;
    venv) want="$want $venv_pkgs" ;;
    *) usage ;;
    esac
done
want=$(printf '%s\n' $want | sort -u)

write_stamp() {
    [ -n "$stamp" ] || return 0
    mkdir -p "$(dirname "$stamp")"
    echo "# written by tools/deps.sh $*" >"$stamp"
}
if ! command -v dpkg-query >/dev/null 2>&1; then
    # said once per build folder when make asks
    if [ -z "$stamp" ] || [ ! -f "$stamp" ]; then
        echo "gpustarve: not a Debian system (no dpkg-query): install the equivalents of" $want "yourself" >&2
        write_stamp "$@"
    fi
    exit 0
fi

# one dpkg-query for all of them: unknown packages print nothing
installed=$(dpkg-query -W -f='${Package} ${Status}\n' $want 2>/dev/null |
    awk '$NF == "installed" && $(NF-1) == "ok" { print $1 }') || true
missing=""
for p in $want; do
    printf '%s\n' "$installed" | grep -qx "$p" || missing="$missing $p"
done

if [ -z "$missing" ]; then
    [ -n "$stamp" ] && [ ! -f "$stamp" ] && write_stamp "$@"
    exit 0
fi

echo "gpustarve: installing Debian packages:$missing" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
# apt-get update once per machine: the package lists may be empty on a fresh one
if [ ! -f /var/lib/apt/periodic/gpustarve-updated ]; then
    $SUDO apt-get update -qq
    $SUDO mkdir -p /var/lib/apt/periodic && $SUDO touch /var/lib/apt/periodic/gpustarve-updated
fi
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >&2
write_stamp "$@"
