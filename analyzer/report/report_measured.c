/* report_measured.c — the measured time of the loaders and the trainer
 * (an_cputime.h) in the report's text and JSON: a loader's batch in its
 * five parts, the trainer's data wait as blocked and receiving, the CPU of
 * the other threads (docs/report-schema.md, "Measured time").
 *
 * Must never: print a part that was not measured as a number (JSON null,
 * text leaves it out), or print anything for a trace without cpu samples
 * (the report of an older trace reads as it always did).
 */
#include "report/report_measured.h"

#include "report/report_json_parts.h"
#include "report/report_style.h"

static const char *per_batch_name(int pb)
{
    switch (pb) {
    case AN_PB_MARKERS: return "markers";
    case AN_PB_PERIODIC: return "periodic";
    case AN_PB_ITEMS: return "items";
    default: return NULL;
    }
}

void rep_json_loader_time(gs_jw *w, const char *key, const an_loader_time *t)
{
    gs_jw_key(w, key);
    if (!t->measured) {
        gs_jw_null(w);
        return;
    }
    gs_jw_obj(w);
    gs_jw_kstr(w, "per_batch", per_batch_name(t->per_batch));
    rep_json_num_or_null(w, "batches", t->batches);
    rep_json_num_or_null(w, "wall_ms", t->wall_ms);
    rep_json_num_or_null(w, "file_io_ms", t->io_ms);
    rep_json_num_or_null(w, "page_fault_io_ms", t->fault_ms);
    rep_json_num_or_null(w, "cpu_ms", t->cpu_ms);
    rep_json_num_or_null(w, "runq_ms", t->runq_ms);
    rep_json_num_or_null(w, "other_blocked_ms", t->blocked_ms);
    rep_json_num_or_null(w, "read_bytes", t->read_bytes);
    rep_json_num_or_null(w, "requested_bytes", t->requested_bytes);
    rep_json_num_or_null(w, "major_faults", t->majflt);
    rep_json_num_or_null(w, "storage_read_bytes", t->storage_bytes);
    rep_json_num_or_null(w, "page_fault_bytes", t->fault_bytes);
    rep_json_num_or_null(w, "page_fault_MBps", t->fault_MBps);
    rep_json_num_or_null(w, "voluntary_switches", t->vol_switches);
    rep_json_num_or_null(w, "involuntary_switches", t->invol_switches);
    rep_json_num_or_null(w, "cpu_cores", t->cpu_cores);
    gs_jw_key(w, "mean_ms"); /* the same parts as means per batch (what the model uses) */
    gs_jw_obj(w);
    rep_json_num_or_null(w, "wall", t->wall_mean_ms);
    rep_json_num_or_null(w, "file_io", t->io_mean_ms);
    rep_json_num_or_null(w, "page_fault_io", t->fault_mean_ms);
    rep_json_num_or_null(w, "cpu", t->cpu_mean_ms);
    rep_json_num_or_null(w, "runq", t->runq_mean_ms);
    rep_json_num_or_null(w, "other_blocked", t->blocked_mean_ms);
    gs_jw_end(w);
    gs_jw_key(w, "in_training_thread");
    gs_jw_bool(w, t->in_thread);
    rep_json_num_or_null(w, "work_items", t->units);
    rep_json_num_or_null(w, "collate_ms", t->collate_ms);
    rep_json_num_or_null(w, "collate_cpu_ms", t->collate_cpu_ms);
    gs_jw_end(w);
}

void rep_json_share_split(gs_jw *w, const an_result *r)
{
    const an_trainer_time *t = &r->trainer_time;
    gs_jw_key(w, "share_data_wait");
    gs_jw_obj(w);
    rep_json_num_or_null(w, "idle_data_wait_blocked", t->measured ? t->share_blocked : -1);
    rep_json_num_or_null(w, "idle_data_wait_receiving", t->measured ? t->share_receiving : -1);
    rep_json_num_or_null(w, "idle_data_wait_receiving_runq", t->measured ? t->share_receiving_runq : -1);
    rep_json_num_or_null(w, "idle_data_wait_blocked_page_faults", t->measured ? t->share_blocked_fault : -1);
    gs_jw_end(w);
}

void rep_json_trainer_time(gs_jw *w, const an_result *r)
{
    const an_trainer_time *t = &r->trainer_time;
    const an_other_time *ot = &r->other_time;
    gs_jw_key(w, "measured");
    if (!t->measured && !ot->measured && !r->loader_time.measured) {
        gs_jw_null(w);
        return;
    }
    gs_jw_obj(w);
    gs_jw_key(w, "trainer");
    gs_jw_obj(w);
    rep_json_num_or_null(w, "blocked_ms", t->blocked_ms);
    rep_json_num_or_null(w, "receiving_ms", t->receiving_ms);
    rep_json_num_or_null(w, "fetch_runq_ms", t->fetch_runq_ms);
    rep_json_num_or_null(w, "cpu_ms", t->cpu_ms);
    rep_json_num_or_null(w, "runq_ms", t->runq_ms);
    rep_json_num_or_null(w, "cpu_cores", t->cpu_cores);
    rep_json_num_or_null(w, "process_cpu_cores", t->proc_cpu_cores);
    rep_json_num_or_null(w, "fetch_page_fault_ms", t->fetch_fault_ms);
    rep_json_num_or_null(w, "socket_wait_ms", t->socket_ms);
    rep_json_num_or_null(w, "socket_wait_mean_ms", t->socket_mean_ms);
    rep_json_num_or_null(w, "major_faults_per_step", t->majflt);
    rep_json_num_or_null(w, "major_faults", t->window_majflt);
    rep_json_num_or_null(w, "page_fault_bytes", t->window_fault_bytes);
    rep_json_num_or_null(w, "collate_ms", t->collate_ms);
    rep_json_num_or_null(w, "collate_cpu_ms", t->collate_cpu_ms);
    gs_jw_end(w);
    rep_json_loader_time(w, "loader", &r->loader_time);
    gs_jw_key(w, "other_threads");
    if (!ot->measured) {
        gs_jw_null(w);
    } else {
        gs_jw_obj(w);
        gs_jw_ku64(w, "threads", ot->threads);
        rep_json_num_or_null(w, "cpu_cores", ot->cpu_cores);
        rep_json_num_or_null(w, "runq_ms_per_step", ot->runq_ms_per_step);
        gs_jw_end(w);
    }
    gs_jw_end(w);
}

void rep_text_measured_trainer(gs_out *o, const an_result *r)
{
    const an_trainer_time *t = &r->trainer_time;
    if (!t->measured || t->blocked_ms < 0)
        return;
    /* the training thread that makes its batches itself waits for no one */
    const int own = an_own_making(r);
    gs_out_printf(o, "%-24s %9.1f   %5.1f%%   %s", "  blocked", t->blocked_ms,
                  100 * t->share_blocked,
                  own ? "off its CPU while making it (I/O, page faults, sleeps)"
                      : "asleep until a batch arrives");
    if (t->fetch_fault_ms > 0.05)
        gs_out_printf(o, " (%.1f ms of it page faults)", t->fetch_fault_ms);
    if (t->socket_ms > 0.05)
        gs_out_printf(o, " (%.1f ms of it on sockets%s)", t->socket_ms,
                      r->nworkers ? ": each tensor's hand-over from a worker" : "");
    gs_out_char(o, '\n');
    gs_out_printf(o, "%-24s %9.1f   %5.1f%%   %s", "  receiving",
                  t->receiving_ms + (t->fetch_runq_ms > 0 ? t->fetch_runq_ms : 0),
                  100 * t->share_receiving,
                  own ? "its own CPU making it" : "the trainer's own CPU taking it in");
    if (t->fetch_runq_ms > 0.05)
        gs_out_printf(o, " (%.1f ms of it waiting for a CPU)", t->fetch_runq_ms);
    gs_out_char(o, '\n');
    if (t->collate_ms >= 0)
        gs_out_printf(o, "%-24s %9.1f            the collate function, of the above (%.1f ms "
                         "of CPU; mean a step)\n",
                      "    collate", t->collate_ms, t->collate_cpu_ms);
}

void rep_text_measured_loader(gs_out *o, const an_result *r, const style *st)
{
    const an_loader_time *t = &r->loader_time;
    if (!t->measured)
        return;
    gs_out_printf(o, "%smeasured%s %s per batch%s: file I/O %.1f ms", st->bold, st->off,
                  t->per_batch == AN_PB_MARKERS ? "median" : "mean",
                  t->per_batch == AN_PB_ITEMS ? " (their work items)" : "", t->io_ms);
    if (t->fault_ms >= 0) {
        gs_out_printf(o, ", page faults %.1f ms", t->fault_ms);
        if (t->fault_MBps >= 0)
            gs_out_printf(o, " (%.1f MB/s)", t->fault_MBps);
    }
    gs_out_printf(o, ", CPU %.1f ms", t->cpu_ms);
    if (t->runq_ms >= 0)
        gs_out_printf(o, ", waiting for a CPU %.1f ms", t->runq_ms);
    gs_out_printf(o, ", other blocking %.1f ms", t->blocked_ms);
    if (t->requested_bytes > t->read_bytes * 1.01 + 4096)
        gs_out_printf(o, "; %.3g MB read (%.3g MB requested)", t->read_bytes / 1e6,
                      t->requested_bytes / 1e6);
    if (t->collate_ms >= 0)
        gs_out_printf(o, "; the collate function %.1f ms of it (%.1f ms of CPU, mean)",
                      t->collate_ms, t->collate_cpu_ms);
    gs_out_char(o, '\n');
    const an_trainer_time *tw = &r->trainer_time;
    if (t->in_thread && tw->window_majflt >= 1) {
        gs_out_printf(o, "         %.0f major page faults in the %zu measured steps", tw->window_majflt,
                      r->measured);
        if (tw->window_fault_bytes >= 0)
            gs_out_printf(o, ", ~%.1f MB read through them", tw->window_fault_bytes / 1e6);
        gs_out_char(o, '\n');
    }
    const an_trainer_time *tt = &r->trainer_time;
    const an_other_time *ot = &r->other_time;
    if (tt->cpu_cores >= 0 || ot->measured) {
        const char *sep = " ";
        gs_out_str(o, "         cores busy:");
        if (t->cpu_cores >= 0) {
            gs_out_printf(o, "%sloader %.2f", sep, t->cpu_cores);
            sep = ", ";
        }
        if (tt->cpu_cores >= 0) {
            gs_out_printf(o, "%straining thread %.2f", sep, tt->cpu_cores);
            sep = ", ";
        }
        if (ot->measured)
            gs_out_printf(o, "%sother threads %.2f", sep, ot->cpu_cores);
        gs_out_char(o, '\n');
    }
}
