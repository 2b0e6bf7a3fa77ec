/* carma cancel: end jobs (SIGTERM to every process of the job, SIGKILL after a
 * grace; queued jobs leave the queue). */
#include <stdio.h>
#include <string.h>

#include "cli/client.h"
#include "cli/commands.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: carma cancel ID... [--json] [--socket PATH]\n"
               "Ends jobs: a queued one leaves the queue; a running one gets SIGTERM, and\n"
               "SIGKILL after kill_grace seconds. A user cancels their own jobs; root any.\n");
}

int cmd_cancel(int argc, char **argv)
{
    struct cli_conn c;
    cli_conn_init(&c);
    json_t *ids = json_array();
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            usage(stdout);
            json_decref(ids);
            return 0;
        }
        int r = cli_common_opt(&c, argc, argv, &i);
        if (r > 0)
            continue;
        uint64_t id;
        if (r == 0 && argv[i][0] != '-') {
            if (!(id = cli_parse_id("cancel", argv[i]))) {
                json_decref(ids);
                return 2;
            }
            json_array_append_new(ids, json_integer((json_int_t)id));
            continue;
        }
        cli_bad_arg("cancel", argc, argv, i, NULL);
        usage(stderr);
        json_decref(ids);
        return 2;
    }
    if (json_array_size(ids) == 0) {
        usage(stderr);
        json_decref(ids);
        return 2;
    }
    json_t *req = cli_req("cancel");
    json_object_set_new(req, "ids", json_incref(ids));
    json_t *resp;
    int st = cli_call(&c, "cancel", req, &resp);
    if (st) {
        json_decref(ids);
        return st;
    }
    if (c.json) {
        cli_print_json(resp);
    } else { /* a job that had ended is left as it is: said, so that silence means done */
        json_t *done = json_object_get(resp, "cancelled"), *a, *b;
        size_t k, m;
        json_array_foreach(ids, k, a) {
            int found = 0;
            json_array_foreach(done, m, b)
                found |= json_integer_value(a) == json_integer_value(b);
            if (!found)
                fprintf(stderr, "carma cancel: job %lld had ended already: nothing to cancel\n",
                        (long long)json_integer_value(a));
        }
    }
    json_decref(ids);
    json_decref(resp);
    return 0;
}
