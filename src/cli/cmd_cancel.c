/* carma cancel: end jobs (SIGTERM to every process of the job, SIGKILL after a
 * grace; queued jobs leave the queue). */
#include <stdio.h>
#include <string.h>

#include "cli/client.h"
#include "cli/commands.h"

int cmd_cancel(int argc, char **argv)
{
    struct cli_conn c;
    cli_conn_init(&c);
    json_t *ids = json_array();
    for (int i = 1; i < argc; i++) {
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
        fprintf(stderr, "usage: carma cancel ID... [--json] [--socket PATH]\n");
        json_decref(ids);
        return 2;
    }
    if (json_array_size(ids) == 0) {
        fprintf(stderr, "usage: carma cancel ID... [--json] [--socket PATH]\n");
        json_decref(ids);
        return 2;
    }
    json_t *req = cli_req("cancel");
    json_object_set_new(req, "ids", ids);
    json_t *resp;
    int st = cli_call(&c, "cancel", req, &resp);
    if (st)
        return st;
    if (c.json)
        cli_print_json(resp);
    json_decref(resp);
    return 0;
}
