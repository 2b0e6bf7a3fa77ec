/* A strict, bounded CSV reader over a caller-owned buffer (RFC 4180 subset: comma
 * separated, optional double quotes with "" escapes, LF or CRLF line ends). It does
 * no I/O: callers read the file (carma_file_read) and hand the bytes in. */
#ifndef CARMA_UTIL_CSV_H
#define CARMA_UTIL_CSV_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "util/err.h"

#define CARMA_CSV_MAX_FIELDS 64
#define CARMA_CSV_MAX_FIELD 4096 /* bytes of a field, at most */
/* Bytes of a record, at most: its fields and separators (quotes, "" escapes counted once,
 * and the line end left out). Below 64 full fields, so it is a limit of its own. */
#define CARMA_CSV_MAX_RECORD 8192

struct carma_csv {
    const char *buf; /* not owned */
    size_t len, pos;
    size_t line;     /* 1-based line where the record last returned starts */
    size_t lines;    /* lines read so far (a quoted field may span several) */
    char sep;        /* ',' by default; '\t' for tab-separated files */
    const char *file; /* for error messages */
    /* The current record: fields point into `scratch`, NUL-terminated. */
    size_t nfields;
    char *field[CARMA_CSV_MAX_FIELDS];
    char scratch[CARMA_CSV_MAX_RECORD + 1]; /* separators become NULs, then one more */
};

void carma_csv_init(struct carma_csv *c, const char *buf, size_t len, const char *file, char sep);

/* Reads the next non-empty record. Returns 1 with c->field/nfields set, 0 at end of
 * input, or a negative code with err naming file and line (unterminated quote, too
 * many fields, a field or record too long, a NUL byte, a carriage return outside quotes that is
 * not part of a CRLF, a second byte order mark). An error on a later line of a record
 * that spans lines also names the line where the record starts. */
int carma_csv_next(struct carma_csv *c, struct carma_err *err);

/* Whether text ends its lines with a bare CR (classic Mac OS): a CR and no LF at all.
 * Line readers would see one line; callers refuse it with CARMA_CR_ONLY_MSG. */
int carma_text_cr_only(const char *buf, size_t len);
#define CARMA_CR_ONLY_MSG "lines end in a bare carriage return (classic Mac): convert them to LF"
/* A CR that is not part of a CRLF (outside a quoted field), in text that has LFs too:
 * the CSV reader and the line reader of Gavel, .sh and .rad files refuse it by line. */
#define CARMA_CR_BARE_MSG "a carriage return without a line feed"
/* Text may start with one UTF-8 byte order mark (Excel writes one); readers skip it
 * and refuse a second one right after it with CARMA_BOM2_MSG at line 1. */
#define CARMA_BOM "\xEF\xBB\xBF"
#define CARMA_BOM2_MSG "a second byte order mark after the first: not text carma reads"

/* The 1-based line of the first NUL byte in text, or 0 when it holds none. Text
 * readers refuse a NUL with "FILE:LINE: NUL byte in text", as carma_csv_next does. */
size_t carma_text_nul_line(const char *buf, size_t len);

/* Why buf is not text at all, or NULL: "looks compressed (gzip): decompress it first"
 * (gzip, bzip2, xz, zstd, zip and 7z by their magic bytes), or "binary file, not text"
 * when its first 4 KiB hold a NUL and more than 10% of bytes that are controls (other
 * than tab, CR, LF) or not UTF-8. A text file with a stray NUL is left to
 * carma_text_nul_line, which names the line. */
const char *carma_text_not_text(const char *buf, size_t len);

/* Index of the header column named `name` in the current record, or -1. */
int carma_csv_col(const struct carma_csv *c, const char *name);

/* Fails (negative, err "FILE:LINE: column 'X' given twice") when two columns of the
 * current record, taken as a header, have the same non-empty name; else 0. */
int carma_csv_header_unique(const struct carma_csv *c, struct carma_err *err);

/* Reads the header record, refuses a name given twice (carma_csv_header_unique) and
 * finds the n columns names[] in it: col[k] is the index of names[k], or -1 for an
 * absent optional one (k >= nrequired). Returns 0, or a negative code with err naming
 * the file and what is wrong (`hint`, if not NULL, follows a missing column). */
int carma_csv_header(struct carma_csv *c, const char *const *names, size_t n, size_t nrequired,
                     int *col, const char *hint, struct carma_err *err);

/* Strict number parsing: the whole field, no trailing garbage, finite, in range.
 * Return 0 or -EINVAL. A number too small for a double (underflow: 4.9e-324, 1e-400)
 * is no error: it reads as the nearest double, a subnormal or 0. */
/* The current record has the header's ncols fields: 0, or -EINVAL with err naming the
 * file and line ("N fields, the header has M"). */
int carma_csv_fields_check(const struct carma_csv *c, size_t ncols, struct carma_err *err);

/* Writes field s to o as a CSV field: quoted (quotes doubled) when it holds a comma, a
 * quote or a line break, else as it is. */
void carma_csv_put(FILE *o, const char *s);

int carma_parse_double(const char *s, double *out);
int carma_parse_u64(const char *s, uint64_t *out);
int carma_parse_i64(const char *s, int64_t *out);

/* Reads a whole file (at most max bytes, else -EFBIG; a regular file's size is checked
 * before reading) into a NUL-terminated malloc'd buffer owned by the caller. Returns 0
 * or a negative errno with err filled. */
int carma_file_read(const char *path, size_t max, char **out, size_t *len, struct carma_err *err);

/* The same from an open stream (standard input, say), named `name` in messages; the
 * stream is read to its end and left open. */
int carma_stream_read(FILE *f, const char *name, size_t max, char **out, size_t *len,
                      struct carma_err *err);

#endif
