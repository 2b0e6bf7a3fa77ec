/* carma top: a live terminal view (ncurses) of carmad's GPUs, memory bars, SM activity
 * and power, and the jobs on each; any user may run it (it asks the socket, like
 * `carma gpus`). q quits. */
#include <curses.h>
#include <locale.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/client.h"
#include "cli/commands.h"
#include "proto/proto.h"
#include "util/thread.h"
#include "util/utf8.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: carma top [--interval SECONDS] [--socket PATH]\n"
               "Live view of the GPUs carmad manages and the jobs on them; q quits.\n");
}

static double num(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : -1;
}

/* Text from the cursor to the right edge at most: curses would wrap the rest onto the
 * next row, over what is drawn there. Cut at whole UTF-8 sequences, counted in terminal
 * columns (cli_char_cols; a byte that starts none shows as '?'). */
static int row; /* the row at() began: once the cursor leaves it, the row is full */

static void vclip(const char *fmt, va_list ap)
{
    char buf[512];
    vsnprintf(buf, sizeof buf, fmt, ap);
    if (getcury(stdscr) != row)
        return;
    int room = getmaxx(stdscr) - getcurx(stdscr);
    for (const unsigned char *p = (const unsigned char *)buf; *p;) {
        size_t l = carma_utf8_seq(p);
        int w = (int)cli_char_cols(p, l);
        if (w > room) /* a wide character in the last column would wrap */
            break;
        if (l)
            addnstr((const char *)p, (int)l);
        else
            addch('?');
        room -= w;
        p += l ? l : 1;
    }
}

/* printw, clipped to the row. */
static void add(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vclip(fmt, ap);
    va_end(ap);
}

/* mvprintw, clipped to the row; nothing below the last row. */
static void at(int y, int x, const char *fmt, ...)
{
    row = -1; /* what add() appends to a refused at() is refused too */
    if (y < 0 || y >= getmaxy(stdscr) || x >= getmaxx(stdscr))
        return;
    move(y, x);
    row = y;
    va_list ap;
    va_start(ap, fmt);
    vclip(fmt, ap);
    va_end(ap);
}

/* A bar of width w filled to frac (0..1), drawn with '|' as nvtop does. */
static void bar(int y, int x, int w, double frac, int pair)
{
    if (w < 3)
        return;
    int fill = frac > 0 ? (int)(frac * (w - 2) + 0.5) : 0;
    if (fill > w - 2)
        fill = w - 2;
    mvaddch(y, x, '[');
    if (has_colors())
        attron(COLOR_PAIR(pair));
    for (int i = 0; i < w - 2; i++)
        mvaddch(y, x + 1 + i, i < fill ? '|' : ' ');
    if (has_colors())
        attroff(COLOR_PAIR(pair));
    mvaddch(y, x + w - 1, ']');
}

static void fmt_dur(double s, char *b, size_t cap)
{
    if (s < 0)
        snprintf(b, cap, "-");
    else if (s < 3600)
        snprintf(b, cap, "%dm%02ds", (int)s / 60, (int)s % 60);
    else
        snprintf(b, cap, "%dh%02dm", (int)s / 3600, ((int)s % 3600) / 60);
}

static void draw(json_t *r, const char *err)
{
    erase();
    int rows, cols;
    getmaxyx(stdscr, rows, cols);
    char t[32] = "";
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(t, sizeof t, "%H:%M:%S", &tm);
    if (!r) {
        at(0, 0, "carma top  %s  -  %s", t, err ? err : "no answer");
        at(2, 0, "q: quit");
        refresh();
        return;
    }
    json_t *gpus = json_object_get(r, "gpus");
    at(0, 0, "carma top  %s  backend %s  policy %s  %zu GPUs  %lld queued   q: quit", t,
       json_string_value(json_object_get(r, "backend")),
       json_string_value(json_object_get(r, "policy")), json_array_size(gpus),
       (long long)json_integer_value(json_object_get(r, "queued")));
    int y = 2;
    size_t k;
    json_t *g;
    int bw = cols > 100 ? 30 : cols > 70 ? 20 : 10;
    json_array_foreach(gpus, k, g) {
        if (y >= rows - 1)
            break;
        double used = num(g, "mem_used_mib"), total = num(g, "mem_total_mib");
        double sm = num(g, "smact"), ut = num(g, "util"), pw = num(g, "power_w"),
               pl = num(g, "power_limit_w");
        json_t *win = json_object_get(g, "window");
        double risk = num(win, "risk");
        attron(A_BOLD);
        at(y, 0, "GPU %lld %-.28s", (long long)json_integer_value(json_object_get(g, "index")),
           json_string_value(json_object_get(g, "name")));
        attroff(A_BOLD);
        if (json_is_true(json_object_get(g, "drained"))) {
            const char *why = json_string_value(json_object_get(g, "drain_reason"));
            add("  DRAINED%s%s", why ? ": " : "", why ? why : "");
        }
        add("  %s", json_string_value(json_object_get(g, "sharing")));
        y++;
        at(y, 2, "MEM");
        bar(y, 6, bw, total > 0 && used > 0 ? used / total : 0, 1);
        if (used >= 0)
            add(" %6.1f/%.1f GiB", used / 1024, total / 1024);
        else /* no fresh sample */
            add(" %6s/%.1f GiB", "-", total / 1024);
        y++;
        at(y, 2, "SM ");
        double a = sm >= 0 ? sm : ut;
        bar(y, 6, bw, a >= 0 ? a : 0, 2);
        if (sm >= 0)
            add(" SMACT %4.2f", sm);
        else if (ut >= 0)
            add(" util  %4.2f (no SMACT)", ut);
        else
            add(" -");
        if (risk >= 0)
            add("  risk %4.2f", risk);
        double oc = num(g, "smocc"), dr = num(g, "drama");
        if (oc >= 0)
            add("  SMOCC %4.2f", oc);
        if (dr >= 0)
            add("  DRAMA %4.2f", dr);
        y++;
        at(y, 2, "PWR");
        bar(y, 6, bw, pw >= 0 && pl > 0 ? pw / pl : 0, 3);
        if (pw >= 0)
            add(" %5.0f W", pw);
        if (pl > 0)
            add(" / %.0f W", pl);
        y++;
        json_t *jl = json_object_get(g, "job_list");
        size_t x;
        json_t *j;
        if (json_array_size(jl) == 0 && y < rows - 1)
            at(y++, 4, "no carma jobs%s",
               json_integer_value(json_object_get(g, "foreign_processes")) > 0
                   ? " (foreign processes)"
                   : "");
        json_array_foreach(jl, x, j) {
            if (y >= rows - 1)
                break;
            char d[32];
            fmt_dur(num(j, "run_s"), d, sizeof d);
            const char *name = json_string_value(json_object_get(j, "name"));
            double ss = num(j, "solo_smact");
            char user[48], nm[96]; /* columns by characters: %-20.20s cuts bytes */
            cli_cell(user, sizeof user, json_string_value(json_object_get(j, "user")), 10);
            cli_cell(nm, sizeof nm, name ? name : "-", 20);
            char mem[24]; /* null: NVML could not say */
            const char *mk = json_object_get(j, "mem_now_mib") ? "mem_now_mib" : "mem_mib";
            if (num(j, mk) >= 0)
                snprintf(mem, sizeof mem, "%7.0f", num(j, mk));
            else
                snprintf(mem, sizeof mem, "%7s", "-");
            at(y++, 4, "job %-6lld %s %s %s MiB  %8s",
               (long long)json_integer_value(json_object_get(j, "id")), user, nm, mem, d);
            if (ss >= 0)
                add("  solo %.2f", ss);
        }
        y++;
    }
    refresh();
}

/* What the asking thread hands the screen: carmad's latest gpus answer or why there is
 * none. The keys are read meanwhile, so that q quits at once while carmad is slow or
 * stuck (an answer may take CARMA_TIMEOUT, 60 s). Freed by the last of the two to let
 * go of it (refs), the screen's side maybe returning while a request is under way. */
struct top_feed {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char socket[sizeof(((struct cli_conn *)0)->socket)];
    double interval;
    json_t *resp; /* NULL: err says why */
    char err[CARMA_ERR_MAX + 32];
    int fresh, now, stop, refs; /* now: a key asked for a refresh at once */
};

static void top_feed_put(struct top_feed *f)
{
    pthread_mutex_lock(&f->mu);
    int last = --f->refs == 0;
    pthread_mutex_unlock(&f->mu);
    if (last) {
        json_decref(f->resp);
        pthread_cond_destroy(&f->cv);
        pthread_mutex_destroy(&f->mu);
        free(f);
    }
}

static void *top_ask(void *arg)
{
    struct top_feed *f = arg;
    for (;;) {
        pthread_mutex_lock(&f->mu);
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        double ns = (double)until.tv_nsec + f->interval * 1e9;
        until.tv_sec += (time_t)(ns / 1e9);
        until.tv_nsec = (long)(ns - (double)(time_t)(ns / 1e9) * 1e9);
        while (!f->stop && !f->now && pthread_cond_timedwait(&f->cv, &f->mu, &until) == 0)
            ;
        f->now = 0;
        int stop = f->stop;
        pthread_mutex_unlock(&f->mu);
        if (stop)
            break;
        struct carma_err err = {{0}};
        json_t *req = cli_req("gpus");
        json_t *r = NULL;
        char why[256], msg[sizeof f->err] = "";
        if (carma_client_request(f->socket, req, &r, &err) != 0) {
            snprintf(msg, sizeof msg, "%s", err.msg);
        } else if (!json_is_true(json_object_get(r, "ok"))) { /* carmad's word: busy, ... */
            const char *m = json_string_value(json_object_get(r, "message"));
            snprintf(msg, sizeof msg, "carmad refused: %s", m ? m : "no reason given");
            json_decref(r);
            r = NULL;
        } else if (cli_shape_gpus(r, why, sizeof why)) {
            snprintf(msg, sizeof msg, "malformed response from carmad: %s", why);
            json_decref(r);
            r = NULL;
        }
        json_decref(req);
        pthread_mutex_lock(&f->mu);
        json_decref(f->resp);
        f->resp = r;
        snprintf(f->err, sizeof f->err, "%s", msg);
        f->fresh = 1;
        pthread_mutex_unlock(&f->mu);
    }
    top_feed_put(f);
    return NULL;
}

int cmd_top(int argc, char **argv)
{
    struct cli_conn c;
    cli_conn_init(&c);
    double interval = 1.0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) { /* cli_common_opt would take it and do nothing */
            fprintf(stderr, "carma top: --json is not supported: top is a live view ('carma "
                            "gpus --json' gives one snapshot)\n");
            return 2;
        }
        int r = cli_common_opt(&c, argc, argv, &i);
        if (r > 0)
            continue;
        if (r == 0 && cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        }
        if (r == 0 && i + 1 < argc && !strcmp(argv[i], "--interval")) {
            char *end;
            interval = strtod(argv[++i], &end);
            if (*end || !(interval >= 0.1 && interval <= 3600)) {
                fprintf(stderr, "carma top: --interval: seconds in [0.1, 3600] expected\n");
                return 2;
            }
            continue;
        }
        static const char *const valued[] = {"--interval", NULL};
        cli_bad_arg("top", argc, argv, i, valued);
        usage(stderr);
        return 2;
    }
    /* Check the daemon first, so that a wrong socket is a plain error, not a screen. */
    json_t *resp = NULL;
    int st = cli_call(&c, "top", cli_req("gpus"), &resp);
    if (st)
        return st;
    if (cli_check_gpus("top", resp)) {
        json_decref(resp);
        return 1;
    }
    /* A live view needs a terminal (initscr() would exit the process on failure, and
     * without one the loop would write escape codes to a file forever). */
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        fprintf(stderr, "carma top: needs a terminal; 'carma gpus' prints one snapshot\n");
        json_decref(resp);
        return 1;
    }
    setlocale(LC_ALL, "");
    cli_locale_ctype();
    SCREEN *scr = newterm(NULL, stdout, stdin);
    if (!scr) {
        const char *term = getenv("TERM");
        fprintf(stderr,
                "carma top: cannot drive the terminal (TERM=%s); 'carma gpus' prints "
                "one snapshot\n",
                term && *term ? term : "unset");
        json_decref(resp);
        return 1;
    }
    cbreak();
    noecho();
    curs_set(0);
    keypad(stdscr, TRUE);
    if (has_colors()) {
        start_color();
        use_default_colors();
        init_pair(1, COLOR_GREEN, -1);
        init_pair(2, COLOR_CYAN, -1);
        init_pair(3, COLOR_YELLOW, -1);
    }
    struct top_feed *f = calloc(1, sizeof *f);
    pthread_t th;
    int started = 0;
    if (f && pthread_mutex_init(&f->mu, NULL) == 0) {
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        if (pthread_cond_init(&f->cv, &ca) == 0) {
            snprintf(f->socket, sizeof f->socket, "%s", c.socket);
            f->interval = interval;
            f->resp = resp; /* the first answer, asked above */
            f->fresh = 1;
            f->refs = 2;
            /* no signals there: curses' handlers (SIGINT, SIGTSTP, SIGWINCH) touch the
             * screen, which only this thread may */
            started = carma_thread_start(&th, NULL, top_ask, f) == 0;
            if (!started)
                pthread_cond_destroy(&f->cv);
        }
        pthread_condattr_destroy(&ca);
        if (!started)
            pthread_mutex_destroy(&f->mu);
    }
    if (!started) {
        endwin();
        delscreen(scr);
        fprintf(stderr, "carma top: cannot start the thread that asks carmad\n");
        if (f && f->resp == resp)
            f->resp = NULL;
        free(f);
        json_decref(resp);
        return 1;
    }
    pthread_detach(th);
    resp = NULL;  /* the feed's now */
    timeout(100); /* keys are read at once, answers drawn as they come */
    for (int redraw = 1;;) {
        pthread_mutex_lock(&f->mu);
        if (f->fresh || redraw) {
            json_t *r = json_incref(f->resp);
            char errbuf[sizeof f->err];
            snprintf(errbuf, sizeof errbuf, "%s", f->err);
            f->fresh = 0;
            pthread_mutex_unlock(&f->mu);
            draw(r, errbuf);
            json_decref(r);
        } else {
            pthread_mutex_unlock(&f->mu);
        }
        int ch = getch();
        if (ch == 'q' || ch == 'Q' || ch == 27)
            break;
        redraw = ch == KEY_RESIZE;
        if (ch != ERR && ch != KEY_RESIZE) { /* any other key: a refresh now */
            pthread_mutex_lock(&f->mu);
            f->now = 1;
            pthread_cond_signal(&f->cv);
            pthread_mutex_unlock(&f->mu);
        }
    }
    pthread_mutex_lock(&f->mu);
    f->stop = 1;
    pthread_cond_signal(&f->cv);
    pthread_mutex_unlock(&f->mu);
    top_feed_put(f);
    endwin();
    delscreen(scr);
    json_decref(resp);
    return 0;
}
