#include "cli/client.h"

#include <assert.h>
#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include "proto/proto.h"
#include "util/err.h"
#include "util/utf8.h"
#include "util/csv.h"

void cli_conn_init(struct cli_conn *c)
{
    memset(c, 0, sizeof *c);
    carma_proto_client_socket(geteuid(), CARMA_SYSTEM_SOCKET, c->socket, sizeof c->socket);
}

int cli_common_opt(struct cli_conn *c, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    if (!strcmp(a, "--json")) {
        c->json = 1;
        return 1;
    }
    if (!strcmp(a, "--socket")) {
        if (*i + 1 >= argc)
            return -1;
        snprintf(c->socket, sizeof c->socket, "%s", argv[++*i]);
        return 1;
    }
    if (!strncmp(a, "--socket=", 9)) {
        snprintf(c->socket, sizeof c->socket, "%s", a + 9);
        return 1;
    }
    return 0;
}

int cli_is_help(const char *a)
{
    return !strcmp(a, "-h") || !strcmp(a, "--help");
}

void cli_bad_arg(const char *cmd, int argc, char **argv, int i, const char *const *valued)
{
    const char *a = argv[i];
    int needs = !strcmp(a, "--socket") && i + 1 >= argc; /* cli_common_opt's -1 */
    for (const char *const *v = valued; v && *v && !needs; v++)
        needs = !strcmp(a, *v) && i + 1 >= argc;
    if (needs)
        fprintf(stderr, "carma %s: %s needs a value\n", cmd, a);
    else if (a[0] == '-' && a[1])
        fprintf(stderr, "carma %s: unrecognized option '%s'\n", cmd, a);
    else
        fprintf(stderr, "carma %s: unexpected argument '%s'\n", cmd, a);
}

json_t *cli_req(const char *op)
{
    return json_pack("{s:i,s:s}", "v", CARMA_PROTO_VERSION, "op", op);
}

int cli_call(const struct cli_conn *c, const char *cmd, json_t *req, json_t **resp)
{
    return cli_call_patient(c, cmd, req, resp, 0);
}

int cli_call_patient(const struct cli_conn *c, const char *cmd, json_t *req, json_t **resp,
                     double patience_s)
{
    return cli_call_until(c, cmd, req, resp, patience_s, -1);
}

int cli_call_until(const struct cli_conn *c, const char *cmd, json_t *req, json_t **resp,
                   double patience_s, double deadline)
{
    struct carma_err err = {{0}};
    json_t *r = NULL;
    double t0 = carma_mono_s(), until = t0 + patience_s, nap = 0.1;
    /* "busy" (this user's connections at their cap, carmad out of descriptors, or a
     * carmad stopping with the submission unstored) is passing: asked again, with the
     * same backoff, for as long as an answer is waited, through a restart of carmad
     * after it: no socket, or none listening, is waited for until then too (the request
     * was not sent; after one carmad may have taken, a submission is not sent twice). */
    double busy_until = t0 + carma_client_timeout_ms() / 1e3;
    if (deadline >= 0) {
        until = until < deadline ? until : deadline;
        busy_until = busy_until < deadline ? busy_until : deadline;
    }
    int rc, said = 0, said_busy = 0;
    for (;;) {
        int ms = carma_client_timeout_ms();
        if (deadline >= 0) { /* what is left, and a moment for carmad to answer at all */
            double left = (deadline - carma_mono_s()) * 1e3;
            /* rounded up: a wait cut to the millisecond below ended just before the
             * deadline, and was told as an error of its own, not as the deadline */
            if (left < ms)
                ms = left > 100 ? (int)left + 1 : 100;
        }
        rc = carma_client_request_timeout(c->socket, req, &r, ms, &err);
        const char *code = rc ? NULL : json_string_value(json_object_get(r, "error"));
        if (code && !strcmp(code, "busy") && carma_mono_s() < busy_until) {
            if (!said_busy)
                fprintf(stderr, "carma %s: %s; trying again for up to %.0f s\n", cmd,
                        json_string_value(json_object_get(r, "message")), busy_until - t0);
            said_busy = 1;
            json_decref(r);
            r = NULL;
        } else if (rc && (carma_mono_s() < until ||
                          (said_busy && carma_mono_s() < busy_until &&
                           (rc == -ENOENT || rc == -ECONNREFUSED || rc == -EAGAIN)))) {
            if (!said)
                fprintf(stderr, "carma %s: %s; waiting up to %.0f s for carmad to come back\n", cmd,
                        err.msg, (said_busy && busy_until > until ? busy_until : until) - t0);
            said = 1;
        } else {
            break;
        }
        double sleep_s = nap; /* never past the deadline */
        if (deadline >= 0 && sleep_s > deadline - carma_mono_s())
            sleep_s = deadline > carma_mono_s() ? deadline - carma_mono_s() : 0;
        struct timespec ts = {0, (long)(sleep_s * 1e9)};
        nanosleep(&ts, NULL);
        if (nap < 0.5) /* 0.1, 0.2, 0.4, then 0.8 s between tries */
            nap *= 2;
    }
    json_decref(req);
    /* out of time while carmad was away, silent or not accepting (a stopped carmad's
     * full backlog: EAGAIN); an error waiting cannot mend (no socket, no permission) on
     * the first try is said as it is */
    if (rc && deadline >= 0 && carma_mono_s() >= deadline &&
        (said || (rc != -ENOENT && rc != -EACCES && rc != -EPERM && rc != -ENOTDIR)))
        return CLI_DEADLINE;
    if (rc) {
        fprintf(stderr, "carma %s: %s\n", cmd, err.msg);
        return 1;
    }
    if (said)
        fprintf(stderr, "carma %s: carmad is back\n", cmd);
    if (!json_is_true(json_object_get(r, "ok"))) {
        const char *code = json_string_value(json_object_get(r, "error"));
        const char *msg = json_string_value(json_object_get(r, "message"));
        if (c->json)
            cli_print_json(r);
        fprintf(stderr, "carma %s: %s\n", cmd, msg ? msg : "the daemon refused");
        int st = code && (!strcmp(code, "badrequest") || !strcmp(code, "notfound") ||
                          !strcmp(code, "invalid"))
                     ? 2
                     : 1;
        json_decref(r);
        return st;
    }
    *resp = r;
    return 0;
}

uint64_t cli_parse_id(const char *cmd, const char *s)
{
    uint64_t v;
    if (carma_parse_u64(s, &v) < 0 || v == 0 || v > INT64_MAX) {
        fprintf(stderr, "carma %s: '%s' is not a job id (a whole number from 1 to %lld)\n", cmd,
                carma_quote(s, 40).s, (long long)INT64_MAX);
        return 0;
    }
    return v;
}

/* The length of the decimal [0-9]+(.[0-9]+)? at the start of s (at most 40 bytes), its
 * value in *v; 0 when s does not start with one. */
static size_t scan_decimal(const char *s, double *v)
{
    size_t n = strspn(s, "0123456789");
    if (n == 0)
        return 0;
    if (s[n] == '.') {
        size_t f = strspn(s + n + 1, "0123456789");
        if (f == 0)
            return 0;
        n += 1 + f;
    }
    char buf[48];
    if (n >= sizeof buf - 7)
        return 0;
    memcpy(buf, s, n);
    buf[n] = '\0';
    *v = strtod(buf, NULL); /* digits only: finite, no hex, no exponent */
    return n;
}

int cli_parse_seconds(const char *cmd, const char *opt, const char *s, double max, double *out)
{
    double v;
    size_t n = scan_decimal(s, &v);
    if (n == 0 || s[n] || v > max) {
        fprintf(stderr, "carma %s: %s '%s': seconds expected, such as 30 or 2.5 (0 to %s)\n", cmd,
                opt, carma_quote(s, 40).s, carma_num(max).s);
        return -EINVAL;
    }
    *out = v;
    return 0;
}

int cli_parse_count(const char *cmd, const char *opt, const char *s, uint64_t max, uint64_t *out)
{
    uint64_t v;
    if (carma_parse_u64(s, &v) < 0 || v < 1 || v > max) {
        fprintf(stderr, "carma %s: %s must be an integer from 1 to %llu, not '%s'\n", cmd, opt,
                (unsigned long long)max, s);
        return -EINVAL;
    }
    *out = v;
    return 0;
}

int cli_parse_image_size(const char *s, uint32_t *h, uint32_t *w)
{
    uint64_t v[2];
    const char *x = strchr(s, 'x');
    char hs[16];
    size_t hl = x ? (size_t)(x - s) : strlen(s);
    if (hl == 0 || hl >= sizeof hs)
        return -1;
    memcpy(hs, s, hl);
    hs[hl] = 0;
    if (carma_parse_u64(hs, &v[0]) < 0 || (x && carma_parse_u64(x + 1, &v[1]) < 0))
        return -1;
    if (!x)
        v[1] = v[0];
    if (v[0] < 1 || v[1] < 1 || v[0] > 65536 || v[1] > 65536)
        return -1;
    *h = (uint32_t)v[0];
    *w = (uint32_t)v[1];
    return 0;
}

int cli_train_opt(const char *cmd, const char *opt, const char *val, struct est_opts *o)
{
    const char *accepted;
    if (est_opts_set(o, opt, val, &accepted) == 0)
        return 0;
    fprintf(stderr, "carma %s: unknown %s '%s' (%s)\n", cmd, opt, val, accepted);
    return -1;
}

int64_t cli_parse_mib(const char *s)
{
    double v;
    size_t n = scan_decimal(s, &v);
    if (n == 0)
        return -1;
    const char *end = s + n;
    double mul = 1;
    if (!*end || !strcasecmp(end, "M") || !strcasecmp(end, "MiB") || !strcasecmp(end, "MB"))
        mul = 1;
    else if (!strcasecmp(end, "G") || !strcasecmp(end, "GiB") || !strcasecmp(end, "GB"))
        mul = 1024;
    else if (!strcasecmp(end, "T") || !strcasecmp(end, "TiB") || !strcasecmp(end, "TB"))
        mul = 1024 * 1024;
    else
        return -1;
    double m = v * mul;
    if (!(m >= 1) || m > (double)(1ull << 30)) /* 0 would mean "not declared" */
        return -1;
    return (int64_t)ceil(m);
}

void cli_print_json(const json_t *v)
{
    char *s = json_dumps(v, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (s) {
        puts(s);
        free(s);
    }
}

void cli_fmt_time(const json_t *t, char *buf, size_t cap)
{
    /* A time localtime_r cannot take leaves tm unset, and strftime's output then may
     * not fit, which leaves buf unterminated: checked, not trusted (carmad's answer). */
    double v = json_is_number(t) ? json_number_value(t) : -1;
    time_t x = v >= 0 && v <= CARMA_PROTO_MAX_TIME ? (time_t)v : -1;
    struct tm tm;
    if (x < 0 || !localtime_r(&x, &tm) || !strftime(buf, cap, "%m-%d %H:%M:%S", &tm))
        snprintf(buf, cap, "-");
}

void cli_fmt_secs(double secs, char *buf, size_t cap)
{
    if (!(secs <= CARMA_PROTO_MAX_TIME)) { /* (long) of it would be undefined */
        snprintf(buf, cap, "-");
        return;
    }
    long s = secs > 0 ? (long)secs : 0;
    if (s >= 3600)
        snprintf(buf, cap, "%ldh%02ldm", s / 3600, (s / 60) % 60);
    else if (s >= 60)
        snprintf(buf, cap, "%ldm%02lds", s / 60, s % 60);
    else
        snprintf(buf, cap, "%lds", s);
}

void cli_fmt_dur(const json_t *start, const json_t *end, char *buf, size_t cap)
{
    if (!json_is_number(start)) {
        snprintf(buf, cap, "-");
        return;
    }
    double e;
    if (json_is_number(end)) {
        e = json_number_value(end);
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        e = (double)ts.tv_sec;
    }
    cli_fmt_secs(e - json_number_value(start), buf, cap);
}

int cli_state_final(const char *state)
{
    return state && strcmp(state, "queued") && strcmp(state, "running");
}

void cli_locale_ctype(void)
{
    setlocale(LC_CTYPE, "");
    if (strcmp(nl_langinfo(CODESET), "UTF-8"))
        setlocale(LC_CTYPE, "C.UTF-8");
}

unsigned cli_char_cols(const unsigned char *p, size_t l)
{
    if (l < 2)
        return 1;
    int w = wcwidth((wchar_t)carma_utf8_code_point(p, l));
    return w < 0 ? 1 : (unsigned)w;
}

void cli_cell(char *out, size_t cap, const char *s, unsigned width)
{
    size_t o = 0;
    unsigned cols = 0;
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;) {
        size_t l = carma_utf8_seq(p);
        /* a byte that is no character, or a character that is not to reach a terminal */
        int shown = l && !carma_proto_char_hidden(p, l);
        const char *src = shown ? (const char *)p : "?";
        size_t n = shown ? l : 1;
        unsigned w = shown ? cli_char_cols(p, l) : 1;
        if (cols + w > width || o + n + 1 > cap) /* a wide one that does not fit: stop */
            break;
        memcpy(out + o, src, n);
        o += n;
        p += l ? l : 1;
        cols += w;
    }
    while (cols++ < width && o + 2 <= cap)
        out[o++] = ' ';
    out[o] = '\0';
}

/* Writes the character at p (l bytes of well-formed UTF-8, 0: one byte that is none) as
 * an escape bash's $'...' reads back in any locale: \n, \t, \r, else \xNN per byte
 * (bash's \uXXXX reads back only under a UTF-8 locale). */
static void put_escape(FILE *f, const unsigned char *p, size_t l)
{
    if (l == 1 && (*p == '\n' || *p == '\t' || *p == '\r'))
        fputs(*p == '\n' ? "\\n" : *p == '\t' ? "\\t" : "\\r", f);
    else
        for (size_t k = 0; k < (l ? l : 1); k++)
            fprintf(f, "\\x%02X", p[k]);
}

void cli_put_visible(FILE *f, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;) {
        size_t l = carma_utf8_seq(p);
        if (!l || carma_proto_char_hidden(p, l))
            put_escape(f, p, l);
        else
            fwrite(p, 1, l, f);
        p += l ? l : 1;
    }
}

void cli_put_word(FILE *f, const char *s, int command_word)
{
    const unsigned char *u = (const unsigned char *)(s ? s : "");
    int quote = !*u || (command_word && (*u == '%' || strchr((const char *)u, '='))), dollar = 0;
    for (const unsigned char *p = u; *p;) {
        size_t l = carma_utf8_seq(p);
        if (!l || carma_proto_char_hidden(p, l))
            dollar = 1;
        else if (l == 1 && !strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                   "0123456789_@%+=:,./-",
                                   *p))
            quote = 1;
        p += l ? l : 1;
    }
    if (!quote && !dollar) {
        fputs((const char *)u, f);
        return;
    }
    fputs(dollar ? "$'" : "'", f);
    for (const unsigned char *p = u; *p;) {
        size_t l = carma_utf8_seq(p);
        if (dollar && (!l || carma_proto_char_hidden(p, l)))
            put_escape(f, p, l);
        else if (*p == '\'')
            fputs(dollar ? "\\'" : "'\\''", f);
        else if (dollar && *p == '\\')
            fputs("\\\\", f);
        else
            fwrite(p, 1, l, f);
        p += l ? l : 1;
    }
    fputc('\'', f);
}

/* Whether v has type t ("s", "i", "n", "b", "a", "o", "as", "ai", "ao"). */
static int has_type(const json_t *v, const char *t, size_t tl)
{
    if (tl == 1 && *t == 's')
        return json_is_string(v);
    if (tl == 1 && *t == 'i')
        return json_is_integer(v);
    if (tl == 1 && *t == 'n')
        return json_is_number(v);
    if (tl == 1 && *t == 'b')
        return json_is_boolean(v);
    if (tl == 1 && *t == 'o')
        return json_is_object(v);
    if (tl < 1 || *t != 'a' || tl > 2 || !json_is_array(v))
        return 0;
    size_t k;
    json_t *x;
    json_array_foreach(v, k, x) {
        if (tl == 2 && !has_type(x, t + 1, 1))
            return 0;
    }
    return 1;
}

int cli_shape(const json_t *o, const char *where, const char *spec, char *msg, size_t cap)
{
    static const char *const names[] = {"s",  "a string",
                                        "i",  "an integer",
                                        "n",  "a number",
                                        "b",  "true or false",
                                        "o",  "an object",
                                        "a",  "an array",
                                        "as", "an array of strings",
                                        "ai", "an array of integers",
                                        "ao", "an array of objects",
                                        NULL};
    if (!json_is_object(o)) {
        snprintf(msg, cap, "%s: not an object", where);
        return -1;
    }
    for (const char *p = spec; *p;) {
        size_t l = strcspn(p, " ");
        const char *colon = memchr(p, ':', l);
        assert(colon); /* a spec of this program */
        const char *t = colon + 1;
        size_t tl = (size_t)(p + l - t);
        int opt = tl && t[tl - 1] == '?';
        tl -= (size_t)opt;
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(colon - p), p);
        const json_t *v = json_object_get(o, name);
        if (!(opt && (!v || json_is_null(v))) && !has_type(v, t, tl)) {
            const char *what = "?";
            for (const char *const *n = names; *n; n += 2)
                if (strlen(*n) == tl && !strncmp(*n, t, tl))
                    what = n[1];
            snprintf(msg, cap, "%s.%s: %s %s%s", where, name, v ? "not" : "missing,", what,
                     v ? "" : " expected");
            return -1;
        }
        p += l;
        p += strspn(p, " ");
    }
    return 0;
}

/* A shape's problem, msg, said as carma CMD's: 1 (the exit status). */
static int say_malformed(const char *cmd, const char *msg)
{
    fprintf(stderr, "carma %s: malformed response from carmad: %s\n", cmd, msg);
    return 1;
}

int cli_check(const char *cmd, const json_t *o, const char *where, const char *spec)
{
    char msg[256];
    return cli_shape(o, where, spec, msg, sizeof msg) == 0 ? 0 : say_malformed(cmd, msg);
}

/* cli_shape of each element of o's array `key`, named "KEY[N]": 0, or -1 with msg. */
static int shape_each(const json_t *o, const char *key, const char *spec, char *msg, size_t cap)
{
    size_t k;
    json_t *x;
    json_array_foreach(json_object_get(o, key), k, x) {
        char where[64];
        snprintf(where, sizeof where, "%.32s[%zu]", key, k);
        if (cli_shape(x, where, spec, msg, cap))
            return -1;
    }
    return 0;
}

int cli_check_gpus(const char *cmd, const json_t *resp)
{
    char msg[256];
    return cli_shape_gpus(resp, msg, sizeof msg) == 0 ? 0 : say_malformed(cmd, msg);
}

int cli_shape_gpus(const json_t *resp, char *msg, size_t cap)
{
    return cli_shape(resp, "answer", "backend:s policy:s gpus:ao", msg, cap) ||
                   shape_each(resp, "gpus",
                              "index:i uuid:s name:s sharing:s mem_total_mib:i jobs:ai? "
                              "drain_reason:s?",
                              msg, cap)
               ? -1
               : 0;
}

int cli_check_each(const char *cmd, const json_t *o, const char *key, const char *spec)
{
    char msg[256];
    return shape_each(o, key, spec, msg, sizeof msg) == 0 ? 0 : say_malformed(cmd, msg);
}

int cli_check_usage(const char *cmd, const json_t *resp)
{
    return cli_check(cmd, resp, "answer", "users:ao total:o?") ||
           cli_check_each(cmd, resp, "users", "user:s");
}
