/* carmad benchmarks on simulated GPUs (the daemon runs in a child process):
 *   - submit-to-launch latency on idle GPUs, p50 / p99 (target p99 <= 5 ms): from
 *     the client sending `submit` to the job's process running (a shell that
 *     writes a line into a FIFO as soon as it runs);
 *   - sustained durable submissions per second from 16 concurrent clients, each
 *     acknowledged only after its commit (target >= 1,000/s); run as root with
 *     CARMA_BENCH_AS=USER, the clients are that user, so that carmad checks their
 *     paths with their rights (carma_asuser) as it does for every user but root;
 *   - a burst: the time from the end of a job holding all 8 GPUs to the start of the
 *     last of the 32 jobs queued behind it, which carmad places at once and starts
 *     side by side (each shepherd's start overlapping the others');
 *   - carmad's CPU use while idle with 8 GPUs sampled every second (target < 0.5%
 *     of one core);
 *   - how long carmad keeps a ping waiting while another client submits jobs whose
 *     summaries take the estimator a tenth of a second or more each (the estimate queue
 *     works them out off carmad's loop; before it, a ping waited for the whole estimate). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "proto/proto.h"
#include "util/clock.h"
#include "util/csv.h"

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The job of the latency test is as small as a real process gets (a shell that writes
 * one line into the FIFO), so that the figure is carma's time and not the job's own
 * start-up; the bench reads the FIFO and takes the time when the line arrives. */
static json_t *submit_job(const char *script, const char *fifo, uint32_t gpus,
                          uint64_t mem_mib)
{
    json_t *job = json_pack("{s:[s,s,s,s],s:s,s:{s:s},s:i}", "argv", "/bin/sh", "-c", script,
                            fifo, "cwd", "/", "env", "PATH", "/usr/bin:/bin", "gpus", (int)gpus);
    if (mem_mib)
        json_object_set_new(job, "mem_mib", json_integer((json_int_t)mem_mib));
    return json_pack("{s:i,s:s,s:o}", "v", 1, "op", "submit", "job", job);
}

static json_t *submit_req(const char *fifo, uint64_t mem_mib)
{
    return submit_job("echo started > \"$0\"", fifo, 1, mem_mib);
}

/* Sends a submission (and frees it): 0 when carmad accepted it, else -1 with err. */
static int submit(const char *sock, json_t *req, struct carma_err *err)
{
    json_t *resp = NULL;
    int rc = carma_client_request(sock, req, &resp, err);
    if (rc == 0 && !json_is_true(json_object_get(resp, "ok")))
        rc = carma_err_set(err, -EPROTO, "carmad refused the submission");
    json_decref(req);
    json_decref(resp);
    return rc ? -1 : 0;
}

/* Waits until process pid is gone (it is not ours to reap): at most 5 s. */
static int wait_gone(pid_t pid)
{
    for (int i = 0; i < 500; i++) {
        if (kill(pid, 0) < 0 && errno == ESRCH)
            return 0;
        usleep(10000);
    }
    return -1;
}

/* CPU seconds used so far by process pid, all its threads, in nanoseconds' resolution (the
 * kernel's CPU clock of the process). /proc/PID/stat counts in clock ticks (10 ms): over the
 * 10 s idle window that is 0.1% of a core, and an idle carmad read as 0.000%. -1: unknown. */
static double cpu_s(pid_t pid)
{
    clockid_t cid;
    struct timespec ts;
    if (clock_getcpuclockid(pid, &cid) != 0 || clock_gettime(cid, &ts) != 0)
        return -1;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The file system holding path, for the durable submissions' line: their commits'
 * fsyncs cost what that file system makes them cost, and on tmpfs (a RAM disk, /tmp on
 * some distributions) an fsync does nothing, so the figure is not of durable ones. */
static const char *fs_name(const char *path)
{
    struct statfs sf;
    if (statfs(path, &sf) < 0)
        return "an unknown file system";
    switch ((unsigned long)sf.f_type) {
    case 0xEF53UL:
        return "ext2/3/4";
    case 0x58465342UL:
        return "xfs";
    case 0x9123683EUL:
        return "btrfs";
    case 0x794C7630UL:
        return "overlayfs";
    case 0x01021994UL:
        return "tmpfs: fsync does nothing, NOT durable";
    case 0x858458F6UL:
        return "ramfs: fsync does nothing, NOT durable";
    default:
        return "another file system";
    }
}

/* The host's floor under that latency: the same job started as carmad starts it (a
 * process that forks the job's process, which runs the shell), with no carmad, no store
 * and no handshake; p50 and p99 over n runs, in ms. */
static int host_floor(const char *fifo, int n, double *lat)
{
    for (int i = 0; i < n; i++) {
        double t0 = carma_mono_s();
        pid_t p = fork();
        if (p < 0)
            return -1;
        if (p == 0) {
            pid_t q = fork();
            if (q == 0) {
                execl("/bin/sh", "/bin/sh", "-c", "echo started > \"$0\"", fifo, (char *)NULL);
                close(open(fifo, O_WRONLY)); /* failed: the reader sees an empty line */
                _exit(127);
            }
            int st;
            if (q < 0)
                close(open(fifo, O_WRONLY));
            else
                waitpid(q, &st, 0);
            _exit(0);
        }
        int fd = open(fifo, O_RDONLY);
        char b[64];
        ssize_t r = fd >= 0 ? read(fd, b, sizeof b) : -1;
        if (fd >= 0)
            close(fd);
        lat[i] = (carma_mono_s() - t0) * 1e3;
        int st;
        waitpid(p, &st, 0);
        if (r <= 0)
            return -1;
        usleep(2000);
    }
    qsort(lat, (size_t)n, sizeof lat[0], cmp_d);
    return 0;
}

/* Section 2: NBURST one-GPU jobs of 1 GiB queue behind a job that holds all 8 GPUs (it
 * declares their whole memory); when it ends carmad places them in one step. Prints the
 * time from its end to the start of the last of them. 0, or -1 (said why). */
static int burst(const char *sock, const char *fifo)
{
    enum { NBURST = 32 };
    struct carma_err err;
    /* opened read-write: the jobs' opens never wait, and the reader never sees an end */
    int fd = open(fifo, O_RDWR | O_NONBLOCK);
    if (fd < 0 ||
        submit(sock, submit_job("echo $$ > \"$0\"; exec sleep 600", fifo, 8, 40960), &err) < 0) {
        fprintf(stderr, "bench_daemon: burst: the holding job: %s\n",
                fd < 0 ? strerror(errno) : err.msg);
        return -1;
    }
    long holder = 0;
    char b[4096];
    size_t got = 0;
    for (int i = 0; i < 1000 && !memchr(b, '\n', got); i++) {
        ssize_t r = read(fd, b + got, sizeof b - 1 - got);
        if (r > 0)
            got += (size_t)r;
        else
            usleep(10000);
    }
    b[got] = 0;
    if (sscanf(b, "%ld", &holder) != 1 || holder <= 1) {
        fprintf(stderr, "bench_daemon: burst: the holding job did not report its pid\n");
        close(fd);
        return -1;
    }
    for (int i = 0; i < NBURST; i++)
        if (submit(sock, submit_job("echo s > \"$0\"", fifo, 1, 1024), &err) < 0) {
            fprintf(stderr, "bench_daemon: burst: submit failed: %s\n", err.msg);
            close(fd);
            return -1;
        }
    usleep(300000); /* queued: nothing of theirs in the FIFO yet */
    got = 0;
    while (read(fd, b, sizeof b) > 0)
        ;
    double t0 = carma_mono_s();
    kill((pid_t)holder, SIGTERM);
    int started = 0;
    while (started < NBURST && carma_mono_s() - t0 < 30) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        if (poll(&pf, 1, 1000) <= 0)
            continue;
        ssize_t r = read(fd, b, sizeof b);
        for (ssize_t k = 0; k < r; k++)
            started += b[k] == '\n';
    }
    double t1 = carma_mono_s();
    close(fd);
    if (started < NBURST) {
        fprintf(stderr, "bench_daemon: burst: %d of %d jobs started\n", started, NBURST);
        return -1;
    }
    printf("burst of launches (a job holding 8 GPUs ends, %d one-GPU jobs queued behind it): "
           "the last started %.1f ms after its end\n",
           NBURST, (t1 - t0) * 1e3);
    usleep(200000);
    return 0;
}

/* A layer CSV of 88 bytes whose replay is the largest the estimator takes (4036 layers,
 * long free lists: docs/estimator.md, Speed; bench_estimate times it alone). */
#define SLOWEST_SUMMARY "tests/fuzz/corpus/summary_csv/repeats_long_free_lists.csv"

/* A job with summary csv, gradient accumulation on 2 GPUs, its argv's tag k. */
static json_t *heavy_submit(const char *csv, int k)
{
    char tag[16];
    snprintf(tag, sizeof tag, "%d", k);
    json_t *job = json_pack("{s:[s,s],s:s,s:{s:s},s:i,s:s,s:i,s:i,s:b}", "argv", "true", tag, "cwd",
                            "/", "env", "PATH", "/usr/bin:/bin", "gpus", 2, "summary", csv, "batch",
                            64, "seq_len", 512, "gradient_accumulation", 1);
    return json_pack("{s:i,s:s,s:o}", "v", 1, "op", "submit", "job", job);
}

/* 5. A child submits NHEAVY such jobs one after the other (they stay queued behind the
 * job holding every GPU) while this process pings carmad on one connection, again and
 * again: the pings' waits, and the submissions'. */
static int pings_during_estimates(const char *sock)
{
    enum { NHEAVY = 8, NPING = 100000 };
    char *csv;
    size_t len;
    struct carma_err err;
    if (carma_file_read(SLOWEST_SUMMARY, 1 << 20, &csv, &len, &err) < 0) {
        fprintf(stderr, "bench_daemon: %s\n", err.msg);
        return -1;
    }
    int pfd[2];
    if (pipe(pfd) < 0) {
        free(csv);
        return -1;
    }
    pid_t kid = fork();
    if (kid < 0) {
        free(csv);
        return -1;
    }
    if (kid == 0) {
        close(pfd[0]);
        for (int k = 0; k < NHEAVY; k++) {
            double t0 = carma_mono_s();
            if (submit(sock, heavy_submit(csv, k), &err) < 0) {
                fprintf(stderr, "bench_daemon: heavy submit: %s\n", err.msg);
                _exit(1);
            }
            double ms = (carma_mono_s() - t0) * 1e3;
            if (write(pfd[1], &ms, sizeof ms) != sizeof ms)
                _exit(1);
        }
        _exit(0);
    }
    close(pfd[1]);
    free(csv);
    static double ping[NPING];
    double sub[NHEAVY];
    int np = 0, ns = 0, bad = 0;
    int fd = carma_client_connect(sock, &err);
    if (fd < 0)
        bad = 1;
    json_t *req = json_pack("{s:i,s:s}", "v", 1, "op", "ping");
    while (!bad && ns < NHEAVY) {
        struct pollfd p = {.fd = pfd[0], .events = POLLIN};
        if (poll(&p, 1, 0) > 0) {
            ssize_t n = read(pfd[0], &sub[ns], sizeof sub[ns]);
            if (n != sizeof sub[ns]) {
                bad = 1;
                break;
            }
            ns++;
            continue;
        }
        json_t *resp = NULL;
        double t0 = carma_mono_s();
        if (carma_client_call(fd, req, &resp, &err) || !json_is_true(json_object_get(resp, "ok")))
            bad = 1;
        json_decref(resp);
        if (np < NPING)
            ping[np++] = (carma_mono_s() - t0) * 1e3;
        usleep(500);
    }
    json_decref(req);
    if (fd >= 0)
        close(fd);
    int st;
    if (waitpid(kid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
        bad = 1;
    close(pfd[0]);
    if (bad || !np) {
        fprintf(stderr, "bench_daemon: pings during estimates failed\n");
        return -1;
    }
    qsort(ping, (size_t)np, sizeof ping[0], cmp_d);
    qsort(sub, NHEAVY, sizeof sub[0], cmp_d);
    printf("ping while %d large summaries are submitted (each %.0f ms to submit, median; "
           "the estimator's work): %d pings, p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
           NHEAVY, sub[NHEAVY / 2], np, ping[np / 2], ping[np * 99 / 100], ping[np - 1]);
    return 0;
}

int main(void)
{
    char dir[] = "/tmp/carma-bench-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char state[128], sock[128], cfg[128], fifo[128];
    snprintf(state, sizeof state, "%s/state", dir);
    snprintf(sock, sizeof sock, "%s/carmad.sock", dir);
    snprintf(cfg, sizeof cfg, "%s/carmad.ini", dir);
    snprintf(fifo, sizeof fifo, "%s/stamp.fifo", dir);
    FILE *f = fopen(cfg, "w");
    /* (the 16 clients' 4000 queued jobs pass the 1000 a user but root may have active:
     * CARMA_BENCH_AS's user needs a larger max_jobs_per_user) */
    fprintf(f,
            "[daemon]\nallow_root_jobs = true\nmonitor_interval = 1\nmax_jobs_per_user = 10000\n");
    fclose(f);
    mkfifo(fifo, 0600);
    /* the shepherd carmad spawns: BUILD/bin/carma-shepherd, this is BUILD/bench/... */
    char shep[PATH_MAX];
    ssize_t sl = readlink("/proc/self/exe", shep, sizeof shep - 32);
    if (sl <= 0)
        return 1;
    shep[sl] = 0;
    char *slash = strrchr(shep, '/');
    snprintf(slash ? slash : shep, 32, "/../bin/carma-shepherd");
    if (access(shep, X_OK)) {
        fprintf(stderr, "bench_daemon: %s: %s (make builds it)\n", shep, strerror(errno));
        return 1;
    }
    pid_t dpid = fork();
    if (dpid == 0) {
        int nul = open("/dev/null", O_WRONLY);
        dup2(nul, 2);
        struct carmad_opts o = {.state_dir = state,
                                .socket_path = sock,
                                .gpus = "sim:8xa100-40gb",
                                .config_path = cfg,
                                .foreground = 1,
                                .shepherd = shep};
        struct carmad *d;
        struct carma_err err;
        if (carmad_open(&d, &o, &err))
            _exit(1);
        int rc = carmad_run(d, &err);
        carmad_close(d);
        _exit(rc ? 1 : 0);
    }
    struct carma_err err;
    int up = 0;
    for (int i = 0; i < 400 && !up; i++) {
        int fd = carma_client_connect(sock, &err);
        if (fd >= 0) {
            close(fd);
            up = 1;
        } else {
            usleep(10000);
        }
    }
    if (!up) {
        fprintf(stderr, "bench_daemon: carmad did not start\n");
        kill(dpid, SIGKILL);
        return 1;
    }

    /* 1. submit-to-launch latency on idle GPUs. */
    enum { NLAT = 300 };
    static double lat[NLAT];
    for (int i = 0; i < NLAT; i++) {
        json_t *req = submit_req(fifo, 0);
        double t0 = carma_mono_s();
        if (submit(sock, req, &err) < 0) {
            fprintf(stderr, "bench_daemon: submit failed: %s\n", err.msg);
            kill(dpid, SIGKILL);
            return 1;
        }
        /* An end of file is the job before closing the FIFO late (this open found it still
         * open as a writer): open again for this job's line. */
        char b[64] = "";
        ssize_t n = 0;
        for (int tries = 0; n == 0 && tries < 100; tries++) {
            int fd = open(fifo, O_RDONLY);
            n = fd < 0 ? -1 : read(fd, b, sizeof b - 1);
            if (fd >= 0)
                close(fd);
        }
        if (n <= 0) {
            fprintf(stderr, "bench_daemon: job %d's start was not heard\n", i);
            kill(dpid, SIGKILL);
            return 1;
        }
        lat[i] = (carma_mono_s() - t0) * 1e3;
        usleep(2000); /* let it end: the GPUs are idle for the next one */
    }
    qsort(lat, NLAT, sizeof lat[0], cmp_d);
    printf("submit-to-launch latency (idle simulated GPUs, %d jobs): p50 %.2f ms, p99 %.2f ms, "
           "max %.2f ms (target p99 <= 5 ms)\n", NLAT, lat[NLAT / 2], lat[NLAT * 99 / 100],
           lat[NLAT - 1]);
    if (host_floor(fifo, NLAT, lat) < 0)
        printf("  this host's floor: not measured (a fork or the shell failed)\n");
    else
        printf("  this host's floor (the same job forked by a forked process, no carmad, %d "
               "runs): p50 %.2f ms, p99 %.2f ms\n",
               NLAT, lat[NLAT / 2], lat[NLAT * 99 / 100]);

    /* 2. a burst of launches. */
    if (burst(sock, fifo) < 0) {
        kill(dpid, SIGKILL);
        return 1;
    }

    /* 3. idle CPU with 8 GPUs sampled every second. */
    usleep(500000);
    double c0 = cpu_s(dpid), w0 = carma_mono_s();
    sleep(10);
    double c1 = cpu_s(dpid), w1 = carma_mono_s();
    if (c0 < 0 || c1 < 0)
        printf("carmad idle CPU: not measured (the kernel gave no CPU clock for carmad, pid "
               "%d)\n",
               (int)dpid);
    else
        printf("carmad idle CPU (8 simulated GPUs, 1 s monitor interval, %.0f s): %.3f%% of one "
               "core (target < 0.5%%)\n",
               w1 - w0, 100.0 * (c1 - c0) / (w1 - w0));

    /* 4. sustained durable submissions: 16 clients, jobs that stay queued. A job that
     * holds all 8 GPUs (it reports its pid and its shepherd's, then sleeps) comes first;
     * the others declare more memory than any GPU, so each needs a GPU to itself. */
    if (submit(sock, submit_job("echo $$ $PPID > \"$0\"; exec sleep 600", fifo, 8, 0), &err) < 0) {
        fprintf(stderr, "bench_daemon: submit failed: %s\n", err.msg);
        kill(dpid, SIGKILL);
        return 1;
    }
    long holder = 0, shepherd = 0;
    {
        FILE *ff = fopen(fifo, "r");
        if (!ff || fscanf(ff, "%ld %ld", &holder, &shepherd) != 2 || holder <= 1 ||
            shepherd <= 1) {
            fprintf(stderr, "bench_daemon: the holding job did not report its pid\n");
            kill(dpid, SIGKILL);
            return 1;
        }
        fclose(ff);
    }
    enum { NCLI = 16, PER = 250 };
    const char *as = geteuid() == 0 ? getenv("CARMA_BENCH_AS") : NULL;
    struct passwd *pw = as && *as ? getpwnam(as) : NULL;
    if (as && *as && !pw) {
        fprintf(stderr, "bench_daemon: CARMA_BENCH_AS=%s: no such user\n", as);
        kill(dpid, SIGKILL);
        return 1;
    }
    if (pw && (chmod(dir, 0711) < 0 || chmod(sock, 0666) < 0)) {
        perror("bench_daemon: chmod");
        kill(dpid, SIGKILL);
        return 1;
    }
    double t0 = carma_mono_s();
    for (int c = 0; c < NCLI; c++) {
        if (fork() == 0) {
            if (pw && (setgroups(0, NULL) < 0 || setgid(pw->pw_gid) < 0 ||
                       setuid(pw->pw_uid) < 0))
                _exit(1);
            int fd = carma_client_connect(sock, &err);
            if (fd < 0)
                _exit(1);
            for (int k = 0; k < PER; k++) {
                json_t *req = submit_req(fifo, 1u << 30), *resp = NULL;
                if (carma_client_call(fd, req, &resp, &err) ||
                    !json_is_true(json_object_get(resp, "ok")))
                    _exit(1);
                json_decref(req);
                json_decref(resp);
            }
            _exit(0);
        }
    }
    int bad = 0, st;
    for (int c = 0; c < NCLI; c++)
        if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
            bad++;
    double t1 = carma_mono_s();
    printf("durable submissions (WAL, synchronous=FULL, store on %s, %d clients x %d%s%s): %.0f "
           "per second%s (target >= 1000)\n",
           fs_name(state), NCLI, PER, pw ? ", as " : "", pw ? pw->pw_name : "",
           NCLI * PER / (t1 - t0), bad ? " (SOME FAILED)" : "");
    if (pings_during_estimates(sock) < 0)
        bad = 1;
    kill(dpid, SIGTERM);
    waitpid(dpid, NULL, 0);
    /* Jobs outlive carmad by design: end the holder, and let its shepherd record it. */
    kill((pid_t)holder, SIGTERM);
    if (wait_gone((pid_t)holder) < 0 || wait_gone((pid_t)shepherd) < 0) {
        fprintf(stderr, "bench_daemon: the holding job (pid %ld) did not end\n", holder);
        bad = 1;
    }
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        return 1;
    return bad ? 1 : 0;
}
