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
                "usage: carma drain GPU [--reason TEXT] [--json] [--socket PATH]\n"
                "Takes GPU (its index as carma gpus shows it, or its UUID) out of service: no\n"
                "new job goes to it; the jobs on it run to their end. The reason (printable\n"
                "ASCII, at most %d bytes) is kept with who drained it and when, and the GPU\n"
                "stays drained over carmad's restarts until carma undrain. A GPU drained\n"
                "already keeps its first reason. Root or carmad's own user only.\n",
                CARMA_PROTO_MAX_REASON);
    else
        fprintf(f, "usage: carma undrain GPU [--json] [--socket PATH]\n"
                   "Puts a drained GPU (its index as carma gpus shows it, or its UUID) back in\n"
                   "service, whatever drained it (carma drain, an Xid once the GPU is reset),\n"
                   "unless it is still lost or silent. A GPU in service already is said so\n"
                   "(exit 0). Root or carmad's own user only.\n");
}

/* carma drain (drain 1) or undrain (0). */
static int drain_cmd(int argc, char **argv, int drain)
{
    const char *cmd = drain ? "drain" : "undrain";
    struct cli_conn c;
    cli_conn_init(&c);
    const char *gpu = NULL, *reason = NULL;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            usage(stdout, drain);
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
        if (r == 0 && !gpu && a[0] && a[0] != '-') {
            gpu = a;
            continue;
        }
        static const char *const valued[] = {"--reason", NULL};
        cli_bad_arg(cmd, argc, argv, i, drain ? valued : NULL);
        usage(stderr, drain);
        return 2;
    }
    if (!gpu) {
        usage(stderr, drain);
        return 2;
    }
    if (reason && !carma_proto_printable_ok(reason, CARMA_PROTO_MAX_REASON)) {
        fprintf(stderr,
                "carma drain: --reason '%s': 1 to %d bytes of printable ASCII expected (no "
                "control characters, not only blanks)\n",
                carma_quote(reason, 40).s, CARMA_PROTO_MAX_REASON);
        return 2;
    }
    json_t *req = cli_req(cmd);
    uint64_t idx;
    if (strspn(gpu, "0123456789") == strlen(gpu)) {
        if (carma_parse_u64(gpu, &idx) < 0 || idx > CARMA_PROTO_MAX_GPU_INDEX) {
            fprintf(stderr, "carma %s: GPU '%s': an index from 0 to %d or a UUID expected\n", cmd,
                    carma_quote(gpu, 40).s, CARMA_PROTO_MAX_GPU_INDEX);
            json_decref(req);
            return 2;
        }
        json_object_set_new(req, "gpu", json_integer((json_int_t)idx));
    } else if (carma_proto_printable_ok(gpu, CARMA_PROTO_MAX_UUID)) {
        json_object_set_new(req, "gpu", json_string(gpu));
    } else {
        fprintf(stderr,
                "carma %s: GPU '%s': an index or a UUID (printable ASCII, at most %d "
                "bytes) expected\n",
                cmd, carma_quote(gpu, 40).s, CARMA_PROTO_MAX_UUID);
        json_decref(req);
        return 2;
    }
    if (reason)
        json_object_set_new(req, "reason", json_string(reason));
    json_t *resp;
    int st = cli_call(&c, cmd, req, &resp);
    if (st)
        return st;
    if (cli_check(cmd, resp, "answer",
                  drain ? "gpu:i uuid:s reason:s already:b" : "gpu:i uuid:s was:s")) {
        json_decref(resp);
        return 1;
    }
    if (c.json) {
        cli_print_json(resp);
        json_decref(resp);
        return 0;
    }
    long long g = (long long)json_integer_value(json_object_get(resp, "gpu"));
    const char *uuid = json_string_value(json_object_get(resp, "uuid"));
    if (drain && json_is_true(json_object_get(resp, "already"))) {
        /* said, not refused: what was asked holds (the GPU is out of service) */
        fprintf(stderr, "carma drain: GPU %lld (", g);
        cli_put_visible(stderr, uuid);
        fputs(") was drained already: ", stderr);
        cli_put_visible(stderr, json_string_value(json_object_get(resp, "reason")));
        fputs(" (its reason kept)\n", stderr);
    } else if (!drain && json_is_true(json_object_get(resp, "already"))) {
        /* as a second drain: the GPU is in service, as asked (an older carmad refuses) */
        fprintf(stderr, "carma undrain: GPU %lld (", g);
        cli_put_visible(stderr, uuid);
        fputs(") was in service already (not drained)\n", stderr);
    } else if (drain) {
        printf("GPU %lld (", g);
        cli_put_visible(stdout, uuid);
        fputs(") drained: ", stdout);
        cli_put_visible(stdout, json_string_value(json_object_get(resp, "reason")));
        fputs("\n", stdout);
    } else {
        printf("GPU %lld (", g);
        cli_put_visible(stdout, uuid);
        fputs(") back in service (it was drained: ", stdout);
        cli_put_visible(stdout, json_string_value(json_object_get(resp, "was")));
        fputs(")\n", stdout);
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
