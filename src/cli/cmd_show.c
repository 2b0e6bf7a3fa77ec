/* carma show: one job in detail. */
#include <stdio.h>
#include <string.h>

#include "cli/client.h"
#include "util/timearg.h"
#include "cli/commands.h"
#include "proto/proto.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: carma show ID [--json] [--socket PATH]\n"
               "One job: its command, state, memory bound and what it came from, each\n"
               "attempt (GPUs, times, outcome, peak memory) and its usage; a queued job\n"
               "also why it is not running yet (waiting: code and the figures).\n");
}

int cmd_show(int argc, char **argv)
{
    struct cli_conn c;
    cli_conn_init(&c);
    uint64_t id = 0;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        }
        int r = cli_common_opt(&c, argc, argv, &i);
        if (r > 0)
            continue;
        if (r == 0 && argv[i][0] != '-' && !id) {
            if (!(id = cli_parse_id("show", argv[i])))
                return 2;
            continue;
        }
        cli_bad_arg("show", argc, argv, i, NULL);
        usage(stderr);
        return 2;
    }
    if (!id) {
        usage(stderr);
        return 2;
    }
    json_t *req = cli_req("show");
    json_object_set_new(req, "id", json_integer((json_int_t)id));
    json_t *resp;
    int st = cli_call(&c, "show", req, &resp);
    if (st)
        return st;
    size_t k;
    json_t *a;
    json_t *j = json_object_get(resp, "job");
    if (cli_check("show", resp, "answer", "job:o") ||
        cli_check("show", j, "job",
                  "id:i name:s user:s state:s argv:as cwd:s bound_basis:s? reason:s? "
                  "waiting_code:s? waiting_reason:s? attempt_list:ao? queue_position:i? "
                  "queue_length:i? queue_order:s? after:ai? after_pending:ai?") ||
        cli_check_each("show", j, "attempt_list",
                       "n:i outcome:s? gpus:as? gpu_uuids:as? reason:s?")) {
        json_decref(resp);
        return 1;
    }
    if (c.json) {
        cli_print_json(j);
        json_decref(resp);
        return 0;
    }
    char t1[32], t2[32], t3[32];
    printf("job %lld  ", (long long)json_integer_value(json_object_get(j, "id")));
    cli_put_visible(stdout, json_string_value(json_object_get(j, "name")));
    printf("\n  user      ");
    cli_put_visible(stdout, json_string_value(json_object_get(j, "user")));
    printf("\n  state     %s\n", json_string_value(json_object_get(j, "state")));
    printf("  command  "); /* each argument as a shell word: the command as it runs */
    json_array_foreach(json_object_get(j, "argv"), k, a) {
        putchar(' ');
        cli_put_word(stdout, json_string_value(a), k == 0);
    }
    printf("\n  cwd       ");
    cli_put_word(stdout, json_string_value(json_object_get(j, "cwd")), 0);
    putchar('\n');
    /* the peak over every attempt, the running one's included */
    long long peak = (long long)json_integer_value(json_object_get(j, "peak_mib"));
    long long att_peak = (long long)json_integer_value(json_object_get(j, "attempt_peak_mib"));
    /* memory: what the job declared (--mem, a .rad's figure), none when it declared none */
    long long mem = (long long)json_integer_value(json_object_get(j, "mem_mib"));
    printf("  gpus      %lld   memory ", (long long)json_integer_value(json_object_get(j, "gpus")));
    if (mem > 0)
        printf("%lld MiB", mem);
    else
        printf("none declared");
    printf(" (bound %lld, peak %lld",
           (long long)json_integer_value(json_object_get(j, "bound_mib")),
           att_peak > peak ? att_peak : peak);
    if (json_is_integer(json_object_get(j, "mem_now_mib")))
        printf(", now %lld", (long long)json_integer_value(json_object_get(j, "mem_now_mib")));
    else if (json_is_null(json_object_get(j, "mem_now_mib")))
        printf(", now unknown"); /* NVML gives its processes no memory figure */
    printf(")\n");
    if (json_is_string(json_object_get(j, "bound_basis"))) {
        printf("  bound     at submission: ");
        cli_put_visible(stdout, json_string_value(json_object_get(j, "bound_basis")));
        putchar('\n');
    }
    cli_fmt_time(json_object_get(j, "submit_time"), t1, sizeof t1);
    cli_fmt_time(json_object_get(j, "start_time"), t2, sizeof t2);
    cli_fmt_time(json_object_get(j, "end_time"), t3, sizeof t3);
    printf("  submitted %s  started %s  ended %s\n", t1, t2, t3);
    printf("  attempts  %lld of at most %lld\n",
           (long long)json_integer_value(json_object_get(j, "attempts")),
           (long long)json_integer_value(json_object_get(j, "max_attempts")));
    /* carma submit --time-limit: per attempt; the running attempt's time left */
    if (json_is_integer(json_object_get(j, "time_limit_s"))) {
        char lim[32], left[32];
        carma_duration_format(lim, sizeof lim,
                              (uint64_t)json_integer_value(json_object_get(j, "time_limit_s")));
        printf("  limit     %s per attempt", lim);
        json_t *tl = json_object_get(j, "time_left_s");
        if (json_is_integer(tl)) {
            carma_duration_format(left, sizeof left, (uint64_t)json_integer_value(tl));
            printf(", %s left", left);
        }
        printf("\n");
    }
    {
        json_t *w = json_object_get(j, "wait_s"), *ss = json_object_get(j, "solo_smact");
        char run[32], wait[32];
        double r = json_number_value(json_object_get(j, "run_s"));
        snprintf(run, sizeof run, "%.0f s", r);
        if (json_is_number(w))
            snprintf(wait, sizeof wait, "%.0f s", json_number_value(w));
        else
            snprintf(wait, sizeof wait, "-");
        printf("  usage     run %s  waited %s  GPU-hours %.3f  energy %.1f kJ", run, wait,
               json_number_value(json_object_get(j, "gpu_seconds")) / 3600,
               json_number_value(json_object_get(j, "energy_j")) / 1000);
        if (json_is_number(ss))
            printf("  solo SMACT %.2f", json_number_value(ss));
        printf("\n");
    }
    /* the jobs it runs after (carma submit --after), those it still waits for */
    json_t *after = json_object_get(j, "after"), *pend = json_object_get(j, "after_pending");
    if (json_array_size(after)) {
        printf("  after    ");
        json_array_foreach(after, k, a)
            printf(" %lld", (long long)json_integer_value(a));
        if (json_array_size(pend)) {
            printf(" (waits for");
            json_array_foreach(pend, k, a)
                printf(" %lld", (long long)json_integer_value(a));
            printf(")");
        }
        putchar('\n');
    }
    const char *reason = json_string_value(json_object_get(j, "reason"));
    if (reason) {
        printf("  reason    ");
        cli_put_visible(stdout, reason);
        putchar('\n');
    }
    const char *waiting = json_string_value(json_object_get(j, "waiting_reason"));
    const char *wcode = json_string_value(json_object_get(j, "waiting_code"));
    if (waiting) { /* why it is not running: `code: sentence` */
        printf("  waiting   ");
        if (wcode) {
            cli_put_visible(stdout, wcode);
            printf(": ");
        }
        cli_put_visible(stdout, waiting);
        putchar('\n');
    }
    json_t *qp = json_object_get(j, "queue_position"), *ql = json_object_get(j, "queue_length");
    const char *qo = json_string_value(json_object_get(j, "queue_order"));
    if (json_is_integer(qp) && json_is_integer(ql)) {
        printf("  position  %lld of %lld in the queue", (long long)json_integer_value(qp),
               (long long)json_integer_value(ql));
        if (qo) {
            printf(" (order ");
            cli_put_visible(stdout, qo);
            putchar(')');
        }
        putchar('\n');
    }
    json_array_foreach(json_object_get(j, "attempt_list"), k, a) {
        char s[32], d[32];
        cli_fmt_time(json_object_get(a, "start_time"), s, sizeof s);
        cli_fmt_dur(json_object_get(a, "start_time"), json_object_get(a, "end_time"), d, sizeof d);
        const char *o = json_string_value(json_object_get(a, "outcome"));
        printf("  #%lld  %s  %8s  %-10s gpus", (long long)json_integer_value(json_object_get(a, "n")),
               s, d, o ? o : "running");
        size_t g;
        json_t *u;
        json_t *uuids = json_object_get(a, "gpu_uuids"); /* "gpus" from an older carmad */
        json_array_foreach(uuids ? uuids : json_object_get(a, "gpus"), g, u)
            printf(" %s", json_string_value(u));
        if (json_is_integer(json_object_get(a, "peak_mib"))) {
            /* a peak that is only a lower limit says why (attempts.peak_partial, store.h):
             * it is no history for the next run */
            long long part = json_integer_value(json_object_get(a, "peak_partial"));
            printf("  peak %s%lld MiB", part ? ">=" : "",
                   (long long)json_integer_value(json_object_get(a, "peak_mib")));
            static const struct {
                unsigned bit;
                const char *why;
            } partial[] = {{CARMA_PEAK_DOWNTIME, "carmad was down"},
                           {CARMA_PEAK_UNKNOWN, "no figure from NVML"},
                           {CARMA_PEAK_BRIEF, "seen at one tick"}};
            for (size_t b = 0, n = 0; b < sizeof partial / sizeof partial[0]; b++)
                if (part & partial[b].bit)
                    printf("%s%s", n++ ? ", " : " (not history: ", partial[b].why);
            if (part)
                putchar(')');
        }
        if (json_is_number(json_object_get(a, "energy_j")))
            printf("  %.1f kJ", json_number_value(json_object_get(a, "energy_j")) / 1000);
        if (json_is_number(json_object_get(a, "solo_smact")))
            printf("  solo SMACT %.2f", json_number_value(json_object_get(a, "solo_smact")));
        printf("\n");
        /* an earlier attempt's end in words (the last one's is the job's reason above) */
        const char *why = json_string_value(json_object_get(a, "reason"));
        if (why && !(reason && !strcmp(why, reason))) {
            const char *colon = strstr(why, ": ");
            if (!strncmp(why, "attempt ", 8) && colon)
                why = colon + 2;
            printf("        ");
            cli_put_visible(stdout, why);
            putchar('\n');
        }
    }
    json_decref(resp);
    return 0;
}
