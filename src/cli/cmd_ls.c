/* carma ls: list jobs. */
#include <stdio.h>
#include <string.h>

#include "cli/client.h"
#include "cli/commands.h"

int cmd_ls(int argc, char **argv)
{
    struct cli_conn c;
    cli_conn_init(&c);
    int all = 0;
    for (int i = 1; i < argc; i++) {
        int r = cli_common_opt(&c, argc, argv, &i);
        if (r > 0)
            continue;
        if (r == 0 && (!strcmp(argv[i], "--all") || !strcmp(argv[i], "-a"))) {
            all = 1;
            continue;
        }
        if (r == 0 && (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))) {
            printf("usage: carma ls [--all] [--json] [--socket PATH]\n"
                   "Lists your queued and running jobs (--all: finished ones too).\n");
            return 0;
        }
        fprintf(stderr, "usage: carma ls [--all] [--json] [--socket PATH]\n");
        return 2;
    }
    json_t *req = cli_req("ls");
    json_object_set_new(req, "all", json_boolean(all));
    json_t *resp;
    int st = cli_call(&c, "ls", req, &resp);
    if (st)
        return st;
    json_t *jobs = json_object_get(resp, "jobs");
    if (c.json) {
        cli_print_json(jobs);
    } else {
        printf("%-6s %-20s %-10s %-10s %3s %4s %-14s %8s\n", "ID", "NAME", "USER", "STATE", "ATT",
               "GPUS", "SUBMITTED", "RUNTIME");
        size_t k;
        json_t *j;
        json_array_foreach(jobs, k, j) {
            char sub[32], run[32];
            cli_fmt_time(json_object_get(j, "submit_time"), sub, sizeof sub);
            cli_fmt_dur(json_object_get(j, "start_time"), json_object_get(j, "end_time"), run,
                        sizeof run);
            char name[128], user[64];
            cli_cell(name, sizeof name, json_string_value(json_object_get(j, "name")), 20);
            cli_cell(user, sizeof user, json_string_value(json_object_get(j, "user")), 10);
            printf("%-6lld %s %s %-10s %3lld %4lld %-14s %8s\n",
                   (long long)json_integer_value(json_object_get(j, "id")), name, user,
                   json_string_value(json_object_get(j, "state")),
                   (long long)json_integer_value(json_object_get(j, "attempts")),
                   (long long)json_integer_value(json_object_get(j, "gpus")), sub, run);
        }
    }
    json_decref(resp);
    return 0;
}
