/* carma cancel: end jobs (SIGTERM to every process of the job, SIGKILL after a
 * grace; queued jobs leave the queue), named by id or all at once (--all). */
#include <stdio.h>
#include <string.h>

#include "cli/client.h"
#include "cli/commands.h"
#include "proto/proto.h"
#include "util/err.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: carma cancel ID... [--json] [--socket PATH]\n"
               "       carma cancel --all [--queued | --running] [--name NAME]\n"
               "                    [--user NAME | --all-users] [--json] [--socket PATH]\n"
               "Ends jobs: a queued one leaves the queue; a running one gets SIGTERM, and\n"
               "SIGKILL after kill_grace seconds. A user cancels their own jobs; root any.\n"
               "--all: every queued and running job of yours that carmad has recorded when\n"
               "the request arrives, matched and cancelled at once (none of them missed, one\n"
               "starting meanwhile included; a submission still in its path check or its\n"
               "estimate is recorded after, and not cancelled), narrowed to the --queued or\n"
               "the --running ones and to those named NAME (carma submit --name, exactly).\n"
               "Root says whose: --user NAME (root's own: --user root) or --all-users.\n"
               "Prints the ids cancelled; none matching is said, exit 0.\n");
}

/* The jobs a cancel --all matched, in words: "queued job of yours named 'x'". */
static void say_matched(FILE *f, const char *state, const char *name, const char *user,
                        int all_users)
{
    fprintf(f, "%s job ", state ? state : "queued or running");
    if (all_users) {
        fputs("of any user", f);
    } else if (user) {
        fputs("of user ", f);
        cli_put_visible(f, user);
    } else {
        fputs("of yours", f);
    }
    if (name) {
        fputs(" named '", f);
        cli_put_visible(f, name);
        fputc('\'', f);
    }
}

/* carma cancel --all's request (filters as given, checked) and its answer printed. */
static int cancel_all(struct cli_conn *c, const char *state, const char *name, const char *user,
                      int all_users)
{
    json_t *req = cli_req("cancel");
    json_object_set_new(req, "all", json_true());
    if (state)
        json_object_set_new(req, "state", json_string(state));
    if (name)
        json_object_set_new(req, "name", json_string(name));
    if (user)
        json_object_set_new(req, "user", json_string(user));
    if (all_users)
        json_object_set_new(req, "all_users", json_true());
    json_t *resp;
    int st = cli_call(c, "cancel", req, &resp);
    if (st)
        return st;
    if (cli_check("cancel", resp, "answer", "cancelled:ai count:i")) {
        json_decref(resp);
        return 1;
    }
    if (c->json) {
        cli_print_json(resp);
        json_decref(resp);
        return 0;
    }
    const json_t *done = json_object_get(resp, "cancelled"), *v;
    long long count = (long long)json_integer_value(json_object_get(resp, "count"));
    size_t k;
    if (!count) { /* not an error (scancel too exits 0): what was asked holds */
        fputs("carma cancel: no ", stderr);
        say_matched(stderr, state, name, user, all_users);
        fputs(": nothing cancelled\n", stderr);
        json_decref(resp);
        return 0;
    }
    printf("cancelled %lld job%s:", count, count == 1 ? "" : "s");
    json_array_foreach(done, k, v)
        printf(" %lld", (long long)json_integer_value(v));
    if ((long long)json_array_size(done) < count)
        printf(" (the first %zu listed)", json_array_size(done));
    putchar('\n');
    json_decref(resp);
    return 0;
}

int cmd_cancel(int argc, char **argv)
{
    struct cli_conn c;
    cli_conn_init(&c);
    json_t *ids = json_array();
    int all = 0, all_users = 0;
    const char *state = NULL, *name = NULL, *user = NULL, *filter = NULL;
    static const char *const valued[] = {"--name", "--user", NULL};
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            usage(stdout);
            json_decref(ids);
            return 0;
        }
        int r = cli_common_opt(&c, argc, argv, &i);
        if (r > 0)
            continue;
        const char *a = argv[i];
        uint64_t id;
        if (r == 0 && !strcmp(a, "--all")) {
            all = 1;
            continue;
        }
        if (r == 0 && (!strcmp(a, "--queued") || !strcmp(a, "--running"))) {
            if (state && strcmp(state, a + 2)) {
                fprintf(stderr, "carma cancel: --queued and --running: give one (neither: "
                                "both kinds)\n");
                json_decref(ids);
                return 2;
            }
            state = a + 2;
            filter = a;
            continue;
        }
        if (r == 0 && !strcmp(a, "--all-users")) {
            all_users = 1;
            filter = a;
            continue;
        }
        const char *const *o;
        for (o = valued; *o; o++) {
            size_t l = strlen(*o);
            if (r == 0 && !strncmp(a, *o, l) && (a[l] == '=' || (!a[l] && i + 1 < argc)))
                break;
        }
        if (*o) {
            size_t l = strlen(*o);
            const char *v = a[l] == '=' ? a + l + 1 : argv[++i];
            size_t max = o == valued ? CARMA_PROTO_MAX_NAME : CARMA_PROTO_MAX_USER;
            if (!v[0] || strlen(v) > max) {
                fprintf(stderr, "carma cancel: %s '%s': 1 to %zu bytes expected\n", *o,
                        carma_quote(v, 40).s, max);
                json_decref(ids);
                return 2;
            }
            *(o == valued ? &name : &user) = v;
            filter = *o;
            continue;
        }
        if (r == 0 && a[0] != '-') {
            if (!(id = cli_parse_id("cancel", a))) {
                json_decref(ids);
                return 2;
            }
            json_array_append_new(ids, json_integer((json_int_t)id));
            continue;
        }
        cli_bad_arg("cancel", argc, argv, i, valued);
        usage(stderr);
        json_decref(ids);
        return 2;
    }
    const char *bad = NULL;
    if (all && json_array_size(ids))
        bad = "job ids and --all exclude each other: give ids, or --all (with its filters)";
    else if (!all && filter)
        bad = "--queued, --running, --name, --user and --all-users filter --all's jobs: "
              "they need --all";
    else if (user && all_users)
        bad = "--user and --all-users exclude each other: one user's jobs, or every user's";
    if (bad) {
        fprintf(stderr, "carma cancel: %s\n", bad);
        json_decref(ids);
        return 2;
    }
    if (all) {
        json_decref(ids);
        return cancel_all(&c, state, name, user, all_users);
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
