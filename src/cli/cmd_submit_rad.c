/* carma submit-rad: submit a CARMA task file (.rad) unchanged. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/client.h"
#include "cli/commands.h"
#include "proto/proto.h"
#include "sim/trace.h"
#include "util/utf8.h"

#define RAD_MAX_BYTES 65536

static void trim(char *s)
{
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = 0;
    size_t k = 0;
    while (s[k] && isspace((unsigned char)s[k]))
        k++;
    memmove(s, s + k, n - k + 1);
}

int cli_rad_parse(const char *file, const char *text, size_t len, const char *estimator,
                  struct cli_rad *out, struct carma_err *err)
{
    memset(out, 0, sizeof *out);
    int col;
    if (!strcmp(estimator, "oracle"))
        col = 8;
    else if (!strcmp(estimator, "horus"))
        col = 9;
    else if (!strcmp(estimator, "faketensor"))
        col = 10;
    else if (!strcmp(estimator, "gpumemnet"))
        col = 11;
    else if (!strcmp(estimator, "none"))
        col = -1;
    else
        return carma_err_set(err, -EINVAL,
                             "unknown estimator '%.32s' (oracle, horus, faketensor, gpumemnet, "
                             "none)",
                             estimator);
    /* The simulator's reader checks the file and its numbers; lines 2 and 3 (the
     * environment and the command) are taken here. */
    struct sim_workload w;
    if (sim_rad_parse(file, "task", text, len, &w, err))
        return -EINVAL;
    char line[3][4096];
    size_t off = 0;
    for (int n = 0; n < 3; n++) {
        const char *nl = memchr(text + off, '\n', len - off);
        size_t l = nl ? (size_t)(nl - (text + off)) : len - off;
        if (l >= sizeof line[0])
            return carma_err_at(err, file, (size_t)n + 1, "line longer than %zu bytes",
                                sizeof line[0] - 1);
        memcpy(line[n], text + off, l);
        line[n][l] = 0;
        trim(line[n]);
        off += l + 1;
    }
    for (const unsigned char *c = (const unsigned char *)line[2]; *c;) {
        size_t l = carma_utf8_seq(c);
        if (!l)
            return carma_err_at(err, file, 3, "the command is not UTF-8 text");
        c += l;
    }
    const char *act = strstr(line[1], "activate");
    if (act) {
        act += strlen("activate");
        while (*act == ' ' || *act == '\t')
            act++;
        snprintf(out->env, sizeof out->env, "%s", act);
    }
    snprintf(out->command, sizeof out->command, "%s", line[2]);
    out->batch = w.batch;
    out->gpus = w.gpus;
    if (col >= 0) {
        double mib = col == 8 ? w.mem_mib : w.est_mib[col - 9]; /* 0: not given */
        if (!(mib > 0))
            return carma_err_at(err, file, (size_t)col + 1, "no %s memory value", estimator);
        out->mem_mib = (uint64_t)ceil(mib);
    }
    return 0;
}

int cli_split_words(const char *s, json_t *argv)
{
    char word[4096];
    size_t w = 0;
    int in_word = 0, count = 0;
    char q = 0;
    for (;; s++) {
        char ch = *s;
        if (q) {
            if (!ch)
                return -1;
            if (ch == q) {
                q = 0;
                continue;
            }
        } else if (ch == '\'' || ch == '"') {
            q = ch;
            in_word = 1;
            continue;
        } else if (!ch || ch == ' ' || ch == '\t') {
            if (in_word) {
                word[w] = 0;
                json_t *x = json_string(word);
                if (!x || json_array_append_new(argv, x))
                    return -1;
                count++;
                w = 0;
                in_word = 0;
            }
            if (!ch)
                return count;
            continue;
        }
        if (w + 1 >= sizeof word)
            return -1;
        word[w++] = ch;
        in_word = 1;
    }
}

/* 1 when name is an executable on PATH. */
static int on_path(const char *name)
{
    const char *p = getenv("PATH");
    if (!p)
        return 0;
    char full[PATH_MAX];
    while (*p) {
        const char *e = strchr(p, ':');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        snprintf(full, sizeof full, "%.*s/%s", (int)n, p, name);
        if (n && access(full, X_OK) == 0)
            return 1;
        if (!e)
            break;
        p = e + 1;
    }
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: carma submit-rad FILE.rad\n"
               "           [--estimator oracle|horus|faketensor|gpumemnet|none] [--no-conda]\n"
               "           [--after ID[,ID...]] [--socket PATH] [--json]\n"
               "Submits a CARMA task file unchanged: its command runs in its conda environment\n"
               "(when conda is installed), with its GPU count and memory requirement.\n"
               "--estimator: which of the file's memory figures is the requirement: oracle\n"
               "(the default) its measured peak (line 9), horus, faketensor or gpumemnet\n"
               "(lines 10-12), none: no requirement.\n"
               "--after ID[,ID...] (may be repeated): the task starts only once every listed\n"
               "job has ended succeeded, and is cancelled when one ends otherwise: the same\n"
               "list, checks and waiting as carma submit --after (carma submit --help), for\n"
               "chaining tasks without sleeps.\n");
}

int cmd_submit_rad(int argc, char **argv)
{
    struct cli_conn c;
    cli_conn_init(&c);
    const char *file = NULL, *est = "oracle";
    int conda = 1;
    struct cli_after after = {.n = 0};
    for (int i = 1; i < argc; i++) {
        int r = cli_common_opt(&c, argc, argv, &i);
        if (r > 0)
            continue;
        if (r == 0 && !strcmp(argv[i], "--estimator") && i + 1 < argc) {
            est = argv[++i];
        } else if (r == 0 && !strcmp(argv[i], "--no-conda")) {
            conda = 0;
        } else if (r == 0 && !strcmp(argv[i], "--after") && i + 1 < argc) {
            if (cli_after_opt("submit-rad", argv[++i], &after))
                return 2;
        } else if (r == 0 && cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        } else if (r == 0 && argv[i][0] != '-' && !file) {
            file = argv[i];
        } else {
            static const char *const valued[] = {"--estimator", "--after", NULL};
            cli_bad_arg("submit-rad", argc, argv, i, valued);
            usage(stderr);
            return 2;
        }
    }
    if (!file) {
        usage(stderr);
        return 2;
    }
    FILE *f = fopen(file, "r");
    if (!f) {
        fprintf(stderr, "carma submit-rad: %s: %s\n", file, strerror(errno));
        return 2;
    }
    static char text[RAD_MAX_BYTES + 1];
    size_t len = fread(text, 1, sizeof text, f);
    fclose(f);
    struct cli_rad rad;
    struct carma_err err = {{0}};
    if (cli_rad_parse(file, text, len, est, &rad, &err)) {
        fprintf(stderr, "carma submit-rad: %s\n", err.msg);
        return 2;
    }
    json_t *job = json_object(), *av = json_array();
    if (strpbrk(rad.command, "$`|;&<>()\\*?~")) {
        /* The task file's own shell line: run it as the file says, with sh -c. */
        json_array_append_new(av, json_string("/bin/sh"));
        json_array_append_new(av, json_string("-c"));
        json_array_append_new(av, json_string(rad.command));
    } else {
        if (conda && rad.env[0] && on_path("conda")) {
            const char *pre[] = {"conda", "run", "--no-capture-output", "-n", rad.env};
            for (size_t k = 0; k < 5; k++)
                json_array_append_new(av, json_string(pre[k]));
        } else if (conda && rad.env[0]) {
            fprintf(stderr, "carma submit-rad: conda not found: running '%s' without the "
                            "environment %s\n", rad.command, rad.env);
        }
        if (cli_split_words(rad.command, av) <= 0) {
            fprintf(stderr, "carma submit-rad: %s:3: cannot split the command (quotes?)\n", file);
            json_decref(av);
            json_decref(job);
            return 2;
        }
    }
    json_object_set_new(job, "argv", av);
    json_object_set_new(job, "gpus", json_integer(rad.gpus));
    if (rad.mem_mib)
        json_object_set_new(job, "mem_mib", json_integer((json_int_t)rad.mem_mib));
    if (rad.batch)
        json_object_set_new(job, "batch", json_integer(rad.batch));
    /* Named after the file: its base name without .rad, with what a name may not hold
     * (controls, bytes that are not UTF-8) as '?', cut at a whole character. */
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    size_t bl = strlen(base);
    if (bl > 4 && !strcmp(base + bl - 4, ".rad"))
        bl -= 4;
    char *stem = strndup(base, bl), name[CARMA_PROTO_MAX_NAME + 1];
    if (!stem) {
        fprintf(stderr, "carma submit-rad: out of memory\n");
        json_decref(job);
        return 1;
    }
    carma_proto_name_from(stem, name, sizeof name);
    free(stem);
    json_object_set_new(job, "name", json_string(name));
    if (cli_after_put(&after, job) < 0) {
        fprintf(stderr, "carma submit-rad: out of memory\n");
        json_decref(job);
        return 1;
    }
    return cli_submit_job(&c, "submit-rad", job);
}
