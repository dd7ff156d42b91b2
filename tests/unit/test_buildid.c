/* test_buildid.c — the GNU build id reader (trace/gs_buildid.c) on ELF notes
 * and images made by hand: the GNU note is found after other notes, in hex;
 * a note of another owner or type, one longer than GS_BUILD_ID_MAX, or one
 * cut short is no build id; an image's PT_NOTE segments are read through the
 * caller's reader (a segment past the scratch is read up to it), and an
 * image that is not a 64-bit ELF file has none. */
#include <elf.h>
#include <string.h>

#include "gs_buildid.h"
#include "gs_check.h"

/* Append one note (name with its NUL, desc) at *len of buf, padded to 4. */
static void put_note(uint8_t *buf, size_t *len, uint32_t type, const char *name,
                     const uint8_t *desc, uint32_t descsz)
{
    Elf64_Nhdr nh = {.n_namesz = (uint32_t)strlen(name) + 1, .n_descsz = descsz, .n_type = type};
    memcpy(buf + *len, &nh, sizeof nh);
    *len += sizeof nh;
    memset(buf + *len, 0, (nh.n_namesz + 3u) & ~3u);
    memcpy(buf + *len, name, nh.n_namesz);
    *len += (nh.n_namesz + 3u) & ~3u;
    memset(buf + *len, 0, (descsz + 3u) & ~3u);
    memcpy(buf + *len, desc, descsz);
    *len += (descsz + 3u) & ~3u;
}

static const uint8_t k_id[20] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x00, 0xff,
                                 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa5};
static const char k_hex[] = "0123456789abcdef00ff102030405060708090a5";

static void test_notes(void)
{
    uint8_t buf[512], big[GS_BUILD_ID_MAX + 1] = {0};
    char hex[GS_BUILD_ID_HEX];
    static const struct {
        const char *what;
        uint32_t type;
        const char *owner;
        int size; /* of the id: 20, or GS_BUILD_ID_MAX + 1 */
        int found;
    } cases[] = {
        {"GNU build id", NT_GNU_BUILD_ID, "GNU", 20, 1},
        {"another owner", NT_GNU_BUILD_ID, "Go", 20, 0},
        {"another GNU note", NT_GNU_ABI_TAG, "GNU", 20, 0},
        {"longer than GS_BUILD_ID_MAX", NT_GNU_BUILD_ID, "GNU", GS_BUILD_ID_MAX + 1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t len = 0;
        const uint8_t abi[16] = {0};
        put_note(buf, &len, NT_GNU_ABI_TAG, "GNU", abi, sizeof abi); /* comes first */
        put_note(buf, &len, cases[i].type, cases[i].owner, cases[i].size == 20 ? k_id : big,
                 (uint32_t)cases[i].size);
        memset(hex, 'x', sizeof hex);
        const size_t n = gs_build_id_notes(buf, len, hex);
        ASSERT_MSG(n == (cases[i].found ? 40u : 0u), "%s: length %zu", cases[i].what, n);
        if (cases[i].found)
            ASSERT_MSG(strcmp(hex, k_hex) == 0, "%s: %s, want %s", cases[i].what, hex, k_hex);
        else
            ASSERT_MSG(hex[0] == 'x', "%s: wrote to hex", cases[i].what);
        /* the same notes one byte short: the last note is cut, not read */
        ASSERT_EQ(gs_build_id_notes(buf, len - 1, hex), 0);
    }
}

/* An image in memory: ELF header, program headers, then the notes. */
typedef struct img {
    uint8_t b[1024];
    size_t len;
} img;

static int read_img(void *ctx, uint64_t off, void *buf, size_t len)
{
    const img *m = ctx;
    if (off > m->len || len > m->len - off)
        return -1;
    memcpy(buf, m->b + off, len);
    return 0;
}

static void make_image(img *m, size_t *notes_len)
{
    memset(m, 0, sizeof *m);
    Elf64_Ehdr eh = {.e_phoff = sizeof(Elf64_Ehdr), .e_phentsize = sizeof(Elf64_Phdr),
                     .e_phnum = 2};
    memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    memcpy(m->b, &eh, sizeof eh);
    const size_t notes = sizeof eh + 2 * sizeof(Elf64_Phdr);
    size_t len = 0;
    put_note(m->b + notes, &len, NT_GNU_BUILD_ID, "GNU", k_id, sizeof k_id);
    Elf64_Phdr ph[2] = {{.p_type = PT_LOAD, .p_filesz = 64},
                        {.p_type = PT_NOTE, .p_offset = notes, .p_filesz = len}};
    memcpy(m->b + sizeof eh, ph, sizeof ph);
    m->len = notes + len;
    *notes_len = len;
}

static void test_image(void)
{
    img m;
    size_t len;
    uint8_t scratch[256];
    char hex[GS_BUILD_ID_HEX];
    make_image(&m, &len);
    ASSERT_EQ(gs_build_id_phdrs(read_img, &m, scratch, sizeof scratch, hex), 40);
    ASSERT_EQ(strcmp(hex, k_hex), 0);
    ASSERT_EQ(gs_build_id_phdrs(read_img, &m, scratch, len - 1, hex), 0); /* cut at the scratch */
    m.b[EI_CLASS] = ELFCLASS32;
    ASSERT_EQ(gs_build_id_phdrs(read_img, &m, scratch, sizeof scratch, hex), 0);
    make_image(&m, &len);
    m.b[1] = 'X'; /* not ELF */
    ASSERT_EQ(gs_build_id_phdrs(read_img, &m, scratch, sizeof scratch, hex), 0);
    make_image(&m, &len);
    m.len -= 4; /* the note segment runs past the end of the file */
    ASSERT_EQ(gs_build_id_phdrs(read_img, &m, scratch, sizeof scratch, hex), 0);
}

int main(void)
{
    test_notes();
    test_image();
    return gs_check_done("test_buildid");
}
