/* carma's own trace CSV (submit_s,workload + catalog) and CARMA's original files: a
 * shell trace of `sleep N` and `python .../submit.py --task X.rad` lines plus the
 * folder of .rad task descriptions. Run times and activity come from the catalog. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sim/trace_fmt.h"
#include "util/csv.h"

#define RAD_MAX_BYTES 65536
#define SH_LINE_MAX 4096
#define RAD_LINES 12
#define SH_SLEEP_MAX_S 1e9 /* one sleep; the sum is bounded as an arrival time */

static void job_from_workload(struct sim_job_spec *j, const struct sim_workload *w, double at,
                              uint16_t idx)
{
    memset(j, 0, sizeof *j);
    j->submit_s = at;
    j->duration_s = w->duration_s;
    j->mem_mib = w->mem_mib;
    memcpy(j->est_mib, w->est_mib, sizeof j->est_mib);
    j->smact = w->smact;
    j->smocc = w->smocc;
    j->drama = w->drama;
    j->ramp_s = w->ramp_s;
    j->gpus = w->gpus;
    j->workload = idx;
}

static int need_catalog(const char *file, const struct sim_trace_opts *o, const char *what,
                        struct carma_err *err)
{
    if (o->catalog && o->ncatalog)
        return 0;
    return carma_err_at(err, file, 0,
                        "%s needs a workload catalog for run times and profiles "
                        "(--workloads data/workloads.csv)",
                        what);
}

int sim_parse_carma_csv(const char *file, const char *buf, size_t len,
                        const struct sim_trace_opts *o, struct sim_trace *out,
                        struct carma_err *err)
{
    int rc = need_catalog(file, o, "a carma CSV trace", err);
    if (rc)
        return rc;
    struct carma_csv *c = malloc(sizeof *c);
    if (!c)
        return carma_err_set(err, -ENOMEM, "%s: out of memory", file);
    struct sim_build b;
    sim_build_init(&b, file);
    for (size_t i = 0; i < o->ncatalog; i++) {
        uint16_t idx;
        if ((rc = sim_build_workload(&b, &o->catalog[i], &idx, 0, err)))
            goto fail;
    }
    carma_csv_init(c, buf, len, file, ',');
    static const char *const names[] = {"submit_s", "workload"};
    int col[2];
    if ((rc = carma_csv_header(c, names, 2, 2, col, "(expected columns: submit_s,workload)", err)))
        goto fail;
    int cs = col[0], cw = col[1];
    size_t ncols = c->nfields;
    while ((rc = carma_csv_next(c, err)) == 1) {
        if ((rc = carma_csv_fields_check(c, ncols, err)))
            goto fail;
        double at;
        if (carma_parse_double(c->field[cs], &at)) {
            rc = carma_err_at(err, file, c->line,
                              "submit_s '%s': not a number of seconds from 0 to %s",
                              carma_quote(c->field[cs], 40).s, carma_num(SIM_TIME_MAX_S).s);
            goto fail;
        }
        long k = sim_build_find(&b, c->field[cw]);
        if (k < 0) {
            rc = carma_err_at(err, file, c->line, "unknown workload '%s' (not in the catalog)",
                              carma_quote(c->field[cw], 64).s);
            goto fail;
        }
        struct sim_job_spec j;
        job_from_workload(&j, &b.t.workloads[k], at, (uint16_t)k);
        if ((rc = sim_build_job(&b, &j, c->line, err)))
            goto fail;
    }
    if (rc < 0)
        goto fail;
    free(c);
    sim_build_finish(&b, out);
    return 0;
fail:
    free(c);
    sim_build_discard(&b);
    return rc;
}

/* ---- .rad ---- */

static void trim(char *s)
{
    size_t n = strlen(s), k = 0;
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    while (s[k] && isspace((unsigned char)s[k]))
        k++;
    memmove(s, s + k, n - k + 1);
}

int sim_rad_parse(const char *file, const char *name, const char *buf, size_t len,
                  struct sim_workload *w, struct carma_err *err)
{
    static const char *const what[RAD_LINES] = {
        "comment", "environment", "command", "model file", "dataset", "batch size",
        "placement hint", "GPUs", "measured peak MiB", "Horus estimate MiB",
        "FakeTensor estimate MiB", "GPUMemNet estimate MiB"};
    memset(w, 0, sizeof *w);
    if (len > RAD_MAX_BYTES)
        return carma_err_at(err, file, 0, "larger than %d bytes", RAD_MAX_BYTES);
    const char *why = carma_text_not_text(buf, len);
    if (why)
        return carma_err_at(err, file, 0, "%s", why);
    size_t nul = carma_text_nul_line(buf, len);
    if (nul)
        return carma_err_at(err, file, nul, "NUL byte in text");
    if (sim_name_copy(w->name, sizeof w->name, name))
        return carma_err_at(err, file, 0, "task name empty or longer than %d bytes",
                            SIM_NAME_MAX - 1);
    char line[SH_LINE_MAX];
    size_t off = 0, n = 0, blank = 0; /* blank: the first empty estimate line, 0: none */
    double v;
    int got;
    while ((got = sim_next_line(buf, len, &off, &n, line, sizeof line, file, err)) == 1) {
        trim(line);
        /* Empty lines after the last value end the file (an editor's extra line ends), as
         * past the 12th line; an empty estimate followed by a value is refused below. */
        if (n >= 10 && !line[0]) {
            blank = blank ? blank : n;
            continue;
        }
        if (n > RAD_LINES)
            return carma_err_at(err, file, n, "more than %d lines in a task description",
                                RAD_LINES);
        if (blank)
            return carma_err_at(err, file, blank,
                                "%s '': not a number from 0 to %s (an "
                                "estimate may be left out only with those after it)",
                                what[blank - 1], carma_num(SIM_MEM_MAX_MIB).s);
        size_t i = n - 1;
        if (i == 5) {
            if (carma_parse_double(line, &v) || v < 1 || v > 1e9 || v != (double)(uint32_t)v)
                return carma_err_at(err, file, n, "%s '%s': not a whole number from 1 to 1e9",
                                    what[i], carma_quote(line, 40).s);
            w->batch = (uint32_t)v;
        } else if (i == 7) {
            if (carma_parse_double(line, &v) || v < 1 || v > SIM_JOB_MAX_GPUS ||
                v != (double)(uint16_t)v)
                return carma_err_at(err, file, n, "%s '%s': not a whole number from 1 to %d",
                                    what[i], carma_quote(line, 40).s, SIM_JOB_MAX_GPUS);
            w->gpus = (uint16_t)v;
        } else if (i == 8) {
            if (carma_parse_double(line, &v) || !(v > 0) || v > SIM_MEM_MAX_MIB)
                return carma_err_at(err, file, n, "%s '%s': not a number above 0 and at most %s",
                                    what[i], carma_quote(line, 40).s,
                                    carma_num(SIM_MEM_MAX_MIB).s);
            w->mem_mib = (float)v;
        } else if (i >= 9) {
            if (carma_parse_double(line, &v) || v < 0 || v > SIM_MEM_MAX_MIB)
                return carma_err_at(err, file, n, "%s '%s': not a number from 0 to %s", what[i],
                                    carma_quote(line, 40).s, carma_num(SIM_MEM_MAX_MIB).s);
            w->est_mib[i - 9] = (float)v; /* SIM_EST_HORUS, _FAKETENSOR, _GPUMEMNET */
        } else if (i == 2 && !line[0]) {
            return carma_err_at(err, file, n, "no command");
        }
    }
    if (got < 0)
        return got;
    if (n < 9)
        return carma_err_at(err, file, n, "%zu lines; a task description has at least 9 "
                            "(comment, environment, command, model file, dataset, batch, "
                            "placement hint, GPUs, peak MiB)", n);
    return 0;
}

/* ---- CARMA .sh ---- */

/* Splits s in place on blanks; returns the count (at most cap). */
static size_t split_words(char *s, char **word, size_t cap)
{
    size_t n = 0;
    for (char *p = s; *p;) {
        while (*p == ' ' || *p == '\t')
            *p++ = '\0';
        if (!*p)
            break;
        if (n == cap)
            return cap + 1;
        word[n++] = p;
        while (*p && *p != ' ' && *p != '\t')
            p++;
    }
    return n;
}

static int ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), k = strlen(suf);
    return n >= k && strcmp(s + n - k, suf) == 0;
}

/* The workload of task `name`: already known, or its .rad read from dir and completed
 * from the catalog (run time, activity). */
static int sh_task(struct sim_build *b, const struct sim_trace_opts *o, const char *dir,
                   const char *name, size_t line, uint16_t *idx, struct carma_err *err)
{
    long k = sim_build_find(b, name);
    if (k >= 0) {
        *idx = (uint16_t)k;
        return 0;
    }
    const struct sim_workload *cat = NULL;
    for (size_t i = 0; i < o->ncatalog && !cat; i++)
        if (strcmp(o->catalog[i].name, name) == 0)
            cat = &o->catalog[i];
    if (!cat)
        return carma_err_at(err, b->file, line,
                            "task '%s': not in the workload catalog, so no run time is known",
                            carma_quote(name, 64).s);
    char path[4096];
    int pn = snprintf(path, sizeof path, "%s/%s.rad", dir, name);
    if (pn < 0 || (size_t)pn >= sizeof path)
        return carma_err_at(err, b->file, line, "path of task '%s' too long",
                            carma_quote(name, 64).s);
    /* A task file is a regular file: opening a FIFO would wait for a writer forever,
     * and a device is no task description. */
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
        return carma_err_at(err, b->file, line, "task '%s': %s: not a regular file",
                            carma_quote(name, 64).s, path);
    char *text;
    size_t tlen;
    struct carma_err ferr;
    if (carma_file_read(path, RAD_MAX_BYTES, &text, &tlen, &ferr))
        return carma_err_at(err, b->file, line, "task '%s': %s%s", carma_quote(name, 64).s,
                            ferr.msg,
                            o->aux_dir ? ""
                                       : " (without --rad-dir, .rad files are looked up in the "
                                         "trace's folder, the current one for a trace on "
                                         "standard input: give their folder with --rad-dir DIR)");
    struct sim_workload w;
    int rc = sim_rad_parse(path, name, text, tlen, &w, err);
    free(text);
    if (rc)
        return rc;
    /* The task file states memory, GPUs, batch and estimates; the catalog the rest. */
    memcpy(w.model, cat->model, sizeof w.model);
    w.duration_s = cat->duration_s;
    w.smact = cat->smact;
    w.smocc = cat->smocc;
    w.drama = cat->drama;
    w.ramp_s = cat->ramp_s;
    w.est_mib[SIM_EST_CARMA] = cat->est_mib[SIM_EST_CARMA];
    return sim_build_workload(b, &w, idx, line, err);
}

int sim_parse_carma_sh(const char *file, const char *buf, size_t len,
                       const struct sim_trace_opts *o, struct sim_trace *out,
                       struct carma_err *err)
{
    int rc = need_catalog(file, o, "a CARMA .sh trace", err);
    if (rc)
        return rc;
    char dir[4096];
    if (o->aux_dir) {
        if (sim_name_copy(dir, sizeof dir, o->aux_dir))
            return carma_err_at(err, file, 0, "folder of .rad files: empty or too long");
    } else {
        const char *slash = strrchr(file, '/');
        int dn = slash ? (int)(slash - file) : 0;
        if (slash && dn == 0)
            dn = 1; /* "/x.sh" */
        if ((size_t)dn >= sizeof dir)
            return carma_err_at(err, file, 0, "path too long");
        if (slash)
            snprintf(dir, sizeof dir, "%.*s", dn, file);
        else
            snprintf(dir, sizeof dir, ".");
    }
    struct sim_build b;
    sim_build_init(&b, file);
    char *line = malloc(SH_LINE_MAX);
    if (!line)
        return carma_err_set(err, -ENOMEM, "%s: out of memory", file);
    double clock = 0;
    size_t off = 0, n = 0;
    while ((rc = sim_next_line(buf, len, &off, &n, line, SH_LINE_MAX, file, err)) == 1) {
        trim(line);
        if (!line[0] || line[0] == '#')
            continue;
        char *word[8];
        size_t nw = split_words(line, word, 8);
        if (nw == 2 && strcmp(word[0], "sleep") == 0) {
            double s;
            if (carma_parse_double(word[1], &s) || !(s >= 0) || s > SH_SLEEP_MAX_S) {
                rc = carma_err_at(err, file, n, "sleep '%s': not a number of seconds from 0 to %s",
                                  carma_quote(word[1], 40).s, carma_num(SH_SLEEP_MAX_S).s);
                goto fail;
            }
            clock += s;
            continue;
        }
        if (!(nw == 4 && (strcmp(word[0], "python") == 0 || strcmp(word[0], "python3") == 0) &&
              ends_with(word[1], "submit.py") && strcmp(word[2], "--task") == 0 &&
              ends_with(word[3], ".rad"))) {
            rc = carma_err_at(err, file, n,
                              "expected 'sleep SECONDS' or 'python .../submit.py --task FILE.rad'");
            goto fail;
        }
        char *base = strrchr(word[3], '/');
        base = base ? base + 1 : word[3];
        base[strlen(base) - 4] = '\0'; /* drop ".rad" */
        if (!base[0] || strlen(base) >= SIM_NAME_MAX) {
            rc = carma_err_at(err, file, n, "task file name empty or longer than %d bytes",
                              SIM_NAME_MAX - 1);
            goto fail;
        }
        uint16_t idx;
        if ((rc = sh_task(&b, o, dir, base, n, &idx, err)))
            goto fail;
        struct sim_job_spec j;
        job_from_workload(&j, &b.t.workloads[idx], clock, idx);
        if ((rc = sim_build_job(&b, &j, n, err)))
            goto fail;
    }
    if (rc < 0)
        goto fail;
    free(line);
    sim_build_finish(&b, out);
    return 0;
fail:
    free(line);
    sim_build_discard(&b);
    return rc;
}
