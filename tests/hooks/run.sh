#!/bin/bash
# run.sh — run the hook tests: each program under LD_PRELOAD=libgpustarve.so
# with a fresh GPUSTARVE_DIR, then the same program in "verify" mode (not
# preloaded) reads the traces back with the gs_reader API.
# Exit status: 0 when every test passed.  BUILD=build by default.
set -u
BUILD=${BUILD:-build}
T=$BUILD/tests/hooks
# GS_SAN_LIB (make test-san-collector): the collector built with ASan + UBSan,
# preloaded after the sanitizer runtime GS_SAN_RUNTIME (ld.so wants it first)
if [ -n "${GS_SAN_LIB:-}" ]; then
    LIB="$GS_SAN_RUNTIME:$GS_SAN_LIB"
    export HK_CALLER_ANY=1 # hk_stacks: the runtime's interceptors call the hooks
else
    LIB=$(cd "$BUILD" && pwd)/libgpustarve.so
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gs-hooks.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
pass=0
fail=0

ok() { pass=$((pass + 1)); echo "  ok      $1"; }
bad() { fail=$((fail + 1)); echo "  FAIL    $1"; [ -n "${2:-}" ] && sed 's/^/          /' "$2"; }

# fresh <name>: sets D (trace dir) and TMPD (scratch dir)
fresh() {
    D=$WORK/$1.trace
    TMPD=$WORK/$1.tmp
    rm -rf "$D" "$TMPD"
    mkdir -p "$D" "$TMPD"
}

# std <name> [env...]: act under the preload ($PRE, else $LIB), expect exit 0,
# then verify.
std() {
    local name=$1
    shift
    fresh "$name"
    if ! env "$@" HK_TMP="$TMPD" GPUSTARVE_DIR="$D" LD_PRELOAD="${PRE:-$LIB}" "$T/$name" >"$TMPD/act.log" 2>&1; then
        bad "$name (act)" "$TMPD/act.log"
        return
    fi
    if HK_TMP="$TMPD" "$T/$name" verify "$D" >"$TMPD/verify.log" 2>&1; then
        ok "$name"
    else
        bad "$name (verify)" "$TMPD/verify.log"
    fi
}

for t in hk_io hk_readpos hk_stdio hk_mmap hk_stat hk_poll hk_ctor hk_fork hk_cpulimits hk_threads hk_exec; do
    std "$t"
done
# a process with one thread: no thread of ours until it starts one or its
# ring needs the writer (docs/collector-safety.md, "Threads started late")
for mode in exit thread fill fork; do
    fresh "hk_late_$mode"
    if HK_TMP="$TMPD" GPUSTARVE_FLUSH_MS=20 GPUSTARVE_RING_EVENTS=1024 GPUSTARVE_DIR="$D" \
        LD_PRELOAD="$LIB" "$T/hk_late" "$mode" >"$TMPD/act.log" 2>&1 &&
        HK_TMP="$TMPD" "$T/hk_late" verify "$D" "$mode" >>"$TMPD/act.log" 2>&1; then
        ok "hk_late $mode"
    else
        bad "hk_late $mode" "$TMPD/act.log"
    fi
done
# births: a thread that begins while traced is measured from before it
# existed; a forked child's writer takes no first pass (no tick in 60 s)
fresh hk_births
if HK_TMP="$TMPD" GPUSTARVE_FLUSH_MS=60000 GPUSTARVE_DIR="$D" LD_PRELOAD="$LIB" \
    "$T/hk_births" >"$TMPD/act.log" 2>&1 &&
    HK_TMP="$TMPD" "$T/hk_births" verify "$D" >>"$TMPD/act.log" 2>&1; then
    ok "hk_births"
else
    bad "hk_births" "$TMPD/act.log"
fi
# the trace file never becomes the program's (docs/collector-safety.md): in a
# descriptor table of its own (default), and in the program's table where
# unshare is refused (hk_noshare: a seccomp filter, as container runtimes use);
# threads from the start (GPUSTARVE_EAGER_THREADS), so that each mode holds
# while the program runs
fresh hk_tracefd
if HK_TMP="$TMPD" GPUSTARVE_FLUSH_MS=20 GPUSTARVE_EAGER_THREADS=1 GPUSTARVE_DIR="$D" LD_PRELOAD="$LIB" \
    "$T/hk_tracefd" >"$TMPD/act.log" 2>&1 &&
    HK_TMP="$TMPD" "$T/hk_tracefd" verify "$D" >>"$TMPD/act.log" 2>&1; then
    ok "hk_tracefd (own descriptor table)"
else
    bad "hk_tracefd (own descriptor table)" "$TMPD/act.log"
fi
fresh hk_tracefd_shared
if HK_SHARED=1 HK_TMP="$TMPD" GPUSTARVE_FLUSH_MS=20 GPUSTARVE_EAGER_THREADS=1 GPUSTARVE_DIR="$D" \
    "$T/hk_noshare" env LD_PRELOAD="$LIB" "$T/hk_tracefd" >"$TMPD/act.log" 2>&1 &&
    HK_TMP="$TMPD" "$T/hk_tracefd" verify "$D" shared >>"$TMPD/act.log" 2>&1; then
    ok "hk_tracefd (program's table, unshare refused)"
else
    bad "hk_tracefd (program's table, unshare refused)" "$TMPD/act.log"
fi
# a low descriptor limit: the program's own fd 3 is its own
for wrap in "" "$T/hk_noshare"; do
    fresh hk_ulimit
    # shellcheck disable=SC2016
    (ulimit -n 256 && GPUSTARVE_DIR="$D" $wrap env LD_PRELOAD="$LIB" \
        bash -c 'exec 3>"$1"; echo hi >&3; exec 3>&-; cat /dev/null "$1"' _ "$TMPD/three.txt" \
        >"$TMPD/out.txt" 2>"$TMPD/err.txt")
    rc=$?
    what="ulimit -n 256${wrap:+, unshare refused}"
    if [ "$rc" = 0 ] && [ "$(cat "$TMPD/three.txt")" = hi ] && [ "$(cat "$TMPD/out.txt")" = hi ]; then
        if [ -z "$wrap" ] && [ ! -s "$TMPD/err.txt" ]; then
            ok "$what: exec 3>file writes the file, tracing goes on"
        elif [ -n "$wrap" ] && [ "$(wc -l <"$TMPD/err.txt")" = 1 ] &&
            grep -q "out of the program's descriptors" "$TMPD/err.txt"; then
            ok "$what: exec 3>file writes the file, tracing stops with one warning"
        else
            bad "$what (stderr)" "$TMPD/err.txt"
        fi
    else
        echo "exit $rc, three.txt: $(cat "$TMPD/three.txt")" >>"$TMPD/err.txt"
        bad "$what" "$TMPD/err.txt"
    fi
done
std hk_drops GPUSTARVE_RING_EVENTS=64 GPUSTARVE_FLUSH_MS=5000
# runs of repeated calls (repeats records) back exactly; with a drain every
# millisecond, runs are cut across drains and frames
std hk_runs
std hk_runs GPUSTARVE_FLUSH_MS=1
std hk_runs GPUSTARVE_ZSTD_LEVEL=-3
std hk_io GPUSTARVE_CLOCK=mono
# every zstd level the collector accepts writes frames the reader takes back
# whole: zstd's fastest and slowest, a level below the range (clamped to -7),
# 0 (zstd's default) and a value that is not a number (the default, -3)
for lv in -7 19 -99999 0 x3; do
    std hk_io GPUSTARVE_ZSTD_LEVEL=$lv
done
# call stacks (GPUSTARVE_STACKS=1): same results and errno, no allocation
# after a thread's first hooked call, every stack defined and mapped
# RATIONALE: rings larger than one thread's 40k events: 4 threads of
# back-to-back preads on 2 CPUs can starve the writer long enough to fill a
# default ring (drops are counted, by design); this test is about stacks, and
# it checks that nothing was dropped, so the rings must not be able to fill.
# Stacks run as `gpustarve run --stacks` runs them, libunwind preloaded after
# the library (static TLS); the last hk_stacks run opens it late instead
# (GPUSTARVE_STACKS=1 by hand: dynamic TLS, allocated at the thread's
# first hooked call, before the test counts).
PRE="$LIB:libgcc_s.so.1:libunwind.so.8"
std hk_stacks GPUSTARVE_STACKS=1 GPUSTARVE_RING_EVENTS=262144
std hk_stacks GPUSTARVE_STACKS=1 GPUSTARVE_STACK_EVERY=1 GPUSTARVE_STACK_DEPTH=64 GPUSTARVE_RING_EVENTS=262144
PRE=""
std hk_stacks GPUSTARVE_STACKS=1 GPUSTARVE_RING_EVENTS=262144
PRE="$LIB:libgcc_s.so.1:libunwind.so.8"
fresh hk_stacks_off
if HK_TMP="$TMPD" GPUSTARVE_DIR="$D" GPUSTARVE_RING_EVENTS=262144 LD_PRELOAD="$LIB" \
    "$T/hk_stacks" >"$TMPD/act.log" 2>&1 &&
    HK_TMP="$TMPD" "$T/hk_stacks" verify "$D" off >"$TMPD/verify.log" 2>&1; then
    ok "hk_stacks (stacks off: no stack, no mapping)"
else
    bad "hk_stacks (stacks off)" "$TMPD/verify.log"
fi
for t in hk_io hk_stat hk_mmap hk_stdio hk_fork hk_threads; do
    std "$t" GPUSTARVE_STACKS=1
done
PRE=""

# the CUPTI record decoder on hand-built records, the NVTX ABI against the
# real headers (plain programs, not preloaded)
for t in hk_cupti_decode hk_nvtx_abi; do
    [ -x "$T/$t" ] || continue
    fresh "$t"
    if "$T/$t" >"$TMPD/out.log" 2>&1; then
        ok "$t ($(tail -1 "$TMPD/out.log"))"
    else
        bad "$t" "$TMPD/out.log"
    fi
done

# a set-group-ID program is not traced: GPUSTARVE_* cannot steer it
fresh hk_secure
cp "$T/hk_secure" "$TMPD/hk_secure"
if HK_TMP="$TMPD" GPUSTARVE_DIR="$D/plain" "$TMPD/hk_secure" >"$TMPD/plain.txt" 2>&1 &&
    grep -q "secure 0 read ok" "$TMPD/plain.txt" && ls "$D"/plain/*.gst >/dev/null 2>&1; then
    if [ "$(id -u)" != 0 ] || ! getent group nogroup >/dev/null; then
        echo "  skip    hk_secure (needs root to make a set-group-ID copy)"
    else
        chgrp nogroup "$TMPD/hk_secure" && chmod g+s "$TMPD/hk_secure"
        if GPUSTARVE_DIR="$D/secure" "$TMPD/hk_secure" >"$TMPD/secure.txt" 2>&1 &&
            grep -q "secure 1 read ok" "$TMPD/secure.txt" && [ ! -e "$D/secure" ]; then
            ok "hk_secure (set-group-ID: not traced, GPUSTARVE_DIR untouched)"
        else
            ls -la "$D" >>"$TMPD/secure.txt" 2>&1
            bad "hk_secure" "$TMPD/secure.txt"
        fi
    fi
else
    bad "hk_secure (control: traced without the bit)" "$TMPD/plain.txt"
fi

# errno and results identical with and without the preload
fresh hk_errno
HK_TMP="$TMPD" "$T/hk_errno" >"$TMPD/plain.txt" 2>&1
HK_TMP="$TMPD" GPUSTARVE_DIR="$D" LD_PRELOAD="$LIB" "$T/hk_errno" >"$TMPD/traced.txt" 2>&1
if [ -s "$TMPD/plain.txt" ] && diff "$TMPD/plain.txt" "$TMPD/traced.txt" >"$TMPD/diff.txt"; then
    ok "hk_errno ($(wc -l <"$TMPD/plain.txt") calls identical)"
else
    bad "hk_errno" "$TMPD/diff.txt"
fi
HK_TMP="$TMPD" GPUSTARVE_STACKS=1 GPUSTARVE_STACK_EVERY=1 GPUSTARVE_DIR="$D" LD_PRELOAD="$LIB:libgcc_s.so.1:libunwind.so.8" "$T/hk_errno" >"$TMPD/stacks.txt" 2>&1
if [ -s "$TMPD/plain.txt" ] && diff "$TMPD/plain.txt" "$TMPD/stacks.txt" >"$TMPD/diff.txt"; then
    ok "hk_errno with stacks ($(wc -l <"$TMPD/plain.txt") calls identical)"
else
    bad "hk_errno with stacks" "$TMPD/diff.txt"
fi

# GPUSTARVE_DISABLE=1: pure pass-through, no file
fresh hk_disable
if HK_TMP="$TMPD" GPUSTARVE_DISABLE=1 GPUSTARVE_DIR="$D" LD_PRELOAD="$LIB" "$T/hk_io" >"$TMPD/act.log" 2>&1 &&
    [ -z "$(ls -A "$D")" ]; then
    ok "GPUSTARVE_DISABLE=1"
else
    bad "GPUSTARVE_DISABLE=1" "$TMPD/act.log"
fi

# every way out flushes: exit status unchanged, EXIT record written
for m in exit:3 _exit:4 _Exit:5 term:143 return:6 kill:137; do
    mode=${m%%:*}
    want=${m##*:}
    fresh "hk_exit_$mode"
    (HK_TMP="$TMPD" GPUSTARVE_FLUSH_MS=50 GPUSTARVE_DIR="$D" LD_PRELOAD="$LIB" "$T/hk_exit" "$mode" >"$TMPD/act.log" 2>&1; exit $?) 2>/dev/null
    rc=$?
    if [ "$rc" != "$want" ]; then
        echo "exit status $rc, wanted $want" >>"$TMPD/act.log"
        bad "hk_exit $mode" "$TMPD/act.log"
    elif HK_TMP="$TMPD" "$T/hk_exit" verify "$D" "$mode" >"$TMPD/verify.log" 2>&1; then
        ok "hk_exit $mode"
    else
        bad "hk_exit $mode (verify)" "$TMPD/verify.log"
    fi
done

# tracing failure: one warning line for the whole run (forked child included),
# exit status unchanged
for m in dir fsize; do
    fresh "hk_warn_$m"
    dir=$D
    if [ "$m" = dir ]; then
        dir=$TMPD/not-a-directory
        : >"$dir"
    fi
    GPUSTARVE_DIR="$dir" LD_PRELOAD="$LIB" "$T/hk_warn" "$m" >"$TMPD/out.txt" 2>"$TMPD/err.txt"
    rc=$?
    lines=$(wc -l <"$TMPD/err.txt")
    if [ "$rc" = 3 ] && [ "$lines" = 1 ] && grep -q '^gpustarve: warning: .* tracing stopped$' "$TMPD/err.txt"; then
        ok "hk_warn $m (exit 3, one warning line)"
    else
        echo "exit status $rc, $lines stderr lines" >>"$TMPD/err.txt"
        bad "hk_warn $m" "$TMPD/err.txt"
    fi
done

# the cgroup CPU quota in the `cpu_limits` record: only where a cgroup can be made
# (root, a writable cpu controller of cgroup v2, else v1); else said so
cg=""
if [ -w /sys/fs/cgroup/cgroup.subtree_control ] && grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null &&
    mkdir "/sys/fs/cgroup/gs-hk-$$" 2>/dev/null; then
    cg=/sys/fs/cgroup/gs-hk-$$
    echo "50000 100000" >"$cg/cpu.max" 2>/dev/null || { rmdir "$cg"; cg=""; }
elif [ -w /sys/fs/cgroup/cpu ] && mkdir "/sys/fs/cgroup/cpu/gs-hk-$$" 2>/dev/null; then
    cg=/sys/fs/cgroup/cpu/gs-hk-$$
    echo 50000 >"$cg/cpu.cfs_quota_us" 2>/dev/null || { rmdir "$cg"; cg=""; }
fi
if [ -n "$cg" ]; then
    fresh hk_cpulimits_quota
    if HK_TMP="$TMPD" GPUSTARVE_DIR="$D" HK_LIB="$LIB" CG="$cg" T="$T" \
        sh -c 'echo $$ >"$CG/cgroup.procs" && LD_PRELOAD="$HK_LIB" exec "$T/hk_cpulimits"' \
        >"$TMPD/act.log" 2>&1 &&
        HK_TMP="$TMPD" HK_QUOTA_MILLI=500 "$T/hk_cpulimits" verify "$D" >"$TMPD/verify.log" 2>&1; then
        ok "hk_cpulimits quota ($cg: 0.5 CPU)"
    else
        cat "$TMPD/act.log" >>"$TMPD/verify.log"
        bad "hk_cpulimits quota" "$TMPD/verify.log"
    fi
    rmdir "$cg" 2>/dev/null
else
    echo "  skip    hk_cpulimits quota: no cgroup can be made here (needs root and a writable cpu controller)"
fi

# hook cost (informational): 4 KiB pread on a cached file
fresh hk_bench
plain=$(HK_TMP="$TMPD" "$T/hk_bench" 1000000)
traced=$(HK_TMP="$TMPD" GPUSTARVE_DIR="$D" LD_PRELOAD="$LIB" "$T/hk_bench" 1000000)
echo "  info    pread 4 KiB cached: ${plain} ns untraced, ${traced} ns traced"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
