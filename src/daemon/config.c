#include "daemon/config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ini.h>

#include "core/gpu.h"
#include "util/csv.h"
#include "core/policy.h"
#include "daemon/http.h"
#include "gpu/backend.h"
#include "sim/gpukind.h"

void carmad_config_default(struct carmad_config *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->policy, sizeof c->policy, "auto");
    c->monitor_interval_s = 1.0;
    c->max_attempts = 3;
    c->kill_grace_s = 10.0;
    c->socket_mode = 0660;
    c->max_conns_per_user = 64;
    c->max_jobs_per_user = 1000;
    c->conn_idle_s = 60;
    c->conn_stall_s = 30;
    c->path_check_s = 5;
    snprintf(c->socket_group, sizeof c->socket_group, "carma");
    carma_sched_params_default(&c->sched);
    c->sched.mps_cap = 1; /* CUDA_MPS_PINNED_DEVICE_MEM_LIMIT on every MPS client */
    c->sharing_default = CARMA_SHARING_TIMESLICE;
    c->record_interval_s = 10;
    c->retention_days = 7;
    c->record_max_mib = 256;
    c->job_retention_days = 365;
    c->window = 30;
    c->learn_coloc = 1;
    c->fair_halflife_s = 7 * 86400.0;
}

#define SEEN_MAX (64 + CARMAD_SHARING_MAX)

struct load_ctx {
    struct carmad_config *c;
    FILE *f;
    unsigned line;     /* of the entry being handled: counted by read_line */
    unsigned too_long; /* the line that did not fit inih's buffer, 0 none */
    int max_line;      /* the bytes it holds */
    char msg[256];
    unsigned msg_line;   /* the line msg is about (inih goes on after an error and
                            reports the first error's line) */
    unsigned bad_header; /* the first "[section" line without its ']', 0 none */
    unsigned indented;   /* the last line read that begins with blanks before text */
    char last_key[112];  /* "section.key" of the entry before */
    char seen[SEEN_MAX][112]; /* "section.key" read so far: a key given twice is an error */
    unsigned nseen;
};

/* Numbers are decimal, without sign or blanks (strtod would take 0x10 as 16). */
static int parse_double(const char *v, double lo, double hi, double *out)
{
    double x;
    if (carma_parse_double(v, &x) || (v[0] != '.' && (v[0] < '0' || v[0] > '9')) ||
        !(x >= lo && x <= hi))
        return -1;
    *out = x;
    return 0;
}

static int parse_u64(const char *v, uint64_t hi, uint64_t *out)
{
    uint64_t x;
    if (carma_parse_u64(v, &x) || x > hi)
        return -1;
    *out = x;
    return 0;
}

static int parse_bool(const char *v, int *out)
{
    if (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "1") || !strcmp(v, "on"))
        *out = 1;
    else if (!strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "0") || !strcmp(v, "off"))
        *out = 0;
    else
        return -1;
    return 0;
}

#define BAD(...)                                                                              \
    do {                                                                                      \
        if (!x->msg_line) {                                                                   \
            snprintf(x->msg, sizeof x->msg, __VA_ARGS__);                                     \
            x->msg_line = x->line;                                                            \
        }                                                                                     \
        return 0;                                                                             \
    } while (0)

static int copy_str(char *dst, size_t cap, const char *v)
{
    size_t n = strlen(v);
    if (n >= cap)
        return -1;
    memcpy(dst, v, n + 1);
    return 0;
}

static int on_entry(void *user, const char *section, const char *name, const char *value)
{
    struct load_ctx *x = user;
    struct carmad_config *c = x->c;
    uint64_t u;
    double d;
    if (!section[0]) /* inih reads "[daemon" (no ']') as no section at all */
        BAD("'%.64s' is outside any section (or the section header above lacks its ']')",
            name);
    /* inih reads an indented line after a key as more of that key's value (a multi-line
     * value), whatever it holds: said so, not "given twice" about the key above */
    char key[112];
    snprintf(key, sizeof key, "%.40s.%.64s", section, name);
    if (x->indented == x->line && !strcmp(x->last_key, key))
        BAD("an indented line is read as more of '%.64s' above (a multi-line value); write "
            "each setting and section header at the start of its line",
            name);
    memcpy(x->last_key, key, sizeof key);
    for (unsigned i = 0; i < x->nseen; i++)
        if (!strcmp(x->seen[i], key))
            BAD("'%.64s' given twice in [%.40s]", name, section);
    if (x->nseen < SEEN_MAX)
        memcpy(x->seen[x->nseen++], key, sizeof key);
    if (!strcmp(section, "daemon")) {
        if (!strcmp(name, "policy")) {
            if (!carma_policy_find(value)) {
                char known[256];
                carma_policy_names(known, sizeof known);
                BAD("unknown policy '%.64s' (known: %.160s)", value, known);
            }
            copy_str(c->policy, sizeof c->policy, value);
        } else if (!strcmp(name, "gpus")) {
            if (copy_str(c->gpus, sizeof c->gpus, value))
                BAD("gpus: too long");
            if (strcmp(value, "nvml") != 0) {
                const struct sim_gpu_kind *k[CARMA_GPU_MAX];
                size_t n;
                struct carma_err e;
                if (strncmp(value, "sim:", 4) != 0)
                    BAD("gpus: 'nvml' or 'sim:SPEC' expected, got '%.64s'", value);
                if (sim_gpu_spec_parse(value + 4, k, NULL, CARMA_GPU_MAX, &n, &e))
                    BAD("gpus: %.200s", strncmp(e.msg, "--gpus: ", 8) ? e.msg : e.msg + 8);
            }
        } else if (!strcmp(name, "monitor_interval")) {
            if (parse_double(value, 0.01, 3600, &d))
                BAD("monitor_interval: a number of seconds in [0.01, 3600] expected");
            c->monitor_interval_s = d;
        } else if (!strcmp(name, "max_attempts")) {
            if (parse_u64(value, 100, &u) || u == 0)
                BAD("max_attempts: an integer in [1, 100] expected");
            c->max_attempts = (uint32_t)u;
        } else if (!strcmp(name, "kill_grace")) {
            if (parse_double(value, 0, 3600, &d))
                BAD("kill_grace: a number of seconds in [0, 3600] expected");
            c->kill_grace_s = d;
        } else if (!strcmp(name, "http")) {
            if (copy_str(c->http, sizeof c->http, value))
                BAD("http: too long");
            struct sockaddr_storage sa;
            socklen_t salen;
            struct carma_err e;
            if (value[0] && strcmp(value, "off") != 0 &&
                carma_http_parse_addr(value, &sa, &salen, &e))
                BAD("%.200s", e.msg);
        } else if (!strcmp(name, "allow_root_jobs")) {
            if (parse_bool(value, &c->allow_root_jobs))
                BAD("allow_root_jobs: true or false expected");
        } else if (!strcmp(name, "socket_group")) {
            if (copy_str(c->socket_group, sizeof c->socket_group, value))
                BAD("socket_group: too long");
            c->socket_group_line = x->line;
        } else if (!strcmp(name, "socket_mode")) {
            char *end;
            unsigned long m = strtoul(value, &end, 8);
            if (*end || end == value || value[0] < '0' || value[0] > '7' || m > 0777)
                BAD("socket_mode: an octal mode expected");
            c->socket_mode = (unsigned)m;
        } else if (!strcmp(name, "max_conns_per_user")) {
            if (parse_u64(value, 4096, &u) || u == 0)
                BAD("max_conns_per_user: an integer in [1, 4096] expected");
            c->max_conns_per_user = (uint32_t)u;
        } else if (!strcmp(name, "max_jobs_per_user")) {
            if (parse_u64(value, 1000000, &u) || u == 0)
                BAD("max_jobs_per_user: an integer in [1, 1000000] expected");
            c->max_jobs_per_user = (uint32_t)u;
        } else if (!strcmp(name, "conn_idle_timeout")) {
            if (parse_double(value, 0.1, 86400, &d))
                BAD("conn_idle_timeout: a number of seconds in [0.1, 86400] expected");
            c->conn_idle_s = d;
        } else if (!strcmp(name, "job_retention_days")) {
            if (parse_double(value, 0, 36500, &d))
                BAD("job_retention_days: a number of days in [0, 36500] expected (0: forever)");
            c->job_retention_days = d;
        } else if (!strcmp(name, "path_check_timeout")) {
            if (parse_double(value, 0.05, 3600, &d))
                BAD("path_check_timeout: a number of seconds in [0.05, 3600] expected");
            c->path_check_s = d;
        } else if (!strcmp(name, "conn_stall_timeout")) {
            if (parse_double(value, 0.1, 86400, &d))
                BAD("conn_stall_timeout: a number of seconds in [0.1, 86400] expected");
            c->conn_stall_s = d;
        } else {
            BAD("unknown key '%.64s' in [daemon]", name);
        }
    } else if (!strcmp(section, "sched")) {
        struct carma_sched_params *p = &c->sched;
        uint64_t *fields[] = {&p->margin_mib, &p->req_margin_mib, &p->free_margin_mib,
                              &p->or_min_free_mib};
        const char *names[] = {"margin_mib", "req_margin_mib", "free_margin_mib",
                               "or_min_free_mib"};
        for (size_t i = 0; i < 4; i++)
            if (!strcmp(name, names[i])) {
                if (parse_u64(value, UINT64_C(1) << 30, &u))
                    BAD("%s: an integer of MiB expected", name);
                *fields[i] = u;
                return 1;
            }
        if (!strcmp(name, "grace")) {
            if (parse_double(value, 0, 3600, &d))
                BAD("grace: a number of seconds in [0, 3600] expected");
            p->grace_s = d;
        } else if (!strcmp(name, "backfill_depth")) {
            if (parse_u64(value, 1u << 20, &u))
                BAD("backfill_depth: an integer expected");
            p->backfill_depth = (uint32_t)u;
        } else if (!strcmp(name, "max_jobs_per_gpu")) {
            if (parse_u64(value, 48, &u) || u == 0)
                BAD("max_jobs_per_gpu: an integer in [1, 48] expected");
            p->max_jobs_per_gpu = (uint32_t)u;
        } else if (!strcmp(name, "learn_coloc")) {
            if (parse_bool(value, &c->learn_coloc))
                BAD("learn_coloc: true or false expected");
        } else if (!strcmp(name, "order")) {
            if (!strcmp(value, "fifo"))
                c->order_fair = 0;
            else if (!strcmp(value, "fair"))
                c->order_fair = 1;
            else
                BAD("order: fifo or fair expected");
        } else if (!strcmp(name, "fair_halflife")) {
            if (parse_double(value, 60, 3650 * 86400.0, &d))
                BAD("fair_halflife: a number of seconds in [60, 315360000] expected");
            c->fair_halflife_s = d;
        } else {
            BAD("unknown key '%.64s' in [sched]", name);
        }
    } else if (!strcmp(section, "monitor")) {
        if (!strcmp(name, "record_interval")) {
            if (parse_double(value, 0, 86400, &d))
                BAD("record_interval: a number of seconds in [0, 86400] expected");
            c->record_interval_s = d;
        } else if (!strcmp(name, "retention_days")) {
            if (parse_double(value, 0.001, 3650, &d))
                BAD("retention_days: a number of days in [0.001, 3650] expected");
            c->retention_days = d;
        } else if (!strcmp(name, "record_max_mib")) {
            if (parse_u64(value, 1u << 20, &u) || u == 0)
                BAD("record_max_mib: an integer of MiB in [1, 1048576] expected");
            c->record_max_mib = u;
        } else if (!strcmp(name, "window")) {
            if (parse_u64(value, 120, &u) || u == 0)
                BAD("window: an integer of samples in [1, 120] expected");
            c->window = (uint32_t)u;
        } else {
            BAD("unknown key '%.64s' in [monitor]", name);
        }
    } else if (!strcmp(section, "sharing")) {
        int m = carma_sharing_parse(value);
        if (m < 0)
            BAD("sharing '%.64s': timeslice or mps expected", value);
        if (!strcmp(name, "default")) {
            c->sharing_default = (uint8_t)m;
        } else {
            if (c->nsharing >= CARMAD_SHARING_MAX)
                BAD("too many [sharing] entries");
            if (copy_str(c->sharing[c->nsharing].gpu, sizeof c->sharing[0].gpu, name))
                BAD("GPU name too long");
            c->sharing[c->nsharing].line = x->line;
            c->sharing[c->nsharing++].mode = (uint8_t)m;
        }
    } else {
        BAD("unknown section [%.64s]", section);
    }
    return 1;
}

/* inih's reader: one whole line at a time, counted for entries that are checked after the
 * file was read ([sharing] against the GPUs found). inih would read a line longer than
 * its buffer in pieces, each taken as a line of its own: the tail of a long comment
 * became a setting. Such a line ends the reading, and carmad_config_load refuses it. */
static char *read_line(char *str, int num, void *stream)
{
    struct load_ctx *x = stream;
    char *r = fgets(str, num, x->f);
    if (!r)
        return NULL;
    if (!strchr(r, '\n') && !feof(x->f)) {
        int ch = getc(x->f); /* a line of exactly num - 1 bytes still has its '\n' to come */
        if (ch != '\n' && ch != EOF) {
            x->too_long = x->line + 1;
            x->max_line = num - 1;
            return NULL;
        }
    }
    x->line++;
    const char *p = r;
    if (x->line == 1 && memcmp(p, "\xef\xbb\xbf", 3) == 0) /* inih skips a UTF-8 BOM */
        p += 3;
    const char *text = p + strspn(p, " \t\f\v"); /* inih's isspace, but line ends */
    if (text > p && !strchr(";#\r\n", *text))
        x->indented = x->line;
    p = text;
    if (*p == '[' && !x->bad_header) {
        size_t body = strcspn(p, ";#"); /* a ']' in a comment closes nothing */
        const char *close = memchr(p, ']', body);
        if (!close)
            x->bad_header = x->line;
    }
    return r;
}

int carmad_config_load(struct carmad_config *c, const char *path, struct carma_err *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return carma_err_at(err, path, 0, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return carma_err_at(err, path, 0, "not a regular file");
    }
    c->file_uid = (uint32_t)st.st_uid;
    c->file_mode = (uint32_t)(st.st_mode & 07777);
    struct load_ctx *x = calloc(1, sizeof *x);
    if (!x) {
        fclose(f);
        return carma_err_set(err, -ENOMEM, "%s: out of memory", path);
    }
    x->c = c;
    x->f = f;
    x->line = 0;
    int line = ini_parse_stream(read_line, x, on_entry, x);
    int rerr = ferror(f);
    fclose(f);
    int rc = 0;
    if (line > 0 && (unsigned)line == x->bad_header)
        rc = carma_err_at(err, path, (size_t)line, "section header without its ']'");
    else if (line > 0)
        rc = carma_err_at(err, path, (size_t)line, "%s",
                          x->msg_line == (unsigned)line ? x->msg : "syntax error");
    else if (x->too_long)
        rc = carma_err_at(err, path, x->too_long, "line longer than %d bytes", x->max_line);
    else if (line < 0 || rerr)
        rc = carma_err_at(err, path, 0, "cannot read");
    free(x);
    return rc;
}

uint8_t carmad_config_sharing(struct carmad_config *c, unsigned index, const char *uuid)
{
    char idx[16];
    snprintf(idx, sizeof idx, "%u", index);
    int found = -1;
    for (unsigned i = 0; i < c->nsharing; i++)
        if (!strcmp(c->sharing[i].gpu, uuid) || !strcmp(c->sharing[i].gpu, idx)) {
            c->sharing[i].named = 1;
            if (found < 0)
                found = (int)i;
        }
    return found >= 0 ? c->sharing[found].mode : c->sharing_default;
}

const char *carmad_config_sharing_unnamed(const struct carmad_config *c, unsigned *line)
{
    for (unsigned i = 0; i < c->nsharing; i++)
        if (!c->sharing[i].named) {
            *line = c->sharing[i].line;
            return c->sharing[i].gpu;
        }
    return NULL;
}
