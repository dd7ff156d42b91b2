/* import_json.cpp — streaming reader of trace-event JSON for
 * `gpustarve import`: the document goes through a window of a few MiB; a
 * small scanner finds where each top-level value and each traceEvents
 * element ends, and simdjson's On-Demand API parses complete elements a
 * batch at a time, in place. Nothing of the document outlives its window.
 *
 * RATIONALE (why C++ here, and only here): of the JSON libraries Debian
 * ships, measured on the public Kineto traces (docs/import.md, make bench),
 * cJSON and json-c only build whole trees (memory grows with the trace, and
 * they read 60-160 MB/s); yajl streams at about the speed of this reader
 * but has had no upstream release since 2014; simdjson is maintained and
 * fastest. It parses whole documents, so the windowing and the element
 * scanner are ours; simdjson checks and decodes every element. The rest of
 * the import and the analyzer stay C (import.h is the seam).
 *
 * Responsible for: the outer object (keys in any order; a bare array of
 * events is accepted too), deviceProperties, distributedInfo, the numbers
 * schemaVersion and baseTimeNanoseconds, and each event's fields the import
 * uses; repairs of what Kineto is known to write that is not JSON (control
 * bytes in strings, bare N/A or nan, invalid UTF-8), each counted.
 *
 * Must never: hold more than one window plus one batch's parse state, throw
 * (simdjson is used through error codes), or read past the window.
 */
#define SIMDJSON_EXCEPTIONS 0
#include <simdjson.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "import.h"

using namespace simdjson;

namespace {

/* RATIONALE: 4 MiB holds thousands of events (Kineto writes ~300 bytes per
 * event) and stays in L2/L3-sized territory for the scanner; a single value
 * larger than the window (a huge deviceProperties, one enormous event)
 * grows it up to WIN_MAX, the import's limit for one value (import.h):
 * simdjson needs about 5 bytes per byte of a value it parses, so one ~1 GiB
 * array inside an event once took 5.2 GB. Top-level values the import does
 * not read are skipped as they stream by, whatever their size. */
constexpr size_t WIN_INIT = 4u << 20;
constexpr size_t WIN_MAX = IK_VALUE_MAX;
/* Events parsed per simdjson document: big enough that per-document setup
 * is noise, small enough that the parse state stays cached. */
constexpr size_t BATCH_BYTES = 512u << 10;

enum scan_rc { SCAN_OK, SCAN_MORE, SCAN_BAD };

/* byte classes inside a string: 0 plain, 1 quote, 2 backslash, 3 control */
static unsigned char str_cls[256];
/* outside strings: 1 open, 2 close, 3 quote, 4 whitespace, 5 comma/colon, 0 other */
static unsigned char tok_cls[256];

static void init_tables()
{
    static bool done;
    if (done)
        return;
    for (int i = 0; i < 0x20; i++)
        str_cls[i] = 3;
    str_cls[(unsigned char)'"'] = 1;
    str_cls[(unsigned char)'\\'] = 2;
    tok_cls[(unsigned char)'{'] = tok_cls[(unsigned char)'['] = 1;
    tok_cls[(unsigned char)'}'] = tok_cls[(unsigned char)']'] = 2;
    tok_cls[(unsigned char)'"'] = 3;
    tok_cls[(unsigned char)' '] = tok_cls[(unsigned char)'\t'] = 4;
    tok_cls[(unsigned char)'\n'] = tok_cls[(unsigned char)'\r'] = 4;
    tok_cls[(unsigned char)','] = tok_cls[(unsigned char)':'] = 5;
    done = true;
}

/* Skip a string whose opening quote is at p. On SCAN_OK *out is past the
 * closing quote. Raw control bytes inside are replaced by spaces (JSON
 * forbids them; Kineto has written them) and counted in *fixed. */
static scan_rc scan_string(char *p, char *end, char **out, uint64_t *fixed)
{
    p++;
    for (;;) {
        while (p < end && !str_cls[(unsigned char)*p])
            p++;
        if (p >= end)
            return SCAN_MORE;
        const unsigned c = str_cls[(unsigned char)*p];
        if (c == 1) {
            *out = p + 1;
            return SCAN_OK;
        }
        if (c == 2) {
            if (p + 1 >= end)
                return SCAN_MORE;
            p += 2;
            continue;
        }
        *p++ = ' ';
        (*fixed)++;
    }
}

/* Find the end of the JSON value starting at p (after any whitespace). */
static scan_rc scan_value(char *p, char *end, char **out, uint64_t *fixed)
{
    if (p >= end)
        return SCAN_MORE;
    const unsigned first = tok_cls[(unsigned char)*p];
    if (first == 3)
        return scan_string(p, end, out, fixed);
    if (first == 2 || first == 4 || first == 5)
        return SCAN_BAD;
    if (first == 0) { /* number or atom (or junk such as N/A): up to a delimiter */
        while (p < end && (tok_cls[(unsigned char)*p] == 0 || tok_cls[(unsigned char)*p] == 3))
            p++;
        if (p >= end)
            return SCAN_MORE;
        *out = p;
        return SCAN_OK;
    }
    long depth = 0;
    for (;;) {
        while (p < end && tok_cls[(unsigned char)*p] != 1 && tok_cls[(unsigned char)*p] != 2 &&
               tok_cls[(unsigned char)*p] != 3)
            p++;
        if (p >= end)
            return SCAN_MORE;
        const unsigned c = tok_cls[(unsigned char)*p];
        if (c == 3) {
            char *q;
            const scan_rc rc = scan_string(p, end, &q, fixed);
            if (rc != SCAN_OK)
                return rc;
            p = q;
            continue;
        }
        if (c == 1)
            depth++;
        else if (--depth == 0) {
            *out = p + 1;
            return SCAN_OK;
        } else if (depth < 0)
            return SCAN_BAD;
        p++;
    }
}

static bool is_ws(char c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

struct reader {
    reader(ik_read_fn rd_, void *src_, const ik_callbacks *cb_, ik_json_stats *st_, char *err_,
           size_t errlen_)
        : rd(rd_), src(src_), cb(cb_), st(st_), err(err_), errlen(errlen_)
    {
    }
    ik_read_fn rd;
    void *src;
    const ik_callbacks *cb;
    ik_json_stats *st;
    char *err;
    size_t errlen;
    /* window: raw[0] is a spare byte (room for '[' before a batch at d[0]),
     * d = raw + 1 holds len bytes of data, cap of room, one byte for a ']'
     * after the data, then simdjson's padding */
    char *raw = nullptr;
    char *d = nullptr;
    size_t cap = 0, len = 0, pos = 0;
    bool eof = false, failed = false, stop = false;
    uint64_t fixed = 0;
    size_t *sv = nullptr, *ev = nullptr; /* element starts/ends of the batch */
    size_t scap = 0;
    ondemand::parser parser;
    std::string scratch;

    void fail(const char *fmt, const char *a = "")
    {
        if (!failed)
            snprintf(err, errlen, fmt, a);
        failed = true;
    }

    bool alloc(size_t ncap)
    {
        char *n = static_cast<char *>(malloc(ncap + 2 + SIMDJSON_PADDING));
        if (!n) {
            fail("out of memory (JSON window of %s bytes)", std::to_string(ncap).c_str());
            return false;
        }
        if (raw) {
            memcpy(n + 1, d, len);
            free(raw);
        }
        raw = n;
        d = raw + 1;
        cap = ncap;
        if (cap > st->window_max)
            st->window_max = cap;
        return true;
    }

    /* Bytes allocated from p to the end of the window's padding. RATIONALE:
     * the window has one byte more than spare + cap + padding, so a batch
     * whose ']' lands on d[cap] still has the full padding after it. */
    size_t room(const char *p) const
    {
        return (size_t)((raw + 2 + cap + SIMDJSON_PADDING) - p);
    }

    /* Keep d[keep..len), read more. Returns false when nothing more can come
     * (end of input with no new byte, or an error). */
    bool refill(size_t keep)
    {
        if (failed || eof)
            return false;
        if (keep > 0) {
            memmove(d, d + keep, len - keep);
            len -= keep;
            pos -= keep;
        } else if (len == cap) {
            if (cap >= WIN_MAX) {
                fail("one JSON value (a trace event, or deviceProperties) at byte offset %s is "
                     "larger than 16 MiB, the import's limit (docs/import.md, \"Limits\")",
                     std::to_string(st->bytes - len).c_str());
                return false;
            }
            if (!alloc(cap * 2))
                return false;
        }
        size_t got = 0;
        while (len < cap) {
            const long n = rd(src, d + len, cap - len);
            if (n < 0) {
                fail("read error");
                return false;
            }
            if (n == 0) {
                eof = true;
                break;
            }
            len += (size_t)n;
            got += (size_t)n;
            st->bytes += (uint64_t)n;
        }
        return got > 0;
    }

    /* Skip whitespace; the next byte at d[pos], or -1 at the end of input. */
    int peek()
    {
        for (;;) {
            while (pos < len && is_ws(d[pos]))
                pos++;
            if (pos < len)
                return (unsigned char)d[pos];
            if (!refill(pos))
                return -1;
        }
    }

    /* The extent [d+pos, *end) of the value at pos, reading more as needed. */
    bool value_extent(char **end)
    {
        for (;;) {
            const scan_rc rc = scan_value(d + pos, d + len, end, &fixed);
            if (rc == SCAN_OK)
                return true;
            if (rc == SCAN_BAD) {
                fail("not JSON near byte offset %s", std::to_string(st->bytes - (len - pos)).c_str());
                return false;
            }
            if (!refill(pos)) {
                if (!failed)
                    fail("the document ends inside a value (truncated file?)");
                return false;
            }
        }
    }

    /* Skip the value at pos as it streams by, holding none of it (a
     * top-level value the import does not read, of any size). */
    bool skip_value()
    {
        if (tok_cls[(unsigned char)d[pos]] == 2 || tok_cls[(unsigned char)d[pos]] == 5) {
            fail("not JSON near byte offset %s", std::to_string(st->bytes - (len - pos)).c_str());
            return false;
        }
        long depth = 0;
        bool in_str = false, esc = false;
        for (;;) {
            for (; pos < len; pos++) {
                const char ch = d[pos];
                if (in_str) {
                    if (esc)
                        esc = false;
                    else if (ch == '\\')
                        esc = true;
                    else if (ch == '"' && (in_str = false, depth == 0)) {
                        pos++;
                        return true;
                    }
                } else if (ch == '"') {
                    in_str = true;
                } else if (ch == '{' || ch == '[') {
                    depth++;
                } else if (ch == '}' || ch == ']') {
                    if (depth == 0)
                        return true; /* the end of a scalar, at the object's end */
                    if (--depth == 0) {
                        pos++;
                        return true;
                    }
                } else if (depth == 0 && (ch == ',' || is_ws(ch))) {
                    return true;
                }
            }
            if (!refill(pos)) {
                if (!failed)
                    fail("the document ends inside a value (truncated file?)");
                return false;
            }
        }
    }

    /* ---- values ------------------------------------------------------------------- */

    static bool get_i64(ondemand::value v, int64_t *out)
    {
        ondemand::json_type t;
        if (v.type().get(t))
            return false;
        if (t == ondemand::json_type::number) {
            const std::string_view tok = v.raw_json_token();
            int64_t ns;
            /* integers keep all their digits; floats (rare for ids) are cut */
            if (ik_us_to_ns(tok.data(), tok.size(), &ns) != 0)
                return false;
            *out = ns / 1000;
            return true;
        }
        if (t == ondemand::json_type::string) {
            std::string_view s;
            if (v.get_string().get(s) || s.empty())
                return false;
            char *e;
            std::string tmp(s);
            long long x = strtoll(tmp.c_str(), &e, 10);
            if (*e)
                return false;
            *out = x;
            return true;
        }
        return false;
    }

    /* 1: *ns set; 0: not a time; -1: a number out of range (bad_time) */
    static int get_us(ondemand::value v, int64_t *ns)
    {
        ondemand::json_type t;
        if (v.type().get(t))
            return 0;
        std::string_view tok;
        if (t == ondemand::json_type::number) {
            tok = v.raw_json_token();
        } else if (t == ondemand::json_type::string) {
            if (v.get_string().get(tok))
                return 0;
        } else
            return 0;
        const int rc = ik_us_to_ns(tok.data(), tok.size(), ns);
        return rc == 0 ? 1 : rc == -2 ? -1 : 0;
    }

    static bool get_str(ondemand::value v, ik_str *out)
    {
        std::string_view s;
        if (v.get_string().get(s))
            return false;
        out->s = s.data();
        out->n = s.size();
        return true;
    }

    static void get_id(ondemand::value v, ik_id *id)
    {
        ondemand::json_type t;
        if (v.type().get(t))
            return;
        if (t == ondemand::json_type::number) {
            int64_t x;
            if (get_i64(v, &x)) {
                id->is_num = 1;
                id->num = x;
            }
        } else if (t == ondemand::json_type::string) {
            if (get_str(v, &id->str)) {
                id->is_str = 1;
                /* "25738" is a number written as a string (Kineto 1.8/1.9) */
                const ik_str s = id->str;
                size_t i = (s.n && s.s[0] == '-') ? 1 : 0;
                if (i < s.n && s.n < 20) {
                    int64_t x = 0;
                    bool over = false; /* 19 digits may not fit: then it stays a string */
                    for (; i < s.n && s.s[i] >= '0' && s.s[i] <= '9'; i++)
                        over |= __builtin_mul_overflow(x, 10, &x) ||
                                __builtin_add_overflow(x, s.s[i] - '0', &x);
                    if (i == s.n && !over) {
                        id->is_num = 1;
                        id->num = s.s[0] == '-' ? -x : x;
                    }
                }
            }
        }
    }

    /* One event object into e. Errors inside a field leave it unset; an
     * error of the document itself returns false. */
    static bool take_event(ondemand::object obj, ik_event *e)
    {
        memset(e, 0, sizeof *e);
        for (auto field : obj) {
            ondemand::raw_json_string key;
            if (field.key().get(key))
                return false;
            ondemand::value v;
            if (field.value().get(v))
                return false;
            if (key == "ph") {
                ik_str s;
                if (get_str(v, &s) && s.n)
                    e->ph = s.s[0];
            } else if (key == "cat") {
                get_str(v, &e->cat);
            } else if (key == "name") {
                get_str(v, &e->name);
            } else if (key == "pid") {
                get_id(v, &e->pid);
            } else if (key == "tid") {
                get_id(v, &e->tid);
            } else if (key == "ts") {
                const int rc = get_us(v, &e->ts_ns);
                e->has_ts = rc > 0;
                e->bad_time |= rc < 0;
            } else if (key == "dur") {
                const int rc = get_us(v, &e->dur_ns);
                e->has_dur = rc > 0;
                e->bad_time |= rc < 0;
            } else if (key == "args") {
                ondemand::object args;
                if (v.get_object().get(args))
                    continue;
                for (auto af : args) {
                    ondemand::raw_json_string ak;
                    if (af.key().get(ak))
                        return false;
                    ondemand::value av;
                    if (af.value().get(av))
                        return false;
                    if (ak == "device")
                        e->has_device = get_i64(av, &e->device);
                    else if (ak == "stream")
                        e->has_stream = get_i64(av, &e->stream);
                    else if (ak == "correlation")
                        e->has_corr = get_i64(av, &e->corr);
                    else if (ak == "bytes")
                        e->has_bytes = get_i64(av, &e->bytes);
                    else if (ak == "name")
                        get_str(av, &e->arg_name);
                }
            }
        }
        return true;
    }

    /* Parse [s, e) (one event or "[ev,ev,...]") in place: the bytes after e
     * up to the window's padding are readable. Returns false on a JSON
     * error (nothing delivered for a single event; for a batch, events
     * before the error may have been delivered: the caller re-parses the
     * batch one by one only when none was). */
    bool parse_events(const char *s, size_t n, size_t allocated, bool array, uint64_t *delivered)
    {
        ondemand::document doc;
        if (parser.iterate(s, n, allocated).get(doc))
            return false;
        ik_event ev;
        if (!array) {
            ondemand::object obj;
            if (doc.get_object().get(obj) || !take_event(obj, &ev))
                return false;
            deliver(&ev);
            (*delivered)++;
            return true;
        }
        ondemand::array arr;
        if (doc.get_array().get(arr))
            return false;
        for (auto el : arr) {
            ondemand::object obj;
            if (el.get_object().get(obj))
                return false;
            if (!take_event(obj, &ev))
                return false;
            deliver(&ev);
            (*delivered)++;
        }
        return true;
    }

    void deliver(const ik_event *ev)
    {
        st->events++;
        if (!stop && cb->on_event && cb->on_event(cb->ctx, ev) != 0) {
            stop = true;
            fail("out of memory converting events");
        }
    }

    /* A copy of one element with what Kineto writes that is not JSON made
     * JSON: bare words other than true/false/null (N/A, nan, inf) become
     * null, bytes that are not valid UTF-8 become '?'. */
    void repair(const char *s, size_t n)
    {
        std::string out;
        out.reserve(n + 16 + SIMDJSON_PADDING);
        size_t i = 0;
        while (i < n) {
            const char c = s[i];
            if (c == '"') { /* a string: copied as it is */
                size_t j = i + 1;
                while (j < n && s[j] != '"')
                    j += s[j] == '\\' ? 2 : 1;
                j = j < n ? j + 1 : n;
                out.append(s + i, j - i);
                i = j;
                continue;
            }
            const bool digit = (c >= '0' && c <= '9') ||
                               (c == '-' && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '9');
            const bool word = !digit && !is_ws(c) && tok_cls[(unsigned char)c] == 0;
            if (digit || word) { /* a token up to the next delimiter */
                size_t j = i;
                while (j < n && !is_ws(s[j]) && tok_cls[(unsigned char)s[j]] == 0)
                    j++;
                const std::string_view w(s + i, j - i);
                if (digit || w == "true" || w == "false" || w == "null")
                    out.append(w);
                else
                    out.append("null");
                i = j;
                continue;
            }
            out += c;
            i++;
        }
        if (!simdjson::validate_utf8(out.data(), out.size()))
            for (char &ch : out)
                if ((unsigned char)ch >= 0x80)
                    ch = '?';
        scratch.swap(out);
        scratch.append(SIMDJSON_PADDING, ' ');
    }

    /* Parse the batch of complete elements d[bs, be): in place as one array
     * first; on error, one element at a time, repairing those that fail. */
    void flush_batch(size_t bs, size_t be, const size_t *starts, const size_t *ends, size_t k)
    {
        if (!k)
            return;
        char *open = d + bs - 1, *close = d + be;
        const char saved_open = *open, saved_close = *close;
        *open = '[';
        *close = ']';
        uint64_t delivered = 0;
        const size_t alloc = room(open);
        const bool ok = parse_events(open, (size_t)(close + 1 - open), alloc, true, &delivered);
        *open = saved_open;
        *close = saved_close;
        if (ok || stop)
            return;
        /* the batch failed: deliver the rest one by one */
        size_t i = 0;
        for (; i < k && delivered > 0; i++, delivered--)
            ;
        for (; i < k && !stop; i++) {
            const char *s = d + starts[i];
            const size_t n = ends[i] - starts[i];
            uint64_t one = 0;
            const size_t al = room(s);
            if (parse_events(s, n, al, false, &one))
                continue;
            repair(s, n);
            if (parse_events(scratch.data(), scratch.size() - SIMDJSON_PADDING, scratch.size(), false,
                             &one))
                st->repaired++;
            else
                st->bad++;
        }
    }

    /* The window ran out inside traceEvents: parse the batch, read more. */
    bool next_window(size_t bs, size_t be, size_t k)
    {
        flush_batch(bs, be, sv, ev, k);
        if (refill(pos))
            return true;
        if (!failed)
            fail("the document ends inside traceEvents (truncated file?)");
        return false;
    }

    /* traceEvents: d[pos] is just past '['. Returns at the closing ']'. */
    bool events()
    {
        /* starts/ends of the elements in the current batch (offsets in d) */
        size_t k = 0, bs = 0, be = 0;
        for (;;) {
            if (stop)
                return false;
            while (pos < len && (is_ws(d[pos]) || d[pos] == ','))
                pos++;
            if (pos >= len) {
                if (!next_window(bs, be, k))
                    return false;
                k = 0;
                continue;
            }
            if (d[pos] == ']') {
                flush_batch(bs, be, sv, ev, k);
                pos++;
                return true;
            }
            char *end;
            const scan_rc rc = scan_value(d + pos, d + len, &end, &fixed);
            if (rc == SCAN_BAD) {
                fail("traceEvents: not JSON near byte offset %s",
                     std::to_string(st->bytes - (len - pos)).c_str());
                return false;
            }
            if (rc == SCAN_MORE) {
                if (!next_window(bs, be, k))
                    return false;
                k = 0;
                continue;
            }
            if (d[pos] != '{') { /* not an object: not an event */
                pos = (size_t)(end - d);
                continue;
            }
            if (k == scap) {
                scap = scap ? scap * 2 : 4096;
                sv = static_cast<size_t *>(realloc(sv, scap * sizeof *sv));
                ev = static_cast<size_t *>(realloc(ev, scap * sizeof *ev));
                if (!sv || !ev) {
                    fail("out of memory");
                    return false;
                }
            }
            if (!k)
                bs = pos;
            sv[k] = pos;
            ev[k] = (size_t)(end - d);
            be = ev[k];
            k++;
            pos = be;
            if (be - bs >= BATCH_BYTES) {
                /* d[be] may be one past the data: the padding takes the ']' */
                flush_batch(bs, be, sv, ev, k);
                k = 0;
            }
        }
    }

    /* A top-level value the import reads: parsed as its own document. */
    void top_value(std::string_view key, size_t s, size_t e)
    {
        ondemand::document doc;
        const size_t alloc = room(d + s);
        if (parser.iterate(d + s, e - s, alloc).get(doc))
            return;
        if (key == "deviceProperties") {
            ondemand::array arr;
            if (doc.get_array().get(arr))
                return;
            for (auto el : arr) {
                ondemand::object o;
                if (el.get_object().get(o))
                    return;
                ik_device dv;
                memset(&dv, 0, sizeof dv);
                dv.id = dv.sms = dv.major = dv.minor = -1;
                for (auto f : o) {
                    ondemand::raw_json_string k;
                    ondemand::value v;
                    if (f.key().get(k) || f.value().get(v))
                        return;
                    int64_t x;
                    if (k == "id" && get_i64(v, &x))
                        dv.id = x;
                    else if (k == "name")
                        get_str(v, &dv.name);
                    else if (k == "totalGlobalMem" && get_i64(v, &x))
                        dv.total_mem = (uint64_t)x;
                    else if (k == "numSms" && get_i64(v, &x))
                        dv.sms = x;
                    else if (k == "computeMajor" && get_i64(v, &x))
                        dv.major = x;
                    else if (k == "computeMinor" && get_i64(v, &x))
                        dv.minor = x;
                }
                if (dv.id >= 0 && cb->on_device)
                    cb->on_device(cb->ctx, &dv);
            }
        } else if (key == "distributedInfo") {
            ondemand::object o;
            if (doc.get_object().get(o))
                return;
            int64_t rank = -1, world = -1;
            for (auto f : o) {
                ondemand::raw_json_string k;
                ondemand::value v;
                if (f.key().get(k) || f.value().get(v))
                    return;
                int64_t x;
                if (k == "rank" && get_i64(v, &x))
                    rank = x;
                else if (k == "world_size" && get_i64(v, &x))
                    world = x;
            }
            if (cb->on_dist)
                cb->on_dist(cb->ctx, rank, world);
        } else if (key == "host_name") {
            std::string_view sv;
            if (!doc.get_string().get(sv) && cb->on_string)
                cb->on_string(cb->ctx, "host_name", sv.data(), sv.size());
        } else { /* a number (a scalar document: read as such) */
            int64_t x;
            double dv;
            std::string k(key);
            if (!doc.get_int64().get(x)) {
            } else if (!doc.get_double().get(dv) && dv > -9.2e18 && dv < 9.2e18) {
                x = (int64_t)dv;
            } else
                return;
            if (cb->on_number)
                cb->on_number(cb->ctx, k.c_str(), x);
        }
    }

    bool run()
    {
        init_tables();
        if (!alloc(WIN_INIT))
            return false;
        refill(0);
        if (len >= 3 && (unsigned char)d[0] == 0xEF && (unsigned char)d[1] == 0xBB &&
            (unsigned char)d[2] == 0xBF)
            pos = 3;
        int c = peek();
        if (c == '[') {
            pos++;
            return events() && !failed;
        }
        if (c != '{') {
            fail(c < 0 ? "empty input" : "not a trace-event JSON document (it does not start with '{' or '[')");
            return false;
        }
        pos++;
        bool saw_events = false;
        for (;;) {
            c = peek();
            if (c == '}')
                break;
            if (c != '"') {
                fail(c < 0 ? "the document ends early (truncated file?)" : "not JSON: expected a key");
                return false;
            }
            char *kend;
            if (!value_extent(&kend))
                return false;
            std::string key(d + pos + 1, (size_t)(kend - (d + pos) - 2));
            pos = (size_t)(kend - d);
            c = peek();
            if (c != ':') {
                fail("not JSON: expected ':' after \"%s\"", key.c_str());
                return false;
            }
            pos++;
            c = peek();
            if (key == "traceEvents" && c == '[') {
                pos++;
                if (!events())
                    return false;
                saw_events = true;
            } else {
                if (c < 0) {
                    fail("the document ends early (truncated file?)");
                    return false;
                }
                if (key != "deviceProperties" && key != "distributedInfo" &&
                    key != "schemaVersion" && key != "baseTimeNanoseconds" && key != "host_name") {
                    if (!skip_value())
                        return false;
                } else {
                    char *vend;
                    if (!value_extent(&vend))
                        return false;
                    const size_t s = pos, e = (size_t)(vend - d);
                    top_value(key, s, e);
                    pos = e;
                }
            }
            c = peek();
            if (c == ',') {
                pos++;
                continue;
            }
            if (c == '}')
                break;
            fail(c < 0 ? "the document ends early (truncated file?)" : "not JSON: expected ',' or '}'");
            return false;
        }
        if (!saw_events) {
            fail("no traceEvents array: not a PyTorch profiler (Chrome trace-event) document");
            return false;
        }
        return !failed;
    }
};

} // namespace

extern "C" int ik_us_to_ns(const char *s, size_t n, int64_t *out)
{
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == '\t'))
        n--;
    size_t i = 0;
    int neg = 0;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    if (i >= n || s[i] < '0' || s[i] > '9')
        return -1;
    int64_t ip = 0;
    size_t digits = 0;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, digits++) {
        if (digits >= 16) /* beyond ~3 years of microseconds past 1970 x 10^6: use the slow path */
            break;
        ip = ip * 10 + (s[i] - '0');
    }
    int64_t frac = 0;
    int fd = 0;
    if (i < n && s[i] == '.') {
        i++;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
            if (fd < 3) {
                frac = frac * 10 + (s[i] - '0');
                fd++;
            }
    }
    if (i == n) {
        while (fd < 3) {
            frac *= 10;
            fd++;
        }
        /* up to 16 digits of microseconds: the nanoseconds may not fit */
        int64_t v;
        if (__builtin_mul_overflow(ip, 1000, &v) || __builtin_add_overflow(v, frac, &v))
            return -2;
        *out = neg ? -v : v;
        return 0;
    }
    /* exponent, or more digits than fit the fast path */
    std::string t(s, n);
    char *e;
    const double x = strtod(t.c_str(), &e);
    if (*e || x != x)
        return -1;
    if (x > 9.2e15 || x < -9.2e15)
        return -2;
    *out = (int64_t)(x * 1000.0 + (x >= 0 ? 0.5 : -0.5));
    return 0;
}

extern "C" int ik_json_read(ik_read_fn rd, void *src, const ik_callbacks *cb, ik_json_stats *st,
                            char *err, size_t errlen)
{
    memset(st, 0, sizeof *st);
    reader *r = new (std::nothrow) reader(rd, src, cb, st, err, errlen);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    const bool ok = r->run();
    st->control_bytes = r->fixed;
    free(r->raw);
    free(r->sv);
    free(r->ev);
    delete r;
    return ok ? 0 : -1;
}
