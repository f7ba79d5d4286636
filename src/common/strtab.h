/*
 * A string table: each distinct string stored once and numbered in the
 * order first seen (0, 1, 2, ...), found again by an open-addressing index
 * (common/hash.h). The recorder and the importers intern event names with
 * it, the importers pid and tid strings too, the rules engine node names.
 *
 * Ownership: the table owns its copies; s[i] lives until strtab_release.
 * A zeroed struct is an empty table with no limit; set max to bound it.
 */
#ifndef STROBE_COMMON_STRTAB_H
#define STROBE_COMMON_STRTAB_H

#include <stddef.h>
#include <stdint.h>

struct strtab {
    char **s;        /* s[index], NUL-terminated, owned */
    uint32_t n, cap; /* strings, slots of s */
    uint32_t max;    /* most strings it takes; 0: no limit */
    uint32_t *slots; /* open addressing: index + 1, 0 empty */
    uint32_t nslots; /* a power of two, at least twice n */
};

/*
 * The index of s[0..len) (no NUL inside) in *index, added if new: 0 when it
 * was there, 1 when added; -ENOSPC when new and the table holds max
 * strings; -ENOMEM.
 */
int strtab_intern(struct strtab *t, const char *s, size_t len, uint32_t *index);

/* Frees every string and the index; t is then an empty table, max kept. */
void strtab_release(struct strtab *t);

#endif
