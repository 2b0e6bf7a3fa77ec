#include "util/csv.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void carma_csv_init(struct carma_csv *c, const char *buf, size_t len, const char *file, char sep)
{
    memset(c, 0, sizeof *c);
    /* A UTF-8 byte order mark is not part of the header (a second one is refused). */
    if (len >= 3 && memcmp(buf, CARMA_BOM, 3) == 0) {
        buf += 3;
        len -= 3;
    }
    c->buf = buf;
    c->len = len;
    c->file = file;
    c->sep = sep ? sep : ',';
}

/* An error at the line being read, naming where its record starts when that differs. */
static int csv_err(const struct carma_csv *c, struct carma_err *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int csv_err(const struct carma_csv *c, struct carma_err *err, const char *fmt, ...)
{
    char what[CARMA_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (c->lines != c->line)
        return carma_err_at(err, c->file, c->lines, "%s (in the record starting at line %zu)", what,
                            c->line);
    return carma_err_at(err, c->file, c->lines, "%s", what);
}

int carma_csv_next(struct carma_csv *c, struct carma_err *err)
{
    for (;;) {
        if (c->pos >= c->len)
            return 0;
        if (c->pos == 0 && c->len >= 3 && memcmp(c->buf, CARMA_BOM, 3) == 0)
            return carma_err_at(err, c->file, 1, "%s", CARMA_BOM2_MSG);
        c->line = ++c->lines;
        size_t out = 0, nf = 0;
        int quoted = 0, at_field_start = 1, field_was_quoted = 0;
        size_t field_len = 0;
        c->field[0] = c->scratch;
        nf = 1;
        for (;;) {
            if (c->pos >= c->len) {
                if (quoted)
                    return carma_err_at(err, c->file, c->line, "unterminated quoted field");
                break;
            }
            char ch = c->buf[c->pos++];
            if (ch == '\0')
                return csv_err(c, err, "NUL byte in text");
            if (quoted) {
                if (ch == '"') {
                    if (c->pos < c->len && c->buf[c->pos] == '"') {
                        c->pos++;
                    } else {
                        quoted = 0;
                        continue;
                    }
                } else if (ch == '\n') {
                    c->lines++;
                }
            } else if (ch == '"' && at_field_start) {
                quoted = 1;
                field_was_quoted = 1;
                at_field_start = 0;
                continue;
            } else if (ch == '"') {
                return csv_err(c, err, "stray quote inside field %zu", nf);
            } else if (ch == c->sep) {
                if (out >= CARMA_CSV_MAX_RECORD)
                    return csv_err(c, err, "record longer than %d bytes", CARMA_CSV_MAX_RECORD);
                c->scratch[out++] = '\0';
                if (nf >= CARMA_CSV_MAX_FIELDS)
                    return csv_err(c, err, "more than %d fields", CARMA_CSV_MAX_FIELDS);
                c->field[nf++] = c->scratch + out;
                at_field_start = 1;
                field_was_quoted = 0;
                field_len = 0;
                continue;
            } else if (ch == '\n') {
                break;
            } else if (ch == '\r' && c->pos < c->len && c->buf[c->pos] == '\n') {
                continue;
            } else if (ch == '\r') {
                return csv_err(c, err, "%s",
                               carma_text_cr_only(c->buf, c->len) ? CARMA_CR_ONLY_MSG
                                                                  : CARMA_CR_BARE_MSG);
            } else if (field_was_quoted) {
                return csv_err(c, err, "text after closing quote in field %zu", nf);
            }
            at_field_start = 0;
            if (++field_len > CARMA_CSV_MAX_FIELD)
                return csv_err(c, err, "field %zu longer than %d bytes", nf, CARMA_CSV_MAX_FIELD);
            if (out >= CARMA_CSV_MAX_RECORD)
                return csv_err(c, err, "record longer than %d bytes", CARMA_CSV_MAX_RECORD);
            c->scratch[out++] = ch;
        }
        c->scratch[out] = '\0';
        c->nfields = nf;
        if (nf == 1 && c->field[0][0] == '\0')
            continue; /* blank line */
        return 1;
    }
}

int carma_text_cr_only(const char *buf, size_t len)
{
    return memchr(buf, '\r', len) && !memchr(buf, '\n', len);
}

static int starts(const char *buf, size_t len, const char *magic, size_t n)
{
    return len >= n && memcmp(buf, magic, n) == 0;
}

const char *carma_text_not_text(const char *buf, size_t len)
{
    static const struct {
        const char *magic;
        size_t n;
        const char *msg;
    } comp[] = {
        {"\x1f\x8b", 2, "looks compressed (gzip): decompress it first"},
        {"BZh", 3, "looks compressed (bzip2): decompress it first"},
        {"\xfd" "7zXZ\0", 6, "looks compressed (xz): decompress it first"},
        {"\x28\xb5\x2f\xfd", 4, "looks compressed (zstd): decompress it first"},
        {"PK\x03\x04", 4, "looks compressed (zip): decompress it first"},
        {"7z\xbc\xaf\x27\x1c", 6, "looks compressed (7z): decompress it first"},
    };
    for (size_t i = 0; i < sizeof comp / sizeof comp[0]; i++)
        /* bzip2: "BZh", a block size digit, then its block magic "1AY&SY" */
        if (starts(buf, len, comp[i].magic, comp[i].n) &&
            (i != 1 || (len >= 10 && buf[3] >= '1' && buf[3] <= '9' &&
                        memcmp(buf + 4, "1AY&SY", 6) == 0)))
            return comp[i].msg;
    size_t n = len < 4096 ? len : 4096, odd = 0;
    if (!memchr(buf, '\0', n))
        return NULL;
    const unsigned char *p = (const unsigned char *)buf;
    for (size_t i = 0; i < n;) {
        unsigned char ch = p[i];
        if (ch < 0x80) {
            odd += (ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r') || ch == 0x7f;
            i++;
            continue;
        }
        /* a well-formed UTF-8 sequence within the sample counts as text */
        size_t k = ch >= 0xc2 && ch <= 0xdf ? 2 : ch >= 0xe0 && ch <= 0xef ? 3
                   : ch >= 0xf0 && ch <= 0xf4 ? 4 : 0;
        size_t j = 1;
        while (k && j < k && i + j < n && (p[i + j] & 0xc0) == 0x80)
            j++;
        if (k && j == k) {
            i += k;
        } else {
            odd++;
            i++;
        }
    }
    return odd * 10 > n ? "binary file, not text" : NULL;
}

size_t carma_text_nul_line(const char *buf, size_t len)
{
    const char *nul = memchr(buf, '\0', len);
    if (!nul)
        return 0;
    size_t line = 1;
    for (const char *p = buf; (p = memchr(p, '\n', (size_t)(nul - p))); p++)
        line++;
    return line;
}

int carma_csv_col(const struct carma_csv *c, const char *name)
{
    for (size_t i = 0; i < c->nfields; i++)
        if (strcmp(c->field[i], name) == 0)
            return (int)i;
    return -1;
}

int carma_csv_header_unique(const struct carma_csv *c, struct carma_err *err)
{
    for (size_t i = 1; i < c->nfields; i++)
        for (size_t k = 0; k < i && c->field[i][0]; k++)
            if (strcmp(c->field[k], c->field[i]) == 0)
                return carma_err_at(err, c->file, c->line, "column '%s' given twice",
                                    carma_quote(c->field[i], 64).s);
    return 0;
}

int carma_csv_header(struct carma_csv *c, const char *const *names, size_t n, size_t nrequired,
                     int *col, const char *hint, struct carma_err *err)
{
    int rc = carma_csv_next(c, err);
    if (rc < 0)
        return rc;
    if (rc == 0)
        return carma_err_at(err, c->file, 0, "empty: no header line");
    if ((rc = carma_csv_header_unique(c, err)))
        return rc;
    for (size_t k = 0; k < n; k++) {
        col[k] = carma_csv_col(c, names[k]);
        if (col[k] < 0 && k < nrequired)
            return carma_err_at(err, c->file, c->line, "missing column '%s'%s%s", names[k],
                                hint ? " " : "", hint ? hint : "");
    }
    return 0;
}

int carma_parse_double(const char *s, double *out)
{
    if (!s || !*s)
        return -EINVAL;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    /* ERANGE on underflow leaves the nearest double (a subnormal or 0): in range. */
    if ((errno && !(errno == ERANGE && fabs(v) <= DBL_MIN)) || *end != '\0' || !isfinite(v) ||
        end == s)
        return -EINVAL;
    /* strtod accepts hex floats and leading spaces; reject them for strictness. */
    if (s[0] == ' ' || s[0] == '\t' || strchr(s, 'x') || strchr(s, 'X'))
        return -EINVAL;
    *out = v;
    return 0;
}

int carma_parse_u64(const char *s, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return -EINVAL;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end != '\0')
        return -EINVAL;
    *out = v;
    return 0;
}

int carma_parse_i64(const char *s, int64_t *out)
{
    if (!s || !*s || (*s != '-' && (*s < '0' || *s > '9')))
        return -EINVAL;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end != '\0')
        return -EINVAL;
    *out = v;
    return 0;
}

int carma_file_read(const char *path, size_t max, char **out, size_t *len, struct carma_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return carma_err_set(err, -errno, "%s: %s", path, strerror(errno));
    int rc = carma_stream_read(f, path, max, out, len, err);
    fclose(f);
    return rc;
}

int carma_stream_read(FILE *f, const char *path, size_t max, char **out, size_t *len,
                      struct carma_err *err)
{
    /* A regular file's size is known: refuse it unread. Pipes and special files are
     * bounded while reading. */
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && (uintmax_t)st.st_size > max)
        return carma_err_set(err, -EFBIG, "%s: %jd bytes, larger than %zu bytes", path,
                             (intmax_t)st.st_size, max);
    /* Up to max + 1 bytes are read: one past max says the input is larger. */
    size_t limit = max < SIZE_MAX ? max + 1 : max, cap = limit < 65536 ? limit : 65536, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf)
        return carma_err_set(err, -ENOMEM, "%s: out of memory", path);
    errno = 0; /* what a failed read leaves (EISDIR for a folder) names the problem */
    for (;;) {
        if (n == cap) {
            if (cap >= limit) {
                free(buf);
                return carma_err_set(err, -EFBIG, "%s: larger than %zu bytes", path, max);
            }
            cap = cap * 2 > limit ? limit : cap * 2;
            char *nb = realloc(buf, cap + 1);
            if (!nb) {
                free(buf);
                return carma_err_set(err, -ENOMEM, "%s: out of memory", path);
            }
            buf = nb;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
    }
    int bad = ferror(f) ? (errno ? errno : EIO) : 0;
    if (bad) {
        free(buf);
        return carma_err_set(err, -bad, "%s: %s", path, strerror(bad));
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

void carma_csv_put(FILE *o, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, o);
        return;
    }
    fputc('"', o);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', o);
        fputc(*s, o);
    }
    fputc('"', o);
}

int carma_csv_fields_check(const struct carma_csv *c, size_t ncols, struct carma_err *err)
{
    if (c->nfields == ncols)
        return 0;
    return carma_err_at(err, c->file, c->line, "%zu field%s, the header has %zu", c->nfields,
                        c->nfields == 1 ? "" : "s", ncols);
}
