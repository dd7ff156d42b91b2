/* gs_buildid.c — the GNU build id of an ELF image (see gs_buildid.h).
 *
 * Responsible for: walking ELF notes and program headers, bounds-checked,
 * through the reader the caller gives (the collector reads with raw system
 * calls or from memory, the analyzer from a mapped file).
 *
 * Must never: allocate, lock, make a system call or keep state; read a
 * note past the bytes it was given.
 */
#include <elf.h>
#include <string.h>

#include "gs_buildid.h"

size_t gs_build_id_notes(const void *notes, size_t len, char hex[GS_BUILD_ID_HEX])
{
    const uint8_t *n = notes;
    for (size_t p = 0; p + sizeof(Elf64_Nhdr) <= len;) {
        Elf64_Nhdr nh;
        memcpy(&nh, n + p, sizeof nh);
        const size_t name = p + sizeof nh;
        const size_t desc = name + ((nh.n_namesz + 3u) & ~3u);
        const size_t next = desc + ((nh.n_descsz + 3u) & ~3u);
        if (next > len || next <= p)
            break;
        if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && memcmp(n + name, "GNU", 4) == 0 &&
            nh.n_descsz > 0 && nh.n_descsz <= GS_BUILD_ID_MAX) {
            static const char dig[] = "0123456789abcdef";
            for (size_t j = 0; j < nh.n_descsz; j++) {
                hex[2 * j] = dig[n[desc + j] >> 4];
                hex[2 * j + 1] = dig[n[desc + j] & 15];
            }
            hex[2 * nh.n_descsz] = 0;
            return 2 * nh.n_descsz;
        }
        p = next;
    }
    return 0;
}

size_t gs_build_id_phdrs(gs_elf_read_fn rd, void *ctx, void *scratch, size_t cap,
                         char hex[GS_BUILD_ID_HEX])
{
    Elf64_Ehdr eh;
    if (rd(ctx, 0, &eh, sizeof eh) != 0 || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
        eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr) ||
        eh.e_phnum == 0 || eh.e_phnum > 256)
        return 0;
    for (unsigned i = 0; i < eh.e_phnum; i++) {
        Elf64_Phdr ph;
        if (rd(ctx, eh.e_phoff + i * sizeof ph, &ph, sizeof ph) != 0)
            return 0;
        if (ph.p_type != PT_NOTE)
            continue;
        const size_t len = ph.p_filesz < cap ? ph.p_filesz : cap;
        if (rd(ctx, ph.p_offset, scratch, len) != 0)
            continue;
        const size_t n = gs_build_id_notes(scratch, len, hex);
        if (n)
            return n;
    }
    return 0;
}
