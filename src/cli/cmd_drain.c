/* carma drain / carma undrain: an administrator takes a GPU out of service (no new job
 * goes to it; the jobs on it run to their end) and puts it back (docs/daemon.md,
 * "Draining a GPU by hand"). */
#include <stdio.h>
#include <string.h>

#include "cli/client.h"
#include "cli/commands.h"
#include "proto/proto.h"
#include "util/csv.h"
#include "util/err.h"

static void usage(FILE *f, int drain)
{
    if (drain)
        fprintf(f,
                "usage: carma drain GPU... | all [--reason TEXT] [--json] [--socket PATH]\n"
                "Takes each GPU (its index as carma gpus shows it, or its UUID; several as\n"
                "0,2 or 0 2; all: every GPU) out of service: no new job goes to it; the jobs\n"
                "on it run to their end. The reason (printable ASCII, at most %d bytes) is\n"
                "kept with who drained it and when, and the GPU stays drained over carmad's\n"
                "restarts until carma undrain. A GPU drained already keeps its first reason;\n"
                "one lost, silent or with MIG enabled (seen again at start) is kept drained\n"
                "over restarts for this drain's reason.\n"
                "A GPU listed that is not this server's refuses the whole list: nothing is\n"
                "drained. Root or carmad's own user only.\n",
                CARMA_PROTO_MAX_REASON);
    else
        fprintf(f, "usage: carma undrain GPU... | all [--json] [--socket PATH]\n"
                   "Puts drained GPUs (each its index as carma gpus shows it, or its UUID;\n"
                   "several as 0,2 or 0 2; all: every GPU) back in service, whatever drained\n"
                   "them (carma drain, an Xid once the GPU is reset), unless still lost or\n"
                   "silent or with MIG enabled: listed, such a GPU refuses the whole list\n"
                   "(nothing is undrained); under all it stays drained, said. A GPU in service\n"
                   "already is said so (exit 0). Root or carmad's own user only.\n");
}

/* Prints one GPU's outcome of a drain or undrain (an answer, or an element of its "gpus"):
 * what changed on stdout, what was so already or stays so on stderr. */
static void say_outcome(const json_t *o, int drain)
{
    long long g = (long long)json_integer_value(json_object_get(o, "gpu"));
    const char *uuid = json_string_value(json_object_get(o, "uuid"));
    const char *stays = json_string_value(json_object_get(o, "stays_drained"));
    if (drain && json_is_true(json_object_get(o, "already"))) {
        /* said, not refused: what was asked holds (the GPU is out of service) */
        fprintf(stderr, "carma drain: GPU %lld (", g);
        cli_put_visible(stderr, uuid);
        fputs(") was drained already: ", stderr);
        cli_put_visible(stderr, json_string_value(json_object_get(o, "reason")));
        const char *kept = json_string_value(json_object_get(o, "kept_as"));
        if (kept) { /* its drain was not kept over restarts: this one is */
            fputs(" (its reason kept; kept drained over restarts as: ", stderr);
            cli_put_visible(stderr, kept);
            fputs(")\n", stderr);
        } else {
            fputs(" (its reason kept)\n", stderr);
        }
    } else if (!drain && json_is_true(json_object_get(o, "already"))) {
        /* as a second drain: the GPU is in service, as asked (an older carmad refuses) */
        fprintf(stderr, "carma undrain: GPU %lld (", g);
        cli_put_visible(stderr, uuid);
        fputs(") was in service already (not drained)\n", stderr);
    } else if (!drain && stays) { /* undrain all: one that may not go back yet */
        fprintf(stderr, "carma undrain: GPU %lld (", g);
        cli_put_visible(stderr, uuid);
        fputs(") ", stderr);
        cli_put_visible(stderr, stays);
        fputs(": it stays drained (", stderr);
        cli_put_visible(stderr, json_string_value(json_object_get(o, "was")));
        fputs(")\n", stderr);
    } else if (drain) {
        printf("GPU %lld (", g);
        cli_put_visible(stdout, uuid);
        fputs(") drained: ", stdout);
        cli_put_visible(stdout, json_string_value(json_object_get(o, "reason")));
        fputs("\n", stdout);
    } else {
        printf("GPU %lld (", g);
        cli_put_visible(stdout, uuid);
        fputs(") back in service (it was drained: ", stdout);
        cli_put_visible(stdout, json_string_value(json_object_get(o, "was")));
        fputs(")\n", stdout);
    }
}

/* One GPU of the command line as the protocol's "gpu" (a new reference), or NULL with the
 * error printed. */
static json_t *gpu_arg(const char *cmd, const char *gpu)
{
    uint64_t idx;
    if (gpu[0] && strspn(gpu, "0123456789") == strlen(gpu)) {
        if (carma_parse_u64(gpu, &idx) < 0 || idx > CARMA_PROTO_MAX_GPU_INDEX) {
            fprintf(stderr, "carma %s: GPU '%s': an index from 0 to %d or a UUID expected\n", cmd,
                    carma_quote(gpu, 40).s, CARMA_PROTO_MAX_GPU_INDEX);
            return NULL;
        }
        return json_integer((json_int_t)idx);
    }
    if (carma_proto_printable_ok(gpu, CARMA_PROTO_MAX_UUID) && !strchr(gpu, ','))
        return json_string(gpu);
    fprintf(stderr,
            "carma %s: GPU '%s': an index or a UUID (printable ASCII, at most %d "
            "bytes) expected\n",
            cmd, carma_quote(gpu, 40).s, CARMA_PROTO_MAX_UUID);
    return NULL;
}

/* carma drain (drain 1) or undrain (0). */
static int drain_cmd(int argc, char **argv, int drain)
{
    const char *cmd = drain ? "drain" : "undrain";
    struct cli_conn c;
    cli_conn_init(&c);
    const char *reason = NULL;
    json_t *gpus = json_array(); /* the GPUs named, as the protocol's "gpu" */
    int all = 0;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            usage(stdout, drain);
            json_decref(gpus);
            return 0;
        }
        int r = cli_common_opt(&c, argc, argv, &i);
        if (r > 0)
            continue;
        const char *a = argv[i];
        if (r == 0 && drain && !strcmp(a, "--reason") && i + 1 < argc) {
            reason = argv[++i];
            continue;
        }
        if (r == 0 && drain && !strncmp(a, "--reason=", 9)) {
            reason = a + 9;
            continue;
        }
        if (r == 0 && !strcmp(a, "all")) {
            all = 1;
            continue;
        }
        if (r == 0 && a[0] && a[0] != '-') { /* GPU or GPU,GPU,... */
            for (const char *p = a;; p++) {
                size_t l = strcspn(p, ",");
                char one[CARMA_PROTO_MAX_UUID + 2];
                if (l == 0 || l >= sizeof one) {
                    fprintf(stderr, "carma %s: '%s': %s\n", cmd, carma_quote(a, 60).s,
                            l ? "a GPU too long (an index or a UUID expected)"
                              : "an empty GPU in the list (GPUs are separated by single commas)");
                    json_decref(gpus);
                    return 2;
                }
                memcpy(one, p, l);
                one[l] = 0;
                json_t *g = strcmp(one, "all") ? gpu_arg(cmd, one) : NULL;
                if (!g) {
                    if (!strcmp(one, "all"))
                        fprintf(stderr, "carma %s: 'all' stands alone: every GPU\n", cmd);
                    json_decref(gpus);
                    return 2;
                }
                if (json_array_size(gpus) == CARMA_PROTO_MAX_GPU_LIST) {
                    fprintf(stderr, "carma %s: more than %d GPUs named\n", cmd,
                            CARMA_PROTO_MAX_GPU_LIST);
                    json_decref(g);
                    json_decref(gpus);
                    return 2;
                }
                json_array_append_new(gpus, g);
                p += l;
                if (!*p)
                    break;
            }
            continue;
        }
        static const char *const valued[] = {"--reason", NULL};
        cli_bad_arg(cmd, argc, argv, i, drain ? valued : NULL);
        usage(stderr, drain);
        json_decref(gpus);
        return 2;
    }
    size_t n = json_array_size(gpus);
    if (all && n) {
        fprintf(stderr, "carma %s: 'all' stands alone: every GPU, or the GPUs listed\n", cmd);
        json_decref(gpus);
        return 2;
    }
    if (!all && !n) {
        usage(stderr, drain);
        json_decref(gpus);
        return 2;
    }
    if (reason && !carma_proto_printable_ok(reason, CARMA_PROTO_MAX_REASON)) {
        fprintf(stderr,
                "carma drain: --reason '%s': 1 to %d bytes of printable ASCII expected (no "
                "control characters, not only blanks)\n",
                carma_quote(reason, 40).s, CARMA_PROTO_MAX_REASON);
        json_decref(gpus);
        return 2;
    }
    json_t *req = cli_req(cmd);
    /* one GPU: "gpu", which every carmad knows, and its answer; several, or all: "gpus" or
     * "all", answered by each GPU's outcome in "gpus" */
    if (all)
        json_object_set_new(req, "all", json_true());
    else if (n == 1)
        json_object_set(req, "gpu", json_array_get(gpus, 0));
    else
        json_object_set(req, "gpus", gpus);
    json_decref(gpus);
    if (reason)
        json_object_set_new(req, "reason", json_string(reason));
    json_t *resp;
    int st = cli_call(&c, cmd, req, &resp);
    if (st)
        return st;
    const char *each = drain ? "gpu:i uuid:s reason:s already:b kept_as:s?"
                             : "gpu:i uuid:s was:s already:b? stays_drained:s?";
    if (n == 1 ? cli_check(cmd, resp, "answer", each)
               : cli_check(cmd, resp, "answer", "gpus:ao") ||
                     cli_check_each(cmd, resp, "gpus", each)) {
        json_decref(resp);
        return 1;
    }
    if (c.json) {
        cli_print_json(resp);
        json_decref(resp);
        return 0;
    }
    if (n == 1) {
        say_outcome(resp, drain);
    } else {
        size_t k;
        json_t *o;
        json_array_foreach(json_object_get(resp, "gpus"), k, o)
            say_outcome(o, drain);
    }
    json_decref(resp);
    return 0;
}

int cmd_drain(int argc, char **argv)
{
    return drain_cmd(argc, argv, 1);
}

int cmd_undrain(int argc, char **argv)
{
    return drain_cmd(argc, argv, 0);
}
