/* gs_recover.c — reads a live file (gs_live.h) left next to a trace file:
 * the records a process had not yet written when it ended, the strings they
 * name, its drop and loss counters, and how it ended.
 *
 * Must never: trust a field of the file before bounding it (the file may be
 * damaged or hostile): slots, capacities, offsets, heads and tails, string
 * lengths and ids are all checked against the format's bounds and the
 * file's size; read more than the file holds on disk (the file is sparse,
 * and a header may claim terabytes of records: holes are skipped, not read,
 * and what is read is bounded by the blocks the file has, st_blocks); make
 * a system call per record or per string; allocate more than it reads.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* RATIONALE: where the file system cannot say where the holes are
 * (SEEK_DATA unsupported), a reader still reads at most twice the bytes the
 * file has on disk, plus this, before it counts the rest unreadable: a
 * sparse file claiming 4,096 slots of 2^24 records once took hours. */
#define READ_SLACK (16ull << 20)

#include "gs_live.h"
#include "gs_recover.h"
#include "gs_trace.h"

struct gs_recovery {
    int fd;
    uint64_t size;
    gs_live_header h;
    int tsc;
    uint64_t cap;  /* records per slot */
    uint32_t slot; /* next slot to read */
    uint64_t pos, end; /* records [pos, end) of the current slot still to read */
    uint32_t tid;
    uint64_t slots_dropped; /* sum over non-free slots */
    uint64_t skipped;       /* records not recoverable (unknown kind, torn) */
    int written;            /* the frame being written at the end is in the trace file */
    uint64_t budget;        /* bytes of records and log still to be read (st_blocks) */
    uint64_t data_lo, data_hi; /* a known stretch of data [lo, hi): no hole there */
    int no_seek_data;       /* the file system cannot say where holes are */
    gs_rec buf[256];        /* records; the string log's window, too */
};
_Static_assert(sizeof(((gs_recovery *)0)->buf) >= GS_LIVE_STR_SIZE(GS_STRING_MAX),
               "the log's window holds a whole entry");

static int read_at(int fd, void *buf, size_t n, uint64_t off)
{
    size_t done = 0;
    while (done < n) {
        ssize_t r = pread(fd, (char *)buf + done, n - done, (off_t)(off + done));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        done += (size_t)r;
    }
    return 0;
}

/* Bytes from off (at most len) that lie in a hole of the file: they read as
 * zeros and are not read. 0 when off is in data (then [off, data_hi) is). */
static uint64_t hole_bytes(gs_recovery *rc, uint64_t off, uint64_t len)
{
    if (rc->no_seek_data || (off >= rc->data_lo && off < rc->data_hi))
        return 0;
    const off_t d = lseek(rc->fd, (off_t)off, SEEK_DATA);
    if (d < 0 && errno != ENXIO) {
        rc->no_seek_data = 1; /* say nothing: read it all, within the budget */
        return 0;
    }
    const uint64_t data = d < 0 ? rc->size : (uint64_t)d; /* ENXIO: a hole to the end */
    if (data > off)
        return data - off < len ? data - off : len;
    const off_t h = lseek(rc->fd, (off_t)off, SEEK_HOLE);
    rc->data_lo = off;
    rc->data_hi = h < 0 ? rc->size : (uint64_t)h;
    return 0;
}

/* Read n bytes at off within the budget: 0, -1 on a read error, 1 when the
 * budget is spent (nothing read). */
static int read_budget(gs_recovery *rc, void *buf, size_t n, uint64_t off)
{
    if (n > rc->budget)
        return 1;
    rc->budget -= n;
    return read_at(rc->fd, buf, n, off) == 0 ? 0 : -1;
}

/* 1 when the header is one this reader can trust; else 0 and why. */
static int valid_header(const gs_live_header *h, uint64_t size, uint64_t *cap, char *why,
                        size_t whylen)
{
    if (memcmp(h->magic, GS_LIVE_MAGIC, 8) != 0 || h->byte_order != GS_BYTE_ORDER_MARK) {
        snprintf(why, whylen, "its header is damaged (not a live file's magic)");
        return 0;
    }
    if (h->version != GS_LIVE_VERSION) {
        snprintf(why, whylen, "live file version %u is not the one this gpustarve reads (%u)",
                 h->version, GS_LIVE_VERSION);
        return 0;
    }
    snprintf(why, whylen, "its header is damaged (a size or offset out of bounds)");
    if (h->header_size != GS_LIVE_HEADER_SIZE)
        return 0;
    if (h->slots > GS_LIVE_SLOTS_MAX || h->slot_bytes < sizeof(gs_ring) + sizeof(gs_rec) ||
        (h->slot_bytes - sizeof(gs_ring)) % sizeof(gs_rec) != 0)
        return 0;
    const uint64_t c = (h->slot_bytes - sizeof(gs_ring)) / sizeof(gs_rec);
    if (c > GS_LIVE_RING_EVENTS_MAX || (c & (c - 1)) != 0)
        return 0;
    if (h->strlog_off < GS_LIVE_HEADER_SIZE || h->strlog_cap > GS_LIVE_STRLOG_MAX ||
        h->strlog_off + h->strlog_cap > h->slots_off || h->slots_off > size ||
        (size - h->slots_off) / h->slot_bytes < h->slots)
        return 0;
    *cap = c;
    return 1;
}

/* RATIONALE: the collector creates the file, lays it out, then writes the
 * header before it hands out a slot or logs a string: a file shorter than
 * its header or with no magic yet holds nothing (a process just starting). */
static int not_started(const gs_live_header *h, uint64_t size)
{
    static const char zero[8];
    return size < GS_LIVE_HEADER_SIZE || memcmp(h->magic, zero, sizeof zero) == 0;
}

int gs_recovery_open(gs_recovery **out, const char *live_path, uint64_t pid, uint32_t exec_seq,
                     uint64_t trace_size, char *why, size_t whylen)
{
    *out = NULL;
    snprintf(why, whylen, "it cannot be read");
    int fd = open(live_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return errno == ENOENT ? 0 : GS_ERR_IO;
    struct stat st;
    gs_recovery *rc = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(why, whylen, "it is not a regular file");
        goto bad;
    }
    rc = calloc(1, sizeof *rc);
    if (!rc) {
        close(fd);
        return GS_ERR_NOMEM;
    }
    rc->fd = fd;
    rc->size = (uint64_t)st.st_size;
    rc->budget = 2 * (uint64_t)st.st_blocks * 512 + READ_SLACK;
    if (rc->size >= sizeof rc->h && read_at(fd, &rc->h, sizeof rc->h, 0) != 0)
        goto bad;
    if (not_started(&rc->h, rc->size)) {
        close(fd);
        free(rc);
        return 0;
    }
    if (!valid_header(&rc->h, rc->size, &rc->cap, why, whylen))
        goto bad;
    if (rc->h.pid != pid || rc->h.exec_seq != exec_seq) {
        snprintf(why, whylen, "it names another process image (pid %llu, exec %u)",
                 (unsigned long long)rc->h.pid, rc->h.exec_seq);
        goto bad;
    }
    rc->tsc = (rc->h.flags & GS_HDR_F_TSC) != 0;
    const uint64_t pend_end = atomic_load_explicit(&rc->h.pend_end, memory_order_relaxed);
    rc->written = pend_end != 0 && trace_size >= pend_end;
    if (rc->h.slots_used > rc->h.slots)
        rc->h.slots_used = rc->h.slots;
    if (rc->h.strlog_used > rc->h.strlog_cap)
        rc->h.strlog_used = rc->h.strlog_cap;
    *out = rc;
    return 1;
bad:
    close(fd);
    free(rc);
    return GS_ERR_CORRUPT;
}

void gs_recovery_close(gs_recovery *rc)
{
    if (!rc)
        return;
    close(rc->fd);
    free(rc);
}

const gs_live_header *gs_recovery_header(const gs_recovery *rc)
{
    return &rc->h;
}

uint64_t gs_recovery_slots_dropped(const gs_recovery *rc)
{
    return rc->slots_dropped;
}

uint64_t gs_recovery_skipped(const gs_recovery *rc)
{
    return rc->skipped;
}

/* RATIONALE: the log is read through a window (the record buffer), not
 * an entry at a time: a 256 MiB log of empty strings once took 162 s and
 * 3.4 GB, two system calls and one allocation per entry. Ids are those the
 * collector hands out (below GS_LIVE_STRING_IDS_MAX, each logged once), so
 * a reader keeps at most that many strings from a log. */
/* Read the log from off into the window (rc->buf): 0, 1 when the log
 * ends there (a hole: never written; or the read budget is spent), or a
 * negative gs_err. */
static int log_window(gs_recovery *rc, uint64_t off, uint64_t *wbase, uint64_t *wlen)
{
    const uint64_t left = rc->h.strlog_used - off;
    const uint64_t want = left < sizeof rc->buf ? left : sizeof rc->buf;
    if (hole_bytes(rc, rc->h.strlog_off + off, want) >= sizeof(gs_live_str))
        return 1;
    const int r = read_budget(rc, rc->buf, (size_t)want, rc->h.strlog_off + off);
    if (r < 0)
        return GS_ERR_IO;
    *wbase = off;
    *wlen = want;
    return r;
}

int gs_recovery_strings(gs_recovery *rc, gs_string_fn fn, void *ctx)
{
    const uint8_t *win = (const uint8_t *)rc->buf;
    const uint64_t used = rc->h.strlog_used;
    uint64_t off = 0, wbase = 0, wlen = 0; /* the window holds [wbase, wbase + wlen) */
    int r = 0;
    while (off + sizeof(gs_live_str) <= used) {
        if (off + sizeof(gs_live_str) > wbase + wlen && (r = log_window(rc, off, &wbase, &wlen)))
            break;
        gs_live_str e;
        memcpy(&e, win + (off - wbase), sizeof e);
        const uint32_t id = atomic_load_explicit(&e.id, memory_order_relaxed);
        if (e.len == 0 && id == 0)
            break; /* space handed out, never written: the log ends here */
        if (e.len > GS_STRING_MAX || id >= GS_LIVE_STRING_IDS_MAX)
            return GS_ERR_CORRUPT;
        const uint64_t size = GS_LIVE_STR_SIZE(e.len);
        if (off + size > used)
            break;
        if (off + size > wbase + wlen && (r = log_window(rc, off, &wbase, &wlen)))
            break;
        if (id != 0)
            fn(ctx, id, (const char *)win + (off - wbase) + sizeof e, e.len);
        off += size;
    }
    return r < 0 ? r : GS_OK;
}

/* Move to the next slot holding records; 0 when none is left. */
static int next_slot(gs_recovery *rc)
{
    while (rc->slot < rc->h.slots_used) {
        gs_ring g;
        const uint64_t off = rc->h.slots_off + (uint64_t)rc->slot * rc->h.slot_bytes;
        rc->slot++;
        if (read_at(rc->fd, &g, sizeof g, off) != 0)
            return -1;
        const uint32_t state = atomic_load_explicit(&g.state, memory_order_relaxed);
        if (state != GS_RING_LIVE && state != GS_RING_DEAD)
            continue;
        const uint64_t head = atomic_load_explicit(&g.head, memory_order_relaxed);
        uint64_t tail = atomic_load_explicit(&g.tail, memory_order_relaxed);
        const uint64_t pend = atomic_load_explicit(&g.pend_tail, memory_order_relaxed);
        if (rc->written && pend > tail && pend <= head)
            tail = pend; /* the frame with those records made it to the file */
        rc->slots_dropped += atomic_load_explicit(&g.dropped, memory_order_relaxed);
        if (g.mask != rc->cap - 1 || head < tail || head - tail > rc->cap) {
            rc->skipped += head > tail && head - tail <= rc->cap ? head - tail : 0;
            continue; /* torn or damaged slot header */
        }
        if (head == tail)
            continue;
        rc->pos = tail;
        rc->end = head;
        rc->tid = g.tid;
        return 1;
    }
    return 0;
}

long gs_recovery_next(gs_recovery *rc, gs_event *out, size_t max, const gs_recovery_stacks *stk)
{
    size_t n = 0;
    while (n < max) {
        if (rc->pos == rc->end) {
            int s = next_slot(rc);
            if (s < 0)
                return GS_ERR_IO;
            if (s == 0)
                break;
            if (n > 0)
                break; /* one thread per batch */
        }
        const uint64_t slot_off =
            rc->h.slots_off + (uint64_t)(rc->slot - 1) * rc->h.slot_bytes + sizeof(gs_ring);
        /* contiguous records from pos, up to the ring's end */
        const uint64_t idx = rc->pos & (rc->cap - 1);
        uint64_t take = rc->end - rc->pos;
        if (take > rc->cap - idx)
            take = rc->cap - idx;
        const uint64_t at = slot_off + idx * sizeof(gs_rec);
        const uint64_t hole = hole_bytes(rc, at, take * sizeof(gs_rec));
        if (hole >= sizeof(gs_rec)) { /* never written: not recoverable, and not read */
            rc->pos += hole / sizeof(gs_rec);
            rc->skipped += hole / sizeof(gs_rec);
            continue;
        }
        /* then up to the buffer, the caller's room and the next hole */
        if (take > sizeof rc->buf / sizeof rc->buf[0])
            take = sizeof rc->buf / sizeof rc->buf[0];
        if (take > max - n)
            take = max - n;
        if (!rc->no_seek_data && rc->data_hi - at < take * sizeof(gs_rec))
            take = (rc->data_hi - at + sizeof(gs_rec) - 1) / sizeof(gs_rec);
        const int r = read_budget(rc, rc->buf, (size_t)take * sizeof(gs_rec), at);
        if (r < 0)
            return GS_ERR_IO;
        if (r > 0) { /* more than the file holds on disk: the rest is not read */
            rc->skipped += rc->end - rc->pos;
            rc->pos = rc->end;
            continue;
        }
        rc->pos += take;
        const uint32_t seq = atomic_load_explicit(&rc->h.cal_seq, memory_order_relaxed);
        (void)seq; /* a torn pair only shifts times: the process is gone */
        for (uint64_t k = 0; k < take; k++) {
            const gs_rec *x = &rc->buf[k];
            const unsigned f = gs_kind_fields(x->kind);
            if (!gs_kind_known(x->kind) || f == 0 || x->kind == GS_K_MAPPING) {
                rc->skipped++;
                continue;
            }
            gs_event *ev = &out[n++];
            gs_rec_to_event(x, ev);
            const gs_live_header *h = &rc->h;
            ev->ts = gs_live_ts(rc->tsc, h->cal_tsc0, h->cal_mono0, h->cal_tsc1, h->cal_mono1, x->ts);
            ev->dur =
                gs_live_dur(rc->tsc, h->cal_tsc0, h->cal_mono0, h->cal_tsc1, h->cal_mono1, x->dur);
            ev->tid = rc->tid;
            const uint32_t sid = GS_REC_STACK_ID(x->stack);
            if (sid && stk && stk->defined(stk->ctx, sid)) {
                ev->stack = sid;
                ev->stack_weight = (x->stack & GS_REC_STACK_SAMPLED) && h->stack_every
                                       ? h->stack_every
                                       : 1;
            }
        }
    }
    return (long)n;
}
