/* an_symbols.c — offline symbolisation: module lookup by build id, ELF
 * symbol tables, file:line through addr2line(1). See an_symbols.h.
 *
 * Must never: read outside a mapped file (every offset is bounds-checked),
 * run a shell (addr2line is exec'ed directly, its input is a private
 * temporary file), or fail a report because symbols are missing.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "load/an_symbols.h"

#include "gs_buildid.h"

/* Copy src into dst (cap bytes), truncating. */
static void scopy(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = 0;
}

/* ---- ELF images ------------------------------------------------------------ */

typedef struct elf_img {
    const uint8_t *p;
    size_t len;
} elf_img;

static int elf_map(const char *path, elf_img *e)
{
    e->p = NULL;
    e->len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
        close(fd);
        return -1;
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return -1;
    const Elf64_Ehdr *eh = m;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_ident[EI_DATA] != ELFDATA2LSB) {
        munmap(m, (size_t)st.st_size);
        return -1;
    }
    e->p = m;
    e->len = (size_t)st.st_size;
    return 0;
}

static void elf_unmap(elf_img *e)
{
    if (e->p)
        munmap((void *)e->p, e->len);
    e->p = NULL;
}

static int in_bounds(const elf_img *e, uint64_t off, uint64_t len)
{
    return off <= e->len && len <= e->len - off;
}

static const Elf64_Shdr *elf_shdr(const elf_img *e, unsigned i)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)e->p;
    if (eh->e_shentsize != sizeof(Elf64_Shdr) || i >= eh->e_shnum ||
        !in_bounds(e, eh->e_shoff + (uint64_t)i * sizeof(Elf64_Shdr), sizeof(Elf64_Shdr)))
        return NULL;
    return (const Elf64_Shdr *)(e->p + eh->e_shoff + (uint64_t)i * sizeof(Elf64_Shdr));
}

static const Elf64_Phdr *elf_phdr(const elf_img *e, unsigned i)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)e->p;
    if (eh->e_phentsize != sizeof(Elf64_Phdr) || i >= eh->e_phnum ||
        !in_bounds(e, eh->e_phoff + (uint64_t)i * sizeof(Elf64_Phdr), sizeof(Elf64_Phdr)))
        return NULL;
    return (const Elf64_Phdr *)(e->p + eh->e_phoff + (uint64_t)i * sizeof(Elf64_Phdr));
}

static size_t elf_build_id(const elf_img *e, char *hex)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)e->p;
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        const Elf64_Shdr *sh = elf_shdr(e, i);
        if (sh && sh->sh_type == SHT_NOTE && in_bounds(e, sh->sh_offset, sh->sh_size)) {
            size_t n = gs_build_id_notes(e->p + sh->sh_offset, sh->sh_size, hex);
            if (n)
                return n;
        }
    }
    for (unsigned i = 0; i < eh->e_phnum; i++) {
        const Elf64_Phdr *ph = elf_phdr(e, i);
        if (ph && ph->p_type == PT_NOTE && in_bounds(e, ph->p_offset, ph->p_filesz)) {
            size_t n = gs_build_id_notes(e->p + ph->p_offset, ph->p_filesz, hex);
            if (n)
                return n;
        }
    }
    return 0;
}

size_t an_elf_build_id(const char *path, char *hex, size_t cap)
{
    elf_img e;
    if (cap < GS_BUILD_ID_HEX || elf_map(path, &e) != 0)
        return 0;
    size_t n = elf_build_id(&e, hex);
    elf_unmap(&e);
    return n;
}

/* ---- modules ------------------------------------------------------------------ */

typedef struct fsym {
    uint64_t addr, size;
    const char *name; /* into the module's copied string table */
} fsym;

typedef struct load_seg {
    uint64_t off, vaddr, filesz;
} load_seg;

typedef struct module {
    char *path, *build_id; /* the key */
    int found;             /* 1: an ELF file with this build id is known */
    char file[1024];       /* the ELF file (program headers, symbols) */
    char dwarf[1024];      /* the file handed to addr2line (debug file when present) */
    load_seg *segs;
    size_t nsegs;
    fsym *syms;
    size_t nsyms;
    char *strtab;
} module;

typedef struct bid_entry {
    char *build_id, *path;
} bid_entry;

struct an_symtab {
    char **dirs;
    size_t ndirs;
    int lines;
    module *mods;
    size_t nmods, capmods;
    bid_entry *index; /* build ids of files under dirs (built on first need) */
    size_t nindex, capindex;
    int indexed;
};

an_symtab *an_sym_new(const char *const *symbol_paths, size_t n, int lines)
{
    an_symtab *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->lines = lines;
    if (n) {
        s->dirs = calloc(n, sizeof *s->dirs);
        for (size_t i = 0; s->dirs && i < n; i++)
            if ((s->dirs[i] = strdup(symbol_paths[i])))
                s->ndirs++;
    }
    return s;
}

void an_sym_free(an_symtab *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->ndirs; i++)
        free(s->dirs[i]);
    free(s->dirs);
    for (size_t i = 0; i < s->nmods; i++) {
        free(s->mods[i].path);
        free(s->mods[i].build_id);
        free(s->mods[i].segs);
        free(s->mods[i].syms);
        free(s->mods[i].strtab);
    }
    free(s->mods);
    for (size_t i = 0; i < s->nindex; i++) {
        free(s->index[i].build_id);
        free(s->index[i].path);
    }
    free(s->index);
    free(s);
}

static void index_add(an_symtab *s, const char *bid, const char *path)
{
    if (s->nindex == s->capindex) {
        size_t nc = s->capindex ? 2 * s->capindex : 256;
        bid_entry *n = realloc(s->index, nc * sizeof *n);
        if (!n)
            return;
        s->index = n;
        s->capindex = nc;
    }
    s->index[s->nindex].build_id = strdup(bid);
    s->index[s->nindex].path = strdup(path);
    if (s->index[s->nindex].build_id && s->index[s->nindex].path)
        s->nindex++;
}

/* RATIONALE: a symbol folder is a user's copy of their binaries; 6 levels
 * and 200k entries bound a mistaken --symbol-path / without failing it. */
static void index_dir(an_symtab *s, const char *dir, int depth, size_t *budget)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)) && *budget > 0) {
        (*budget)--;
        if (de->d_name[0] == '.')
            continue;
        char p[4096];
        if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, de->d_name) >= sizeof p)
            continue;
        struct stat st;
        if (stat(p, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            if (depth < 6)
                index_dir(s, p, depth + 1, budget);
        } else if (S_ISREG(st.st_mode)) {
            char hex[129];
            if (an_elf_build_id(p, hex, sizeof hex))
                index_add(s, hex, p);
        }
    }
    closedir(d);
}

static const char *index_find(an_symtab *s, const char *bid)
{
    if (!s->indexed) {
        s->indexed = 1;
        size_t budget = 200000;
        for (size_t i = 0; i < s->ndirs; i++)
            index_dir(s, s->dirs[i], 0, &budget);
    }
    for (size_t i = 0; i < s->nindex; i++)
        if (strcmp(s->index[i].build_id, bid) == 0)
            return s->index[i].path;
    return NULL;
}

static int cmp_sym(const void *a, const void *b)
{
    const fsym *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Function symbols of e (.symtab, else .dynsym) into m. */
static void load_syms(module *m, const elf_img *e)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)e->p;
    const Elf64_Shdr *best = NULL;
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        const Elf64_Shdr *sh = elf_shdr(e, i);
        if (!sh || sh->sh_entsize != sizeof(Elf64_Sym))
            continue;
        if (sh->sh_type == SHT_SYMTAB || (sh->sh_type == SHT_DYNSYM && !best))
            best = sh;
    }
    if (!best || !in_bounds(e, best->sh_offset, best->sh_size))
        return;
    const Elf64_Shdr *str = elf_shdr(e, best->sh_link);
    if (!str || !in_bounds(e, str->sh_offset, str->sh_size) || str->sh_size == 0)
        return;
    size_t n = best->sh_size / sizeof(Elf64_Sym);
    m->strtab = malloc(str->sh_size + 1);
    m->syms = calloc(n ? n : 1, sizeof *m->syms);
    if (!m->strtab || !m->syms)
        return;
    memcpy(m->strtab, e->p + str->sh_offset, str->sh_size);
    m->strtab[str->sh_size] = 0;
    const Elf64_Sym *sy = (const Elf64_Sym *)(e->p + best->sh_offset);
    for (size_t i = 0; i < n; i++) {
        unsigned t = ELF64_ST_TYPE(sy[i].st_info);
        if ((t != STT_FUNC && t != STT_GNU_IFUNC) || sy[i].st_shndx == SHN_UNDEF ||
            sy[i].st_name >= str->sh_size || sy[i].st_value == 0)
            continue;
        m->syms[m->nsyms].addr = sy[i].st_value;
        m->syms[m->nsyms].size = sy[i].st_size;
        m->syms[m->nsyms].name = m->strtab + sy[i].st_name;
        m->nsyms++;
    }
    qsort(m->syms, m->nsyms, sizeof *m->syms, cmp_sym);
}

static void load_segs(module *m, const elf_img *e)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)e->p;
    m->segs = calloc(eh->e_phnum ? eh->e_phnum : 1, sizeof *m->segs);
    for (unsigned i = 0; m->segs && i < eh->e_phnum; i++) {
        const Elf64_Phdr *ph = elf_phdr(e, i);
        if (ph && ph->p_type == PT_LOAD)
            m->segs[m->nsegs++] = (load_seg){ph->p_offset, ph->p_vaddr, ph->p_filesz};
    }
}

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static void module_load(an_symtab *s, module *m)
{
    char hex[129];
    const char *bid = m->build_id && m->build_id[0] ? m->build_id : NULL;
    char debug[1024] = "";
    if (bid && strlen(bid) > 2)
        snprintf(debug, sizeof debug, "/usr/lib/debug/.build-id/%.2s/%s.debug", bid, bid + 2);
    if (debug[0] && !file_exists(debug))
        debug[0] = 0;
    /* the binary: recorded path (build id must match), then the symbol folders */
    if (m->path && m->path[0] == '/' && file_exists(m->path)) {
        size_t n = an_elf_build_id(m->path, hex, sizeof hex);
        if (!bid || (n && strcmp(hex, bid) == 0))
            scopy(m->file, sizeof m->file, m->path);
    }
    if (!m->file[0] && bid) {
        const char *p = index_find(s, bid);
        if (p)
            scopy(m->file, sizeof m->file, p);
    }
    if (!m->file[0] && debug[0])
        scopy(m->file, sizeof m->file, debug); /* keeps the program headers */
    if (!m->file[0])
        return;
    m->found = 1;
    elf_img e;
    if (elf_map(m->file, &e) != 0) {
        m->found = 0;
        return;
    }
    load_segs(m, &e);
    load_syms(m, &e);
    elf_unmap(&e);
    scopy(m->dwarf, sizeof m->dwarf, m->file);
    if (debug[0] && strcmp(debug, m->file) != 0) {
        /* a stripped binary: the debug file has .symtab and the DWARF */
        scopy(m->dwarf, sizeof m->dwarf, debug);
        {
            elf_img d;
            if (elf_map(debug, &d) == 0) {
                module tmp;
                memset(&tmp, 0, sizeof tmp);
                load_syms(&tmp, &d);
                elf_unmap(&d);
                if (tmp.nsyms > m->nsyms) {
                    free(m->syms);
                    free(m->strtab);
                    m->syms = tmp.syms;
                    m->nsyms = tmp.nsyms;
                    m->strtab = tmp.strtab;
                } else {
                    free(tmp.syms);
                    free(tmp.strtab);
                }
            }
        }
    }
}

static module *module_get(an_symtab *s, const char *path, const char *bid)
{
    path = path ? path : "";
    bid = bid ? bid : "";
    for (size_t i = 0; i < s->nmods; i++)
        if (strcmp(s->mods[i].path, path) == 0 && strcmp(s->mods[i].build_id, bid) == 0)
            return &s->mods[i];
    if (s->nmods == s->capmods) {
        size_t nc = s->capmods ? 2 * s->capmods : 32;
        module *n = realloc(s->mods, nc * sizeof *n);
        if (!n)
            return NULL;
        s->mods = n;
        s->capmods = nc;
    }
    module *m = &s->mods[s->nmods];
    memset(m, 0, sizeof *m);
    m->path = strdup(path);
    m->build_id = strdup(bid);
    if (!m->path || !m->build_id) {
        free(m->path);
        free(m->build_id);
        return NULL;
    }
    s->nmods++;
    module_load(s, m);
    return m;
}

/* File offset -> link-time virtual address; 0 when no segment holds it. */
static int off_to_vaddr(const module *m, uint64_t off, uint64_t *va)
{
    for (size_t i = 0; i < m->nsegs; i++) {
        const load_seg *g = &m->segs[i];
        if (off >= g->off && off < g->off + g->filesz) {
            *va = off - g->off + g->vaddr;
            return 1;
        }
    }
    return 0;
}

static const fsym *sym_find(const module *m, uint64_t va)
{
    size_t lo = 0, hi = m->nsyms;
    while (lo < hi) { /* first symbol with addr > va */
        size_t mid = (lo + hi) / 2;
        if (m->syms[mid].addr <= va)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    const uint64_t a = m->syms[lo - 1].addr;
    const fsym *unsized = NULL;
    for (size_t i = lo; i-- > 0 && m->syms[i].addr == a;) {
        if (m->syms[i].size && va < a + m->syms[i].size)
            return &m->syms[i];
        if (!m->syms[i].size)
            unsized = &m->syms[i]; /* runs to the next symbol */
    }
    return unsized;
}

/* ---- addr2line --------------------------------------------------------------- */

static const char *addr2line_path(void)
{
    static const char *const cands[] = {"/usr/bin/addr2line", "/bin/addr2line",
                                        "/usr/local/bin/addr2line"};
    for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++)
        if (access(cands[i], X_OK) == 0)
            return cands[i];
    return NULL;
}

/* Fill file/line (and a better function name) of reqs idx[0..n) of module m
 * whose link-time addresses are va[]. */
static void run_addr2line(const module *m, an_sym_req *reqs, const size_t *idx,
                          const uint64_t *va, size_t n)
{
    const char *tool = addr2line_path();
    if (!tool || n == 0)
        return;
    char tmpl[] = "/tmp/gpustarve-a2l-XXXXXX";
    int in = mkstemp(tmpl);
    if (in < 0)
        return;
    unlink(tmpl);
    FILE *f = fdopen(in, "w+");
    if (!f) {
        close(in);
        return;
    }
    for (size_t i = 0; i < n; i++)
        fprintf(f, "0x%llx\n", (unsigned long long)va[i]);
    fflush(f);
    lseek(in, 0, SEEK_SET);
    int out[2];
    if (pipe(out) != 0) {
        fclose(f);
        return;
    }
    pid_t pid = fork();
    if (pid == 0) {
        dup2(in, 0);
        dup2(out[1], 1);
        int dn = open("/dev/null", O_WRONLY);
        if (dn >= 0)
            dup2(dn, 2);
        close(out[0]);
        execl(tool, "addr2line", "-f", "-C", "-e", m->dwarf, (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    fclose(f);
    if (pid < 0) {
        close(out[0]);
        return;
    }
    FILE *r = fdopen(out[0], "r");
    char fn[1024], fl[2048];
    for (size_t i = 0; r && i < n; i++) {
        if (!fgets(fn, sizeof fn, r) || !fgets(fl, sizeof fl, r))
            break;
        fn[strcspn(fn, "\n")] = 0;
        fl[strcspn(fl, "\n")] = 0;
        char *disc = strstr(fl, " (discriminator");
        if (disc)
            *disc = 0;
        an_sym_req *q = &reqs[idx[i]];
        char *colon = strrchr(fl, ':');
        if (colon && strcmp(fl, "??:0") != 0 && strncmp(fl, "??", 2) != 0) {
            *colon = 0;
            unsigned line = (unsigned)strtoul(colon + 1, NULL, 10);
            if (line) {
                scopy(q->file, sizeof q->file, fl);
                q->line = line;
            }
        }
        /* RATIONALE: without DWARF (no line found) addr2line names the nearest
         * exported symbol, wrong for every static function of a stripped
         * binary: its name is taken only with a line, from the DWARF */
        if (q->line && strcmp(fn, "??") != 0 && fn[0] &&
            (!q->func[0] || strncmp(q->func, "_Z", 2) == 0)) {
            if (!q->func[0])
                q->func_off = AN_SYM_OFF_UNKNOWN;
            scopy(q->func, sizeof q->func, fn);
        }
    }
    if (r)
        fclose(r);
    else
        close(out[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
}

/* ---- resolve ------------------------------------------------------------------- */

void an_sym_resolve(an_symtab *s, an_sym_req *reqs, size_t n)
{
    module **mods = calloc(n ? n : 1, sizeof *mods);
    uint64_t *vas = calloc(n ? n : 1, sizeof *vas);
    size_t *idx = calloc(n ? n : 1, sizeof *idx);
    uint64_t *va_batch = calloc(n ? n : 1, sizeof *va_batch);
    for (size_t i = 0; i < n; i++) {
        an_sym_req *q = &reqs[i];
        q->func[0] = q->file[0] = q->found[0] = 0;
        q->func_off = 0;
        q->line = 0;
        module *m = mods ? module_get(s, q->path, q->build_id) : NULL;
        if (mods)
            mods[i] = m;
        if (!m || !m->found) {
            q->status = AN_SYM_NOFILE;
            continue;
        }
        scopy(q->found, sizeof q->found, m->file);
        uint64_t va;
        if (!off_to_vaddr(m, q->file_off, &va)) {
            q->status = AN_SYM_NOSYM;
            continue;
        }
        if (vas)
            vas[i] = va;
        const fsym *f = sym_find(m, va);
        if (f) {
            scopy(q->func, sizeof q->func, f->name);
            q->func[strcspn(q->func, "@")] = 0; /* no symbol version (memcpy@GLIBC_2.14) */
            q->func_off = va - f->addr;
            q->status = AN_SYM_OK;
        } else {
            q->status = AN_SYM_NOSYM;
        }
    }
    if (s->lines && mods && vas && idx && va_batch) {
        /* one addr2line per module, with all of its addresses */
        for (size_t i = 0; i < n; i++) {
            module *m = mods[i];
            if (!m || !m->found || reqs[i].status == AN_SYM_NOFILE || !vas[i])
                continue;
            size_t k = 0;
            for (size_t j = i; j < n; j++) {
                if (mods[j] != m || !vas[j])
                    continue;
                idx[k] = j;
                va_batch[k++] = vas[j];
                if (j != i)
                    mods[j] = NULL; /* batched now */
            }
            run_addr2line(m, reqs, idx, va_batch, k);
            for (size_t j = 0; j < k; j++)
                if (reqs[idx[j]].func[0] && reqs[idx[j]].status == AN_SYM_NOSYM)
                    reqs[idx[j]].status = AN_SYM_OK;
        }
    }
    free(mods);
    free(vas);
    free(idx);
    free(va_batch);
}
