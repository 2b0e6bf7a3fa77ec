/* carma gpus: the GPUs carmad manages, their memory, activity and jobs. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli/client.h"
#include "cli/commands.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: carma gpus [--json] [--socket PATH]\n"
               "The GPUs carmad manages: memory, utilisation, power, sharing mode and jobs,\n"
               "and why a drained one is drained.\n");
}

/* One run of GPU indices: "4" or "4-7", after sep. */
static void put_run(const char *sep, json_int_t first, json_int_t last)
{
    if (first == last)
        printf("%s%lld", sep, (long long)first);
    else
        printf("%s%lld-%lld", sep, (long long)first, (long long)last);
}

/* The least island number above `above` in the answer, or -1 when there is none. */
static json_int_t next_island(const json_t *gpus, json_int_t above)
{
    json_int_t best = -1;
    size_t k;
    json_t *g;
    json_array_foreach(gpus, k, g) {
        json_t *i = json_object_get(g, "island");
        json_int_t v = json_is_integer(i) ? json_integer_value(i) : -1;
        if (v > above && (best < 0 || v < best))
            best = v;
    }
    return best;
}

/* "islands (...): 0-3 | 4-7" (each island's GPU indices, runs as ranges) when the
 * backend tells more than one. The islands are taken in order of their numbers, each
 * the least above the last, so that whatever numbers an answer holds it takes one pass
 * per island it names. */
static void print_islands(const json_t *gpus)
{
    json_int_t isl = next_island(gpus, -1);
    if (isl < 0 || next_island(gpus, isl) < 0)
        return;
    fputs("islands (GPUs linked by NVLink or PCIe switches):", stdout);
    for (int n = 0; isl >= 0; n++, isl = next_island(gpus, isl)) {
        json_int_t first = 0, last = 0;
        int have = 0; /* a run begun: one GPU at least, as next_island found it */
        const char *sep = n ? " | " : " ";
        size_t k;
        json_t *g;
        json_array_foreach(gpus, k, g) {
            json_t *i = json_object_get(g, "island");
            if (!json_is_integer(i) || json_integer_value(i) != isl)
                continue;
            json_int_t idx = json_integer_value(json_object_get(g, "index"));
            if (have && last < INT64_MAX && idx == last + 1) {
                last = idx;
                continue;
            }
            if (have) {
                put_run(sep, first, last);
                sep = ",";
            }
            first = last = idx;
            have = 1;
        }
        if (have)
            put_run(sep, first, last);
    }
    putchar('\n');
}

/* "co-location model, learnt from co-runs (timeslice, NVIDIA H200, 143771 MiB): x1.35 at
 * SMACT sum 0.50, ..." per GPU kind and sharing mode with a knot learnt (the answer's
 * "coloc"; absent: not learning). At most a dozen knots a line are printed, numbers only. */
static void print_coloc(const json_t *coloc)
{
    size_t i;
    json_t *kind;
    json_array_foreach(coloc, i, kind) {
        const char *name = json_string_value(json_object_get(kind, "kind"));
        for (int m = 0; m < 2; m++) {
            const char *mode = m ? "mps" : "timeslice";
            size_t k, n = 0;
            json_t *x;
            json_array_foreach(json_object_get(kind, mode), k, x) {
                json_t *at = json_object_get(x, "smact_sum"), *f = json_object_get(x, "factor");
                if (!json_is_number(at) || !json_is_number(f) || n >= 12)
                    continue;
                if (n++ == 0) {
                    printf("co-location model, learnt from co-runs (%s, ", mode);
                    cli_put_visible(stdout, name ? name : "?");
                    fputs("):", stdout);
                }
                printf("%s x%.2f at SMACT sum %.2f", n > 1 ? "," : "", json_number_value(f),
                       json_number_value(at));
            }
            if (n)
                putchar('\n');
        }
    }
}

int cmd_gpus(int argc, char **argv)
{
    struct cli_conn c;
    cli_conn_init(&c);
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        }
        int r = cli_common_opt(&c, argc, argv, &i);
        if (r > 0)
            continue;
        cli_bad_arg("gpus", argc, argv, i, NULL);
        usage(stderr);
        return 2;
    }
    json_t *resp;
    int st = cli_call(&c, "gpus", cli_req("gpus"), &resp);
    if (st)
        return st;
    if (cli_check_gpus("gpus", resp)) {
        json_decref(resp);
        return 1;
    }
    if (c.json) {
        json_object_del(resp, "ok");
        cli_print_json(resp);
        json_decref(resp);
        return 0;
    }
    printf("backend %s, policy %s\n", json_string_value(json_object_get(resp, "backend")),
           json_string_value(json_object_get(resp, "policy")));
    print_islands(json_object_get(resp, "gpus"));
    print_coloc(json_object_get(resp, "coloc"));
    printf("%-3s %-40s %-26s %17s %5s %7s %-9s %s\n", "IDX", "UUID", "NAME", "MEMORY MiB", "UTIL",
           "POWER", "SHARING", "JOBS");
    size_t k;
    json_t *g;
    json_array_foreach(json_object_get(resp, "gpus"), k, g) {
        char util[16] = "-", power[16] = "-", mem[40], jobs[256] = "";
        json_t *u = json_object_get(g, "util"), *p = json_object_get(g, "power_w");
        if (json_is_number(u))
            snprintf(util, sizeof util, "%.0f%%", json_number_value(u) * 100);
        if (json_is_number(p))
            snprintf(power, sizeof power, "%.0fW", json_number_value(p));
        json_t *mu = json_object_get(g, "mem_used_mib"); /* null: no fresh sample */
        char used[24] = "-";
        if (json_is_integer(mu))
            snprintf(used, sizeof used, "%lld", (long long)json_integer_value(mu));
        snprintf(mem, sizeof mem, "%s/%lld", used,
                 (long long)json_integer_value(json_object_get(g, "mem_total_mib")));
        size_t x;
        json_t *id;
        json_array_foreach(json_object_get(g, "jobs"), x, id) {
            size_t l = strlen(jobs);
            snprintf(jobs + l, sizeof jobs - l, "%s%lld", x ? "," : "",
                     (long long)json_integer_value(id));
        }
        printf("%-3lld %-40.40s %-26.26s %17s %5s %7s %-9s %s",
               (long long)json_integer_value(json_object_get(g, "index")),
               json_string_value(json_object_get(g, "uuid")),
               json_string_value(json_object_get(g, "name")), mem, util, power,
               json_string_value(json_object_get(g, "sharing")), jobs[0] ? jobs : "-");
        if (json_is_true(json_object_get(g, "drained"))) {
            /* whole (an administrator's reason is theirs), its controls shown as escapes */
            const char *why = json_string_value(json_object_get(g, "drain_reason"));
            fputs(why ? "  DRAINED: " : "  DRAINED", stdout);
            if (why)
                cli_put_visible(stdout, why);
        }
        putchar('\n');
    }
    json_decref(resp);
    return 0;
}
