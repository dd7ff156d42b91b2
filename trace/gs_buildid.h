/* gs_buildid.h — the GNU build id of an ELF image, as the collector writes it
 * into MAPPING records and the analyzer looks a file up by it
 * (docs/trace-format.md, "mapping"): lower-case hex of the NT_GNU_BUILD_ID
 * note's bytes.
 *
 * Responsible for: finding that note in a block of ELF notes, and in the
 * PT_NOTE segments of a 64-bit image read through the caller's function.
 *
 * Must never: allocate, lock, make a system call or keep state (the
 * collector calls it from its writer with the output lock held, reading
 * files with raw system calls, and the analyzer from several threads); read
 * outside the bytes it was given.
 */
#ifndef GS_BUILDID_H
#define GS_BUILDID_H

#include <stddef.h>
#include <stdint.h>

/* RATIONALE: the ids linkers make are 16 (md5, uuid) or 20 (sha1) bytes;
 * 64 bounds the caller's buffer, and a longer note is not read as one. */
#define GS_BUILD_ID_MAX 64                      /* bytes */
#define GS_BUILD_ID_HEX (2 * GS_BUILD_ID_MAX + 1) /* hex digits and the NUL */

/* The first GNU build id in len bytes of ELF notes (a PT_NOTE segment or an
 * SHT_NOTE section, host byte order): written to hex, NUL-terminated. Its
 * length in hex digits, 0 when there is none (nothing written then). */
size_t gs_build_id_notes(const void *notes, size_t len, char hex[GS_BUILD_ID_HEX]);

/* Reads len bytes at offset off of an ELF image into buf: 0, or -1 when it
 * cannot (short file, I/O error). */
typedef int (*gs_elf_read_fn)(void *ctx, uint64_t off, void *buf, size_t len);

/* The first GNU build id in the PT_NOTE segments of a 64-bit ELF image in
 * the host's byte order, read through rd(ctx, ...): each segment is read (its
 * first cap bytes) into the caller's scratch. Its length in hex digits, 0
 * when the image is not such an ELF file or has none. */
size_t gs_build_id_phdrs(gs_elf_read_fn rd, void *ctx, void *scratch, size_t cap,
                         char hex[GS_BUILD_ID_HEX]);

#endif
