/* mc_storage.c — the storage lines of one dataset path (mc_files.h): the
 * sequential read of its largest files and the small files read as
 * DataLoader workers read them, each against the rule of docs/check.md
 * ("Storage"), with the file system's kind or the cgroup's I/O limit as
 * the likely cause when below it.
 *
 * Must never: measure a memory file system and call it storage (that line
 * says "cannot tell").
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "machine/mc_files.h"
#include "machine/mc_seqread.h"

static void seq_line(mc_list *l, const char *path, const mc_opts *o, const mc_fsinfo *fi,
                     const mc_sample *s)
{
    mc_item *it = mc_add(l, "storage.seq_read", path);
    if (!it)
        return;
    mc_seqread r;
    if (mc_seqread_init(&r, o->read_max_bytes, o->read_budget_s, 0) < 0)
        return;
    for (size_t i = 0; i < s->nlarge && !mc_seqread_done(&r) && !r.err; i++)
        mc_seqread_file(&r, s->large[i], s->large_size[i]);
    mc_seqread_free(&r);
    char note[400];
    mc_seqread_note(&r, note, sizeof note);
    mc_str(it, "method", mc_seqread_method(r.methods));
    mc_str(it, "note", note[0] ? note : NULL);
    mc_num(it, "bytes", (double)r.bytes);
    mc_num(it, "files", (double)r.files);
    mc_num(it, "seconds", r.seconds);
    mc_num(it, "largest_file_bytes", (double)r.largest);
    if (!r.bytes || r.seconds <= 0) {
        mc_cause(it, "%s", r.err ? r.errmsg : "no regular file with data under it");
        return;
    }
    const double MBps = (double)r.bytes / 1e6 / r.seconds;
    mc_what(it, "%.0f MB/s over %.0f MB of its %llu largest files", MBps, (double)r.bytes / 1e6,
            (unsigned long long)r.files);
    const double cached = r.checked_bytes ? (double)r.cached_bytes / (double)r.checked_bytes : 0;
    if ((r.methods & MC_RD_MEMORY) || cached > 0.5) {
        mc_cause(it, "%s", note);
        return;
    }
    mc_judge(it, mc_rule_seq(MBps, o->read_expect_MBps), MBps, o->read_expect_MBps, "MB/s");
    char tail[120];
    snprintf(tail, sizeof tail, " vs %.0f MB/s%s", o->read_expect_MBps,
             r.largest < (1u << 20) ? " (its largest files are under 1 MiB: per-file reads)" : "");
    strncat(it->what, tail, sizeof it->what - strlen(it->what) - 1);
    if (it->verdict != MC_BELOW_SPEC)
        return;
    char c[400];
    mc_fs_cause(fi, 0, c, sizeof c);
    mc_cause(it, "%s", c[0] ? c : "a slow device, or a cloud volume capped by its provisioned "
                                  "throughput");
}

static void small_line(mc_list *l, const char *path, const mc_opts *o, const mc_fsinfo *fi,
                       const mc_sample *s)
{
    mc_item *it = mc_add(l, "storage.small_files", path);
    if (!it)
        return;
    mc_num(it, "files_seen", (double)s->files);
    mc_num(it, "small_files_seen", (double)s->small_files);
    mc_num(it, "walk_seconds", s->walk_s);
    if (!s->nsmall) {
        mc_cause(it, "no file of %llu bytes or less under it%s",
                 (unsigned long long)o->small_file_bytes, s->cut ? " (within the walk's budget)" : "");
        return;
    }
    mc_smallread r;
    mc_read_small(s, o, &r);
    mc_num(it, "files", (double)r.files);
    mc_num(it, "bytes", (double)r.bytes);
    mc_num(it, "threads", o->file_threads);
    mc_num(it, "mean_ms", r.files ? r.mean_ms : NAN);
    mc_num(it, "p50_ms", r.files ? r.p50_ms : NAN);
    mc_num(it, "p90_ms", r.files ? r.p90_ms : NAN);
    mc_num(it, "p99_ms", r.files ? r.p99_ms : NAN);
    mc_num(it, "cached_share", r.cached_share);
    if (!r.files || r.wall_s <= 0) {
        mc_cause(it, "none of the %zu sampled files could be read", s->nsmall);
        return;
    }
    const double fps = (double)r.files / r.wall_s, MBps = (double)r.bytes / 1e6 / r.wall_s;
    mc_num(it, "files_per_s", fps);
    mc_num(it, "MBps", MBps);
    mc_what(it, "%.0f files/s, %.1f MB/s with %d readers; per file mean %.2f ms, p50 %.2f, p90 %.2f, "
                "p99 %.2f (%zu files of %llu seen%s)", fps, MBps, o->file_threads, r.mean_ms, r.p50_ms,
            r.p90_ms, r.p99_ms, r.files, (unsigned long long)s->small_files,
            s->cut ? ", walk cut short" : "");
    if (r.memory_fs || r.cached_share > 0.5) {
        mc_cause(it, r.memory_fs ? "a memory file system: the figure is memory, not storage"
                                 : "%.0f%% of the sample stayed in the page cache: the figure is "
                                   "mostly memory", 100 * r.cached_share);
        return;
    }
    mc_judge(it, mc_rule_small(r.mean_ms, o->file_expect_ms), r.mean_ms, o->file_expect_ms, "ms");
    if (it->verdict != MC_BELOW_SPEC)
        return;
    char c[400];
    mc_fs_cause(fi, 1, c, sizeof c);
    mc_cause(it, "%s%s%.1f ms per file: pack small files into shards (tar/WebDataset, LMDB) or "
                 "copy the dataset to local disk", c[0] ? c : "a slow device", c[0] ? ", " : ", ",
             r.mean_ms);
}

void mc_storage_lines(mc_list *l, const char *path, const mc_opts *o, const mc_fsinfo *fi)
{
    mc_sample s;
    if (mc_sample_files(path, o, &s) < 0) {
        mc_item *it = mc_add(l, "storage.seq_read", path);
        if (it)
            mc_cause(it, "out of memory while walking it");
        mc_sample_free(&s);
        return;
    }
    seq_line(l, path, o, fi, &s);
    small_line(l, path, o, fi, &s);
    mc_sample_free(&s);
}
