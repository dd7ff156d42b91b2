/* gs_recover.c — reads a live file (gs_live.h) left next to a trace file:
 * the records a process had not yet written when it ended, the strings they
 * name, its drop and loss counters, and how it ended.
 *
 * Must never: trust a field of the file before bounding it (the file may be
 * damaged or hostile): slots, capacities, offsets, heads and tails, string
 * lengths are all checked against the format's bounds and the file's size;
 * read more than the file holds; allocate more than it reads.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    gs_rec buf[256];
    char text[sizeof(gs_live_str) + GS_STRING_MAX + 8];
};

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

static int valid_header(const gs_live_header *h, uint64_t size, uint64_t *cap)
{
    if (memcmp(h->magic, GS_LIVE_MAGIC, 8) != 0 || h->byte_order != GS_BYTE_ORDER_MARK ||
        h->version != GS_LIVE_VERSION || h->header_size != GS_LIVE_HEADER_SIZE)
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

int gs_recovery_open(gs_recovery **out, const char *live_path, uint64_t pid, uint32_t exec_seq,
                     uint64_t trace_size)
{
    *out = NULL;
    int fd = open(live_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return errno == ENOENT ? 0 : GS_ERR_IO;
    struct stat st;
    gs_recovery *rc = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size < GS_LIVE_HEADER_SIZE)
        goto bad;
    rc = calloc(1, sizeof *rc);
    if (!rc) {
        close(fd);
        return GS_ERR_NOMEM;
    }
    rc->fd = fd;
    rc->size = (uint64_t)st.st_size;
    if (read_at(fd, &rc->h, sizeof rc->h, 0) != 0 || !valid_header(&rc->h, rc->size, &rc->cap))
        goto bad;
    if (rc->h.pid != pid || rc->h.exec_seq != exec_seq)
        goto bad; /* another process image's file */
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

int gs_recovery_strings(gs_recovery *rc, gs_string_fn fn, void *ctx)
{
    uint64_t off = 0;
    while (off + sizeof(gs_live_str) <= rc->h.strlog_used) {
        gs_live_str *e = (gs_live_str *)rc->text;
        if (read_at(rc->fd, e, sizeof *e, rc->h.strlog_off + off) != 0)
            return GS_ERR_IO;
        const uint32_t id = atomic_load_explicit(&e->id, memory_order_relaxed);
        if (e->len == 0 && id == 0)
            break; /* space handed out, never written: the log ends here */
        if (e->len > GS_STRING_MAX)
            return GS_ERR_CORRUPT;
        const uint64_t size = GS_LIVE_STR_SIZE(e->len);
        if (off + size > rc->h.strlog_used)
            break;
        if (id != 0) {
            if (read_at(rc->fd, e->bytes, e->len, rc->h.strlog_off + off + sizeof *e) != 0)
                return GS_ERR_IO;
            fn(ctx, id, e->bytes, e->len);
        }
        off += size;
    }
    return GS_OK;
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
        /* contiguous records from pos, up to the ring's end and the buffer */
        uint64_t idx = rc->pos & (rc->cap - 1);
        uint64_t take = rc->end - rc->pos;
        if (take > rc->cap - idx)
            take = rc->cap - idx;
        if (take > sizeof rc->buf / sizeof rc->buf[0])
            take = sizeof rc->buf / sizeof rc->buf[0];
        if (take > max - n)
            take = max - n;
        if (read_at(rc->fd, rc->buf, (size_t)take * sizeof(gs_rec), slot_off + idx * sizeof(gs_rec)) != 0)
            return GS_ERR_IO;
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
