/* Numbers for people: sizes in binary units, as every command's text
 * output shows them. */
#ifndef HS_FMT_H
#define HS_FMT_H

#include <stdint.h>

/* "1.5 MiB" style (bytes below 1 KiB: "512 B"); buf of at least 32 bytes. */
const char *hs_fmt_size(char *buf, uint64_t bytes);

#endif
