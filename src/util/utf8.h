/* UTF-8 checks for text that leaves carma as JSON or HTML: file names, commands and
 * names come from users and may hold any bytes. */
#ifndef CARMA_UTIL_UTF8_H
#define CARMA_UTIL_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Length of the well-formed UTF-8 sequence at p (1..4; no overlongs, surrogates or
 * code points above U+10FFFF), or 0 when p does not start one or is at its NUL. Never
 * reads past a NUL. */
size_t carma_utf8_seq(const unsigned char *p);

/* The code point of the well-formed UTF-8 sequence of l bytes at p (carma_utf8_seq's
 * length; 0 for any other l). */
uint32_t carma_utf8_code_point(const unsigned char *p, size_t l);

/* Cuts an incomplete UTF-8 sequence (a lead byte without all its continuation bytes)
 * off the end of s, n bytes long, as a cut by snprintf can leave: s is then
 * NUL-terminated at the last whole character. Other bytes stay as they are. Returns the
 * new length. */
size_t carma_utf8_cut(char *s, size_t n);

/* A malloc'd copy of s with each byte that starts no well-formed sequence replaced by
 * U+FFFD; NULL when out of memory. */
char *carma_utf8_lossy(const char *s);

#endif
