/* Trace loading common to every format: names, detection, dispatch, the builder that
 * checks each job as it is appended, and freeing. */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim/profile.h"
#include "sim/trace_fmt.h"
#include "util/csv.h"

#define SIM_MAX_WORKLOADS 65535u

static const char *const format_names[] = {
    [SIM_TRACE_AUTO] = "auto",       [SIM_TRACE_CARMA_CSV] = "carma-csv",
    [SIM_TRACE_CARMA_SH] = "carma-sh", [SIM_TRACE_MURI] = "muri",
    [SIM_TRACE_GAVEL] = "gavel",     [SIM_TRACE_ALIBABA] = "alibaba",
};

int sim_trace_format_parse(const char *name)
{
    if (!name)
        return -1;
    for (size_t i = 0; i < sizeof format_names / sizeof format_names[0]; i++)
        if (strcmp(name, format_names[i]) == 0)
            return (int)i;
    return -1;
}

const char *sim_trace_format_name(enum sim_trace_format f)
{
    if ((size_t)f >= sizeof format_names / sizeof format_names[0])
        return NULL;
    return format_names[f];
}

static int has_suffix(const char *s, const char *suf)
{
    size_t n = strlen(s), k = strlen(suf);
    return n >= k && strcmp(s + n - k, suf) == 0;
}

static int starts_with(const char *buf, size_t len, const char *pre)
{
    size_t k = strlen(pre);
    return len >= k && memcmp(buf, pre, k) == 0;
}

/* Whether the record c (a header) names every column of names[]. */
static int header_has(const struct carma_csv *c, const char *const *names, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (carma_csv_col(c, names[k]) < 0)
            return 0;
    return 1;
}

/* The CSV format whose header the text starts with, by the documented first columns
 * or by the set of names in any order; SIM_TRACE_AUTO when none, -1 when the header
 * fits more than one. */
static int detect_csv(const char *buf, size_t len)
{
    static const char *const carma[] = {"submit_s", "workload"};
    static const char *const muri[] = {"job_id",     "num_gpu",    "submit_time",
                                       "model_name", "batch_size", "duration"};
    /* Every Alibaba pod list has these; the time columns are checked by the loader,
     * which names a list without them (the multigpu* lists). */
    static const char *const alibaba[] = {"name", "num_gpu", "gpu_milli"};
    unsigned fits = 0;
    if (starts_with(buf, len, "submit_s,"))
        fits |= 1u << SIM_TRACE_CARMA_CSV;
    if (starts_with(buf, len, "job_id,num_gpu,submit_time,"))
        fits |= 1u << SIM_TRACE_MURI;
    if (starts_with(buf, len, "name,cpu_milli,memory_mib,num_gpu,gpu_milli"))
        fits |= 1u << SIM_TRACE_ALIBABA;
    const char *nl = memchr(buf, '\n', len);
    if (memchr(buf, ',', nl ? (size_t)(nl - buf) : len)) {
        struct carma_csv *c = malloc(sizeof *c);
        if (c) {
            carma_csv_init(c, buf, len, "", ',');
            if (carma_csv_next(c, NULL) == 1) {
                if (header_has(c, carma, sizeof carma / sizeof carma[0]))
                    fits |= 1u << SIM_TRACE_CARMA_CSV;
                if (header_has(c, muri, sizeof muri / sizeof muri[0]))
                    fits |= 1u << SIM_TRACE_MURI;
                if (header_has(c, alibaba, sizeof alibaba / sizeof alibaba[0]))
                    fits |= 1u << SIM_TRACE_ALIBABA;
            }
            free(c);
        }
    }
    if (!fits)
        return SIM_TRACE_AUTO;
    if (fits & (fits - 1))
        return -1;
    return __builtin_ctz(fits);
}

enum sim_trace_format sim_trace_detect(const char *path, const char *buf, size_t len)
{
    /* A UTF-8 byte order mark is not part of the header. */
    if (buf && starts_with(buf, len, CARMA_BOM)) {
        buf += 3;
        len -= 3;
    }
    if (buf && len) {
        int csv = detect_csv(buf, len);
        if (csv < 0)
            return SIM_TRACE_AUTO; /* a header of two formats: the caller must say */
        if (csv != SIM_TRACE_AUTO)
            return (enum sim_trace_format)csv;
        if (starts_with(buf, len, "sleep ") || starts_with(buf, len, "python ") ||
            starts_with(buf, len, "python3 ") || starts_with(buf, len, "#!"))
            return SIM_TRACE_CARMA_SH;
        /* Gavel: no header; 7, 9 or 10 tab-separated fields on the first line (or the
         * older 6, which the loader names and refuses). */
        size_t tabs = 0, i = 0;
        while (i < len && buf[i] != '\n')
            tabs += buf[i++] == '\t';
        if (tabs == 5 || tabs == 6 || tabs == 8 || tabs == 9)
            return SIM_TRACE_GAVEL;
    }
    if (path) {
        if (has_suffix(path, ".trace"))
            return SIM_TRACE_GAVEL;
        if (has_suffix(path, ".sh"))
            return SIM_TRACE_CARMA_SH;
    }
    return SIM_TRACE_AUTO;
}

int sim_name_copy(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n == 0 || n >= cap)
        return -EINVAL;
    memcpy(dst, src, n + 1);
    return 0;
}

void sim_job_profile_rule(struct sim_job_spec *j)
{
    j->smact = sim_profile_smact(j->mem_mib, SIM_PROFILE_CARMA_FLOOR_MIB);
    j->smocc = sim_profile_smocc(j->smact);
    j->drama = sim_profile_drama(j->smact);
    j->ramp_s = SIM_PROFILE_RAMP_S;
}

/* ---- builder ---- */

void sim_build_init(struct sim_build *b, const char *file)
{
    memset(b, 0, sizeof *b);
    b->file = file;
}

void sim_build_discard(struct sim_build *b)
{
    free(b->t.jobs);
    free(b->t.workloads);
    free(b->t.names);
    free(b->index);
    memset(b, 0, sizeof *b);
}

void sim_build_finish(struct sim_build *b, struct sim_trace *out)
{
    free(b->index);
    *out = b->t;
    memset(b, 0, sizeof *b);
}

int sim_build_name(struct sim_build *b, const char *name, uint32_t *ref, struct carma_err *err)
{
    size_t n = strnlen(name, SIM_NAME_MAX - 1);
    /* A trace is at most SIM_TRACE_MAX_BYTES, so its names are too. */
    if (b->t.names_len + n + 1 > (size_t)SIM_TRACE_MAX_BYTES + SIM_NAME_MAX)
        return carma_err_at(err, b->file, 0, "names: more than %u bytes", SIM_TRACE_MAX_BYTES);
    if (b->t.names_len + n + 1 > b->names_cap) {
        size_t cap = b->names_cap ? b->names_cap * 2 : 4096;
        while (cap < b->t.names_len + n + 1)
            cap *= 2;
        char *nn = realloc(b->t.names, cap);
        if (!nn)
            return carma_err_set(err, -ENOMEM, "%s: out of memory", b->file);
        b->t.names = nn;
        b->names_cap = cap;
    }
    memcpy(b->t.names + b->t.names_len, name, n);
    b->t.names[b->t.names_len + n] = '\0';
    *ref = (uint32_t)b->t.names_len + 1;
    b->t.names_len += n + 1;
    return 0;
}

const char *sim_trace_job_name(const struct sim_trace *t, size_t i)
{
    const struct sim_job_spec *sp = &t->jobs[i];
    if (sp->name && t->names && sp->name <= t->names_len)
        return t->names + sp->name - 1;
    return sp->workload < t->nworkloads ? t->workloads[sp->workload].name : "?";
}

static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Name indexes (the workloads of a build, the unknown names of a trace): open
 * addressing over a power-of-two table of entry + 1 (0: empty), kept above twice the
 * entries; name_of(v, k) is entry k's name. */

/* Entry k's name in ix (cap slots; it is not there yet). */
static void name_index_put(uint32_t *ix, size_t cap, const char *name, size_t k)
{
    size_t mask = cap - 1, i = name_hash(name) & mask;
    while (ix[i])
        i = (i + 1) & mask;
    ix[i] = (uint32_t)k + 1;
}

/* The entry named name, or -1. */
static long name_index_find(const uint32_t *ix, size_t cap, const char *name,
                            const char *(*name_of)(const void *, size_t), const void *v)
{
    if (!cap)
        return -1;
    size_t mask = cap - 1;
    for (size_t i = name_hash(name) & mask; ix[i]; i = (i + 1) & mask)
        if (strcmp(name_of(v, ix[i] - 1), name) == 0)
            return (long)ix[i] - 1;
    return -1;
}

/* Room for one more entry after the n indexed: doubles the table and indexes the n
 * again when it would be half full. 0, or -ENOMEM with the index as it was. */
static int name_index_reserve(uint32_t **ix, size_t *cap, size_t n,
                              const char *(*name_of)(const void *, size_t), const void *v)
{
    if (2 * (n + 1) < *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 64;
    uint32_t *nx = calloc(nc, sizeof *nx);
    if (!nx)
        return -ENOMEM;
    for (size_t k = 0; k < n; k++)
        name_index_put(nx, nc, name_of(v, k), k);
    free(*ix);
    *ix = nx;
    *cap = nc;
    return 0;
}

static const char *workload_name(const void *v, size_t k)
{
    return ((const struct sim_workload *)v)[k].name;
}

long sim_build_find(const struct sim_build *b, const char *name)
{
    return name_index_find(b->index, b->index_cap, name, workload_name, b->t.workloads);
}

int sim_build_workload(struct sim_build *b, const struct sim_workload *w, uint16_t *idx,
                       size_t line, struct carma_err *err)
{
    long at = sim_build_find(b, w->name);
    if (at >= 0) {
        *idx = (uint16_t)at;
        return 0;
    }
    if (b->t.nworkloads >= SIM_MAX_WORKLOADS)
        return carma_err_at(err, b->file, line, "more than %u distinct workloads",
                            SIM_MAX_WORKLOADS);
    if (b->t.nworkloads == b->wl_cap) {
        size_t cap = b->wl_cap ? b->wl_cap * 2 : 16;
        struct sim_workload *nw = realloc(b->t.workloads, cap * sizeof *nw);
        if (!nw)
            return carma_err_set(err, -ENOMEM, "%s: out of memory", b->file);
        b->t.workloads = nw;
        b->wl_cap = cap;
    }
    if (name_index_reserve(&b->index, &b->index_cap, b->t.nworkloads, workload_name,
                           b->t.workloads))
        return carma_err_set(err, -ENOMEM, "%s: out of memory", b->file);
    b->t.workloads[b->t.nworkloads] = *w;
    name_index_put(b->index, b->index_cap, w->name, b->t.nworkloads++);
    *idx = (uint16_t)(b->t.nworkloads - 1);
    return 0;
}

static int ratio_ok(float r)
{
    return r >= 0.0f && r <= 1.0f;
}

int sim_build_job(struct sim_build *b, const struct sim_job_spec *j, size_t line,
                  struct carma_err *err)
{
    if (!(j->submit_s >= 0) || j->submit_s > SIM_TIME_MAX_S)
        return carma_err_at(err, b->file, line, "arrival time %s s: negative or above %s s",
                            carma_num(j->submit_s).s, carma_num(SIM_TIME_MAX_S).s);
    if (b->t.njobs && j->submit_s < b->t.jobs[b->t.njobs - 1].submit_s)
        return carma_err_at(err, b->file, line,
                            "out of order: arrives at %s s, before the previous job (%s s); "
                            "traces must be in arrival order",
                            carma_num(j->submit_s).s,
                            carma_num(b->t.jobs[b->t.njobs - 1].submit_s).s);
    if (!(j->duration_s > 0) || j->duration_s > SIM_TIME_MAX_S)
        return carma_err_at(err, b->file, line, "run time %s s: not positive or above %s s",
                            carma_num(j->duration_s).s, carma_num(SIM_TIME_MAX_S).s);
    if (j->gpus < 1 || j->gpus > SIM_JOB_MAX_GPUS)
        return carma_err_at(err, b->file, line, "%u GPUs: must be 1 to %d", (unsigned)j->gpus,
                            SIM_JOB_MAX_GPUS);
    if (!(j->mem_mib > 0) || j->mem_mib > SIM_MEM_MAX_MIB)
        return carma_err_at(err, b->file, line, "peak memory %s MiB: not positive or above %s MiB",
                            carma_num(j->mem_mib).s, carma_num(SIM_MEM_MAX_MIB).s);
    for (int e = 0; e < SIM_EST_COUNT; e++)
        if (!(j->est_mib[e] >= 0) || j->est_mib[e] > SIM_MEM_MAX_MIB)
            return carma_err_at(err, b->file, line, "estimate %s MiB: negative or above %s MiB",
                                carma_num(j->est_mib[e]).s, carma_num(SIM_MEM_MAX_MIB).s);
    if (!ratio_ok(j->smact) || !ratio_ok(j->smocc) || !ratio_ok(j->drama))
        return carma_err_at(err, b->file, line, "activity ratios must lie in [0, 1]");
    if (!(j->ramp_s >= 0) || j->ramp_s > SIM_RAMP_MAX_S)
        return carma_err_at(err, b->file, line, "ramp %s s: negative or above %s s",
                            carma_num(j->ramp_s).s, carma_num(SIM_RAMP_MAX_S).s);
    assert(j->workload < b->t.nworkloads);
    if (b->t.njobs >= SIM_TRACE_MAX_JOBS)
        return carma_err_at(err, b->file, line, "more than %u jobs", SIM_TRACE_MAX_JOBS);
    if (b->t.njobs == b->jobs_cap) {
        size_t cap = b->jobs_cap ? b->jobs_cap * 2 : 256;
        if (cap > SIM_TRACE_MAX_JOBS)
            cap = SIM_TRACE_MAX_JOBS;
        struct sim_job_spec *nj = realloc(b->t.jobs, cap * sizeof *nj);
        if (!nj)
            return carma_err_set(err, -ENOMEM, "%s: out of memory", b->file);
        b->t.jobs = nj;
        b->jobs_cap = cap;
    }
    b->t.jobs[b->t.njobs] = *j;
    b->t.jobs[b->t.njobs++].line = line <= UINT32_MAX ? (uint32_t)line : 0;
    return 0;
}

int sim_build_job_own(struct sim_build *b, struct sim_workload *w, struct sim_job_spec *j,
                      size_t line, struct carma_err *err)
{
    w->mem_mib = j->mem_mib;
    w->smact = j->smact;
    w->smocc = j->smocc;
    w->drama = j->drama;
    w->ramp_s = j->ramp_s;
    int rc = sim_build_workload(b, w, &j->workload, line, err);
    return rc ? rc : sim_build_job(b, j, line, err);
}

/* ---- names without a profile ---- */

static const char *unknown_name(const void *v, size_t k)
{
    return ((const struct sim_unknown *)v)[k].name;
}

int sim_unknown_add(struct sim_unknowns *u, const char *name, size_t line, const char *file,
                    struct carma_err *err)
{
    if (u->jobs >= SIM_TRACE_MAX_JOBS)
        return carma_err_at(err, file, line, "more than %u jobs", SIM_TRACE_MAX_JOBS);
    long at = name_index_find(u->index, u->index_cap, name, unknown_name, u->v);
    if (at >= 0) {
        u->v[at].jobs++;
        u->jobs++;
        return 0;
    }
    if (u->n == u->cap) {
        size_t cap = u->cap ? u->cap * 2 : 16;
        struct sim_unknown *nv = realloc(u->v, cap * sizeof *nv);
        if (!nv)
            return carma_err_set(err, -ENOMEM, "%s: out of memory", file);
        u->v = nv;
        u->cap = cap;
    }
    if (name_index_reserve(&u->index, &u->index_cap, u->n, unknown_name, u->v))
        return carma_err_set(err, -ENOMEM, "%s: out of memory", file);
    char *copy = strdup(name);
    if (!copy)
        return carma_err_set(err, -ENOMEM, "%s: out of memory", file);
    u->v[u->n] = (struct sim_unknown){copy, line, 1};
    name_index_put(u->index, u->index_cap, copy, u->n++);
    u->jobs++;
    return 0;
}

int sim_unknown_error(const struct sim_unknowns *u, const char *file, const char *what,
                      struct carma_err *err)
{
    assert(u->n > 0);
    size_t first = u->v[0].line;
    int pre = snprintf(NULL, 0, "%s:%zu: ", file, first);
    char body[4096];
    size_t k = u->n < SIM_UNKNOWN_LIST ? u->n : SIM_UNKNOWN_LIST;
    /* Fewer names when the whole would not fit a message: the advice must. */
    for (;; k--) {
        size_t o = 0, listed = 0;
#define ADD(...) (o += (size_t)snprintf(body + o, o < sizeof body ? sizeof body - o : 0, __VA_ARGS__))
        ADD("%zu unknown %s%s: ", u->n, what, u->n == 1 ? "" : "s");
        for (size_t i = 0; i < k; i++) {
            const struct sim_unknown *e = &u->v[i];
            ADD("%s'%s' (line %zu, %zu job%s)", i ? ", " : "", carma_quote(e->name, 64).s,
                e->line, e->jobs, e->jobs == 1 ? "" : "s");
            listed += e->jobs;
        }
        if (k < u->n)
            ADD(" and %zu more (%zu job%s)", u->n - k, u->jobs - listed,
                u->jobs - listed == 1 ? "" : "s");
        ADD(". carma's model table is built in (tools/gen_profiles.c writes it into "
            "src/sim/trace_models.c): rename %s in the trace to names it has (docs/traces.md "
            "lists them), or add profiles there and rebuild carma",
            u->n == 1 ? "it" : "them");
#undef ADD
        if (k == 1 || (pre > 0 && (size_t)pre + o < CARMA_ERR_MAX))
            break;
    }
    return carma_err_at(err, file, first, "%s", body);
}

void sim_unknown_free(struct sim_unknowns *u)
{
    for (size_t i = 0; i < u->n; i++)
        free(u->v[i].name);
    free(u->v);
    free(u->index);
    memset(u, 0, sizeof *u);
}

/* ---- dispatch ---- */

int sim_trace_parse(const char *file, const char *buf, size_t len, enum sim_trace_format fmt,
                    const struct sim_trace_opts *opts, struct sim_trace *out,
                    struct carma_err *err)
{
    static const struct sim_trace_opts none;
    if (!opts)
        opts = &none;
    if (!file)
        file = "trace";
    if (len > SIM_TRACE_MAX_BYTES)
        return carma_err_at(err, file, 0, "larger than %u bytes", SIM_TRACE_MAX_BYTES);
    /* One UTF-8 byte order mark is skipped here, once for detection and parsers. */
    if (starts_with(buf, len, CARMA_BOM)) {
        buf += 3;
        len -= 3;
        if (starts_with(buf, len, CARMA_BOM))
            return carma_err_at(err, file, 1, "%s", CARMA_BOM2_MSG);
    }
    if (len == 0)
        return carma_err_at(err, file, 0, "empty file: no jobs");
    /* Before detection: a compressed or binary file is named as such, and a NUL
     * anywhere, even first, makes the file not a text trace. */
    const char *why = carma_text_not_text(buf, len);
    if (why)
        return carma_err_at(err, file, 0, "%s", why);
    size_t nul = carma_text_nul_line(buf, len);
    if (nul)
        return carma_err_at(err, file, nul, "NUL byte in text");
    if (carma_text_cr_only(buf, len))
        return carma_err_at(err, file, 1, "%s", CARMA_CR_ONLY_MSG);
    if (fmt == SIM_TRACE_AUTO)
        fmt = sim_trace_detect(file, buf, len);
    struct sim_trace t = {0};
    int rc;
    switch (fmt) {
    case SIM_TRACE_CARMA_CSV:
        rc = sim_parse_carma_csv(file, buf, len, opts, &t, err);
        break;
    case SIM_TRACE_CARMA_SH:
        rc = sim_parse_carma_sh(file, buf, len, opts, &t, err);
        break;
    case SIM_TRACE_MURI:
        rc = sim_parse_muri(file, buf, len, opts, &t, err);
        break;
    case SIM_TRACE_GAVEL:
        rc = sim_parse_gavel(file, buf, len, opts, &t, err);
        break;
    case SIM_TRACE_ALIBABA:
        rc = sim_parse_alibaba(file, buf, len, opts, &t, err);
        break;
    default:
        return carma_err_at(err, file, 0,
                            "cannot tell the trace format from the name or the first line; "
                            "give --trace-format (carma-csv, carma-sh, muri, gavel, alibaba)");
    }
    if (rc)
        return rc;
    *out = t;
    return 0;
}

int sim_trace_load_opts(const char *path, enum sim_trace_format fmt,
                        const struct sim_trace_opts *opts, struct sim_trace *out,
                        struct carma_err *err)
{
    char *buf;
    size_t len;
    int rc = carma_file_read(path, SIM_TRACE_MAX_BYTES, &buf, &len, err);
    if (rc)
        return rc;
    rc = sim_trace_parse(path, buf, len, fmt, opts, out, err);
    free(buf);
    return rc;
}

int sim_trace_load(const char *path, enum sim_trace_format fmt, const struct sim_workload *catalog,
                   size_t ncatalog, const char *aux_dir, struct sim_trace *out,
                   struct carma_err *err)
{
    struct sim_trace_opts o = {.catalog = catalog, .ncatalog = ncatalog, .aux_dir = aux_dir};
    return sim_trace_load_opts(path, fmt, &o, out, err);
}

void sim_trace_free(struct sim_trace *t)
{
    if (!t)
        return;
    free(t->jobs);
    free(t->workloads);
    free(t->names);
    memset(t, 0, sizeof *t);
}

int sim_next_line(const char *buf, size_t len, size_t *off, size_t *n, char *line, size_t cap,
                  const char *file, struct carma_err *err)
{
    if (*off >= len)
        return 0;
    const char *nl = memchr(buf + *off, '\n', len - *off);
    size_t l = nl ? (size_t)(nl - (buf + *off)) : len - *off;
    (*n)++;
    if (l >= cap)
        return carma_err_at(err, file, *n, "line longer than %zu bytes", cap - 1);
    memcpy(line, buf + *off, l);
    *off += l + 1;
    if (l && line[l - 1] == '\r')
        l--;
    /* Any other CR is a bare one (docs/traces.md), refused as the CSV reader does. */
    if (memchr(line, '\r', l))
        return carma_err_at(err, file, *n, "%s",
                            carma_text_cr_only(buf, len) ? CARMA_CR_ONLY_MSG : CARMA_CR_BARE_MSG);
    line[l] = '\0';
    return 1;
}

/* Box-Muller normal draws from a xorshift generator; the run is repeatable per seed. */
static double rng_unit(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return ((double)(*s >> 11) + 0.5) / 9007199254740992.0;
}

/* The generator's first state for `seed`: never 0, xorshift's fixed point, which would
 * draw the same z (about 8.57) for every job and so scale the trace instead of jittering
 * it. The affine map is kept for every other seed (the documented jittered figures were
 * measured with it); its one seed below 2^63 that gives 0 (1018231460777725123) gets a
 * dense state whose own seed is above 2^63 - 1, so no seed --seed accepts shares it. */
static uint64_t jitter_state(uint64_t seed)
{
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    return s ? s : 0xd1b54a32d192ed03ull;
}

/* Job i's factor exp(frac * z), drawing z from *s. */
static double jitter_factor(uint64_t *s, double frac)
{
    double u1 = rng_unit(s), u2 = rng_unit(s);
    double z = sqrt(-2.0 * log(u1)) * cos(2 * M_PI * u2);
    return exp(frac * z);
}

int sim_trace_jitter(struct sim_trace *t, double frac, uint64_t seed, const char *file,
                     struct carma_err *err)
{
    /* Every jittered run time is checked before any is changed: the trace is whole or
     * untouched. */
    uint64_t s = jitter_state(seed);
    for (size_t i = 0; i < t->njobs; i++) {
        const struct sim_job_spec *j = &t->jobs[i];
        double f = jitter_factor(&s, frac), d = j->duration_s * f;
        if (d > 0 && d <= SIM_TIME_MAX_S)
            continue;
        char what[256];
        snprintf(what, sizeof what,
                 "run time %s s times %s (the jitter) is %s s: not positive or above %s s",
                 carma_num(j->duration_s).s, carma_num(f).s, carma_num(d).s,
                 carma_num(SIM_TIME_MAX_S).s);
        struct carma_quoted name = carma_quote(sim_trace_job_name(t, i), SIM_NAME_MAX);
        if (file && j->line)
            return carma_err_at(err, file, j->line, "job %s: %s", name.s, what);
        return carma_err_set(err, -EINVAL, "job %zu (%s): %s", i + 1, name.s, what);
    }
    s = jitter_state(seed);
    for (size_t i = 0; i < t->njobs; i++)
        t->jobs[i].duration_s *= jitter_factor(&s, frac);
    return 0;
}
