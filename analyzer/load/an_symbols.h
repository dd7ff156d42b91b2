/* an_symbols.h — offline symbolisation of return addresses recorded by the
 * collector (MAPPING + STACK records), on any machine.
 *
 * Responsible for: finding a module's ELF file by GNU build id (the
 * recorded path when its build id matches, the debug file under
 * /usr/lib/debug/.build-id/, then the --symbol-path folders), function
 * names from .symtab/.dynsym, file:line from DWARF through addr2line(1)
 * when it is installed (batched: one process per module), and saying
 * plainly when a module cannot be found.
 *
 * Must never: trust an ELF file's offsets without bounds checks, run
 * anything but addr2line, or be slow on what it is not asked (files are
 * opened on first use; nothing is symbolised unless requested).
 */
#ifndef AN_SYMBOLS_H
#define AN_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

typedef struct an_symtab an_symtab;

enum an_sym_status {
    AN_SYM_OK = 0,       /* function found */
    AN_SYM_NOSYM = 1,    /* module found, no symbol covers the address: module+offset */
    AN_SYM_NOFILE = 2,   /* module not found (or build id differs): unsymbolised */
    AN_SYM_NOMAP = 3,    /* address in no recorded mapping */
    AN_SYM_PERFMAP = 4,  /* named by the process's perf map (Python frames) */
};

/* func_off when the name came from DWARF (addr2line) without a symbol */
#define AN_SYM_OFF_UNKNOWN UINT64_MAX

typedef struct an_sym_req {
    /* in */
    const char *path;     /* module path as recorded (may be "" / NULL) */
    const char *build_id; /* hex, or NULL/"" when unknown */
    uint64_t file_off;    /* the address (return address - 1) as a file offset */
    /* out */
    int status;              /* enum an_sym_status */
    char func[256];          /* function name, "" when unknown */
    uint64_t func_off;       /* address - function start, AN_SYM_OFF_UNKNOWN */
    char file[512];          /* source file, "" when unknown */
    unsigned line;           /* 0 when unknown */
    char found[1024];        /* the ELF file used, "" when none */
} an_sym_req;

/* A symboliser searching the given folders (may be empty) after the
 * recorded path and the debug folder. lines: 0 = never run addr2line. */
an_symtab *an_sym_new(const char *const *symbol_paths, size_t n, int lines);
void an_sym_free(an_symtab *s);

/* Resolve reqs[0..n) (grouped by module internally; addr2line once per
 * module with all its addresses). Always fills status and the out fields. */
void an_sym_resolve(an_symtab *s, an_sym_req *reqs, size_t n);

/* The GNU build id (hex) of an ELF file into hex (cap >= 129); its length,
 * 0 when the file is not ELF or has none. */
size_t an_elf_build_id(const char *path, char *hex, size_t cap);

#endif
