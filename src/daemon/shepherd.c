#include "daemon/shepherd.h"
#include "util/clock.h"
#include "util/csv.h"
#include "util/fd.h"
#include "util/proc.h"
#include "util/rlimits.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/keyctl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* carma_proc_stat, with the process's state letter (R, S, D, Z, ...) in *state too. */
static int proc_stat_state(pid_t pid, pid_t *ppid, pid_t *sid, uint64_t *starttime, char *state);

int carma_proc_stat(pid_t pid, pid_t *ppid, pid_t *sid, uint64_t *starttime)
{
    char state;
    return proc_stat_state(pid, ppid, sid, starttime, &state);
}

static int proc_stat_state(pid_t pid, pid_t *ppid, pid_t *sid, uint64_t *starttime, char *state_out)
{
    char buf[1024];
    if (carma_proc_read(pid, "stat", buf, sizeof buf))
        return -1;
    char *p = strrchr(buf, ')'); /* comm may hold spaces and parentheses */
    int st_pp, st_pg, st_sid;
    char state;
    if (!p || sscanf(p + 1, " %c %d %d %d", &state, &st_pp, &st_pg, &st_sid) != 4)
        return -1;
    *state_out = state;
    if (ppid)
        *ppid = st_pp;
    if (sid)
        *sid = st_sid;
    if (starttime) {
        /* After ") ": field 3 (state) onwards; starttime is field 22. */
        *starttime = 0;
        int field = 2;
        for (char *s = p + 1; *s; s++)
            if (*s == ' ' && ++field == 22) {
                *starttime = strtoull(s + 1, NULL, 10);
                break;
            }
    }
    return 0;
}

uint64_t carma_proc_starttime(pid_t pid)
{
    uint64_t t;
    return carma_proc_stat(pid, NULL, NULL, &t) == 0 ? t : 0;
}

/* Whether process pid's environment holds both NUL-terminated entries a and b. Read
 * whole (the job's is under the protocol's 1 MiB; a larger one is not the job's). */
static int proc_env_has(pid_t pid, const char *a, const char *b)
{
    enum { ENV_MAX = 4u << 20 };
    int fd = carma_proc_open(pid, "environ");
    if (fd < 0)
        return 0;
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap);
    ssize_t n = 0;
    while (buf && (n = read(fd, buf + len, cap - len)) > 0) {
        len += (size_t)n;
        if (len == cap) {
            char *nb = cap < ENV_MAX ? realloc(buf, cap * 2) : NULL;
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    close(fd);
    int ha = 0, hb = 0;
    for (size_t o = 0; buf && n == 0 && o < len;) {
        const char *e = buf + o;
        size_t l = strnlen(e, len - o);
        ha |= l == strlen(a) && memcmp(e, a, l) == 0;
        hb |= l == strlen(b) && memcmp(e, b, l) == 0;
        o += l + 1;
    }
    free(buf);
    return ha && hb;
}

int carma_proc_kill_session(pid_t sid, uid_t uid, uint64_t leader_start, uint64_t job,
                            uint32_t attempt)
{
    char mark_id[48], mark_att[48];
    snprintf(mark_id, sizeof mark_id, "CARMA_JOB_ID=%llu", (unsigned long long)job);
    snprintf(mark_att, sizeof mark_att, "CARMA_JOB_ATTEMPT=%u", attempt);
    if (sid <= 1)
        return 0;
    uint64_t now_start;
    /* a process holds the pid now: not the leader (then the leader's session has no
     * member left, or the pid would not have been handed out again) */
    if (carma_proc_stat(sid, NULL, NULL, &now_start) == 0 && leader_start &&
        now_start != leader_start)
        return 0;
    enum { SEEN = 1024 };
    pid_t seen[SEEN]; /* signalled already: counted once (they may take a while to die) */
    int total = 0;
    for (int pass = 0; pass < 8; pass++) { /* again for what forked during the scan */
        DIR *d = opendir("/proc");
        if (!d)
            return total;
        int fresh = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] < '1' || e->d_name[0] > '9')
                continue;
            pid_t p = (pid_t)atoi(e->d_name), s;
            char state;
            /* the process is pinned (a pidfd) before it is looked at, and signalled through
             * that: the checks take a while (its environment: megabytes), and by a kill(p)
             * after them p may have ended and its pid gone to another user's process */
            int pfd = (int)syscall(SYS_pidfd_open, p, 0);
            if ((pfd < 0 && errno != ENOSYS) || p == sid ||
                proc_stat_state(p, NULL, &s, NULL, &state) || s != sid || state == 'Z' ||
                carma_proc_uid(p, 0) != (long long)uid || !proc_env_has(p, mark_id, mark_att) ||
                (pfd >= 0 ? syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0)
                          : kill(p, SIGKILL)) != 0) {
                if (pfd >= 0)
                    close(pfd);
                continue;
            }
            if (pfd >= 0)
                close(pfd);
            int k = 0;
            while (k < total && k < SEEN && seen[k] != p)
                k++;
            if (k < total && k < SEEN)
                continue;
            if (total < SEEN)
                seen[total] = p;
            total++;
            fresh++;
        }
        closedir(d);
        if (!fresh)
            break;
    }
    return total;
}

/* Sends sig to process pid only while it is still the one that started at start (clock
 * ticks): the pidfd pins a process, and the start time read once it is open says whether
 * that process is the one found before (a pid freed since may name a stranger's process
 * now). 0 when signalled. */
static int signal_same(pid_t pid, uint64_t start, int sig)
{
    uint64_t now;
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0 && errno != ENOSYS)
        return -1; /* gone */
    int same = carma_proc_stat(pid, NULL, NULL, &now) == 0 && now == start;
    int rc = -1;
    if (same && fd >= 0)
        rc = syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0) == 0 ? 0 : -1;
    else if (same) /* a kernel before 5.3: the start time checked a moment ago */
        rc = kill(pid, sig);
    if (fd >= 0)
        close(fd);
    return rc;
}

int carma_proc_kill_tree(pid_t self, int sig, void (*scanned)(void *), void *ctx)
{
    enum { MAXP = 32768 };
    static pid_t pids[MAXP], ppids[MAXP];
    static uint64_t starts[MAXP];
    static unsigned char mark[MAXP];
    size_t n = 0;
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < MAXP) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        pid_t p = (pid_t)atoi(e->d_name), pp, sid;
        if (p == self || carma_proc_stat(p, &pp, &sid, &starts[n]))
            continue;
        pids[n] = p;
        ppids[n] = pp;
        mark[n] = sid == self || pp == self;
        n++;
    }
    closedir(d);
    for (int changed = 1, pass = 0; changed && pass < 64; pass++) {
        changed = 0;
        for (size_t i = 0; i < n; i++) {
            if (mark[i])
                continue;
            for (size_t k = 0; k < n; k++)
                if (mark[k] && pids[k] == ppids[i]) {
                    mark[i] = 1;
                    changed = 1;
                    break;
                }
        }
    }
    if (scanned)
        scanned(ctx);
    /* the scan and the marking take a while, the longer the more processes the job keeps:
     * a process found then may have ended since, and its pid gone to another user's */
    int count = 0;
    for (size_t i = 0; i < n; i++)
        if (mark[i] && signal_same(pids[i], starts[i], sig) == 0)
            count++;
    return count;
}

int carma_file_write_atomic(const char *dir, const char *name, const char *text, int durable,
                            struct carma_err *err)
{
    char tmp[PATH_MAX], dst[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, name);
    snprintf(dst, sizeof dst, "%s/%s", dir, name);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) /* nothing made: what is there (a folder, a link) is not ours to remove */
        return carma_err_set(err, -errno, "%s: open: %s", tmp, strerror(errno));
    const char *call = NULL;
    size_t len = strlen(text), off = 0;
    while (off < len && !call) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            call = "write";
        else
            off += (size_t)w;
    }
    if (!call && durable && fsync(fd) < 0)
        call = "fsync";
    int e = errno;
    if (close(fd) < 0 && !call) {
        call = "close";
        e = errno;
    }
    if (!call && rename(tmp, dst) < 0) {
        call = "rename";
        e = errno;
    }
    if (call) {
        /* the temporary file, ours, is not left behind for the next write to find */
        unlink(tmp);
        if (!strcmp(call, "rename"))
            return carma_err_set(err, -e, "%s: rename to %s: %s", tmp, dst, strerror(e));
        return carma_err_set(err, -e, "%s: %s: %s", tmp, call, strerror(e));
    }
    if (!durable)
        return 0;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return 0;
}

/* The status file's space, taken when the shepherd starts (before the job runs): at the
 * end it is written into that, so a file system the job's logs (or anyone's) filled since
 * cannot lose the job's outcome. More than a status line ever needs. */
enum { STATUS_RESERVE = 4096 };

/* Creates dir/.status.tmp with STATUS_RESERVE bytes allocated: its descriptor, or a
 * negative errno (nothing left behind). */
static int status_reserve(const char *dir)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s/.status.tmp", dir);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -errno;
    /* (glibc writes the blocks itself where the file system has no fallocate; no fsync:
     * the blocks are the file's once allocated, and a crash ends the job anyway) */
    int e = posix_fallocate(fd, 0, STATUS_RESERVE);
    if (e) {
        close(fd);
        unlink(tmp);
        return -e;
    }
    return fd;
}

/* One try at the status: text into the reserved descriptor (no new block: it overwrites
 * what status_reserve allocated and cuts the rest), fsync, the rename, the folder's fsync.
 * 0 or a negative errno; fail_now (a test hook) fails it as a full disk would. */
static int status_try(int fd, const char *dir, const char *text, int fail_now)
{
    if (fail_now)
        return -ENOSPC;
    size_t len = strlen(text), off = 0;
    while (off < len) {
        ssize_t w = pwrite(fd, text + off, len - off, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? -errno : -EIO;
        off += (size_t)w;
    }
    if (ftruncate(fd, (off_t)len) < 0 || fsync(fd) < 0)
        return -errno;
    char tmp[PATH_MAX], dst[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s/.status.tmp", dir);
    snprintf(dst, sizeof dst, "%s/status", dir);
    if (rename(tmp, dst) < 0)
        /* its name removed (by hand, by a stray helper): written anew, not tried for ever */
        return errno == ENOENT ? carma_file_write_atomic(dir, "status", text, 1, NULL) : -errno;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return 0;
}

/* Writes the status until it is written: a shepherd that ended without one would make
 * carmad count the attempt lost, whatever the job did. Each failure is logged through
 * syslog (the shepherd's stderr is /dev/null by then; carmad keeps watching its pidfd,
 * the job shown running), and tried again after 1 s, doubling to a minute. The test hook
 * CARMA_TEST_STATUS_FAILS=N (carmad passes it on) fails the first N tries. */
static void status_write(int fd, const char *dir, const char *text)
{
    const char *hook = getenv("CARMA_TEST_STATUS_FAILS");
    long fails = hook ? strtol(hook, NULL, 10) : 0;
    unsigned wait_s = 1;
    for (long k = 0;; k++) {
        int rc = status_try(fd, dir, text, k < fails);
        if (rc == 0) {
            if (k > 0)
                syslog(LOG_NOTICE, "%s/status written after %ld failed tries", dir, k);
            return;
        }
        syslog(LOG_ERR, "cannot write %s/status: %s; trying again in %u s", dir, strerror(-rc),
               wait_s);
        struct timespec ts = {(time_t)wait_s, 0};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
            ;
        if (wait_s < 60)
            wait_s = wait_s * 2 > 60 ? 60 : wait_s * 2;
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void write_str(int fd, const char *s)
{
    ssize_t r = write(fd, s, strlen(s));
    (void)r;
}

/* The job process: never returns. rl: the limits it runs with, NULL: the shepherd's. */
static void job_exec(const struct carma_shepherd_spec *sp, const struct rlimit *rl, int out,
                     int errfd)
{
    sigset_t none;
    sigemptyset(&none);
    for (int s = 1; s < NSIG; s++)
        signal(s, SIG_DFL);
    sigprocmask(SIG_SETMASK, &none, NULL);
    setpgid(0, 0);
    int nul = open("/dev/null", O_RDONLY);
    if (nul >= 0 && nul != 0) {
        dup2(nul, 0);
        close(nul);
    }
    dup2(out, 1);
    dup2(errfd, 2);
    if (out > 2)
        close(out);
    if (errfd > 2)
        close(errfd);
    /* the kernel's OOM killer weighs the job as any process: not with carmad's adjustment (a
     * daemon often runs with a negative one, which the shepherd and the job would inherit);
     * written while still root (raising it needs no privilege either; a failure is not the
     * job's problem) */
    int oom = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (oom >= 0) {
        write_str(oom, "0\n");
        close(oom);
    }
    /* the submitter's limits, set while still root: never more than its submitter had (a
     * login's pam_limits), nor than the shepherd has (raising a hard limit would need
     * CAP_SYS_RESOURCE, which a root in a container may lack) */
    for (int r = 0; rl && r < CARMA_RLIMITS_N; r++) {
        struct rlimit now, want = rl[r];
        if (getrlimit((__rlimit_resource_t)r, &now) == 0 && now.rlim_max < want.rlim_max)
            want.rlim_max = now.rlim_max;
        if (want.rlim_cur > want.rlim_max)
            want.rlim_cur = want.rlim_max;
        if (setrlimit((__rlimit_resource_t)r, &want) < 0) {
            char msg[256];
            snprintf(msg, sizeof msg, "carma: cannot set resource limit %d of the job: %s\n", r,
                     strerror(errno));
            write_str(2, msg);
            _exit(126);
        }
    }
    /* A session keyring of the job's own: it would otherwise keep carmad's, which a
     * service manager gives carmad (systemd's KeyringMode=private) and every job of every
     * user then shares, root's keys in it and whatever one user's job adds (a Kerberos
     * KEYRING: cache) read by the next's. Made while root, on root's key quota (a user's,
     * 200 keys shared with their logins, would fail jobs past it); the job possesses it,
     * as a login its pam_keyinit one. Where keyctl is not allowed (a container's seccomp
     * filter: EPERM or ENOSYS) the job cannot use it either. */
    if (sp->switch_user && syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) < 0 &&
        errno != ENOSYS && errno != EPERM) {
        char msg[256];
        snprintf(msg, sizeof msg, "carma: cannot give the job a session keyring of its own: %s\n",
                 strerror(errno));
        write_str(2, msg);
        _exit(126);
    }
    if (sp->switch_user) {
        if (setgid(sp->gid) < 0 || initgroups(sp->user, sp->gid) < 0 || setuid(sp->uid) < 0) {
            char msg[256];
            snprintf(msg, sizeof msg, "carma: cannot switch to user %s: %s\n", sp->user,
                     strerror(errno));
            write_str(2, msg);
            _exit(126);
        }
    }
    if (sp->switch_user) /* the user's keys under it, as after a login (failure: none) */
        syscall(SYS_keyctl, KEYCTL_LINK, KEY_SPEC_USER_KEYRING, KEY_SPEC_SESSION_KEYRING);
    umask(sp->umask);
    if (chdir(sp->cwd) < 0) {
        char msg[PATH_MAX + 128];
        snprintf(msg, sizeof msg, "carma: cannot enter %s: %s\n", sp->cwd, strerror(errno));
        write_str(2, msg);
        _exit(126);
    }
    environ = (char **)sp->envp;
    execvp(sp->argv[0], sp->argv);
    int e = errno;
    char msg[PATH_MAX + 128];
    snprintf(msg, sizeof msg, "carma: cannot run '%s': %s\n", sp->argv[0], strerror(e));
    write_str(2, msg);
    _exit(e == ENOENT ? 127 : 126);
}

static int open_log(const struct carma_shepherd_spec *sp, const char *name)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", sp->dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0 && sp->switch_user && fchown(fd, sp->uid, sp->gid) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The helper cannot start: why, on stderr (a run by hand) and to carmad over the ready
 * descriptor ('e' and the reason, one write), which fails the attempt with it. */
static int sh_fail(int status, const char *why)
{
    fprintf(stderr, "carma-shepherd: %s\n", why);
    char b[CARMA_SHEPHERD_WHY_MAX + 1];
    int n = snprintf(b, sizeof b, "e%s", why);
    struct stat st; /* carmad's pipe, not whatever a caller by hand has at 3 */
    if (n > 0 && fstat(3, &st) == 0 && S_ISFIFO(st.st_mode)) {
        ssize_t w = write(3, b, (size_t)n < sizeof b ? (size_t)n : sizeof b - 1);
        (void)w; /* carmad gone: nothing to tell */
    }
    return status;
}

/* Whether the carmad that started this helper is gone: the ready pipe's reader closed
 * (its write end, fd, then polls as an error). */
static int carmad_gone(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    return poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP));
}

/* The shepherd's life: never returns. */
static void shepherd_main(const struct carma_shepherd_spec *sp, const struct rlimit *rl,
                          int ready_w, int go_r)
{
    setsid();
    int subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGALRM);
    sigprocmask(SIG_SETMASK, &set, NULL);
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP)
            signal(s, SIG_DFL);
    signal(SIGPIPE, SIG_IGN);

    openlog("carma-shepherd", LOG_PID, LOG_DAEMON);
    /* A helper held up past its carmad's end (killed, crashed) touches nothing: the
     * restarted carmad found the attempt never started and may have launched it again in
     * this folder, whose files are then another helper's. */
    if (carmad_gone(ready_w))
        _exit(0);
    /* the status's space first: once the job may run, its outcome must be written */
    int sfd = status_reserve(sp->dir);
    if (sfd < 0) {
        char why[PATH_MAX + 64];
        snprintf(why, sizeof why, "cannot reserve %s/.status.tmp: %s", sp->dir, strerror(-sfd));
        _exit(sh_fail(125, why));
    }
    if (carmad_gone(ready_w))
        _exit(0); /* (the reserved file may be the other helper's too: left) */
    char line[96];
    snprintf(line, sizeof line, "%d %llu\n", (int)getpid(),
             (unsigned long long)carma_proc_starttime(getpid()));
    /* Not fsync'd: it matters only while the machine is up (a reboot ends
     * every job anyway), and it is on the launch path. */
    int wr = carma_file_write_atomic(sp->dir, "shepherd", line, 0, NULL);
    if (wr < 0) {
        char tmp[PATH_MAX];
        snprintf(tmp, sizeof tmp, "%s/.status.tmp", sp->dir);
        unlink(tmp);
        char why[PATH_MAX + 64];
        snprintf(why, sizeof why, "cannot write %s/shepherd: %s", sp->dir, strerror(-wr));
        _exit(sh_fail(125, why));
    }
    /* Handshake: carmad recorded the attempt before spawning; it says "go" once it
     * knows the shepherd file exists. If carmad died in between, the job must not
     * run (a restarted carmad may already have re-queued it). */
    char b = 'r', g = 0;
    if (write(ready_w, &b, 1) != 1 || read(go_r, &g, 1) != 1 || g != 'g') {
        /* its own record only (a helper of the attempt launched again may have replaced
         * it, with the reserved file then its) */
        pid_t rp;
        uint64_t rt;
        if (carma_shepherd_read_pid(sp->dir, &rp, &rt) == 0 && rp == getpid()) {
            char path[PATH_MAX];
            snprintf(path, sizeof path, "%s/.status.tmp", sp->dir);
            unlink(path);
            snprintf(path, sizeof path, "%s/shepherd", sp->dir);
            unlink(path);
        }
        _exit(0);
    }
    close(ready_w);
    close(go_r);
    /* carmad's stdout and stderr (a supervisor's pipe, journald's stream) are not kept for
     * the job's life, which would hold the reader's end of the pipe open past carmad's:
     * what the shepherd has to say from here on goes to carmad's log through the job's
     * status, or to syslog */
    int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (nul >= 0) {
        for (int k = 0; k < 3; k++)
            if (nul != k)
                dup2(nul, k);
        if (nul > 2)
            close(nul);
    }

    int out = open_log(sp, "stdout"), errfd = open_log(sp, "stderr");
    int code = -1, sig = 0, cancelled = 0;
    pid_t job = -1;
    if (out >= 0 && errfd >= 0)
        job = fork();
    if (job == 0)
        job_exec(sp, rl, out, errfd);
    if (job < 0) {
        code = 125; /* could not start: counts as a failure of the attempt */
        if (errfd >= 0)
            write_str(errfd, "carma: the shepherd could not start the job\n");
    }
    if (out >= 0)
        close(out);
    if (errfd >= 0)
        close(errfd);
    int grace_ms = (int)(sp->kill_grace_s * 1000.0);
    if (grace_ms < 0)
        grace_ms = 0;
    int job_done = job < 0;
    while (!job_done) {
        siginfo_t si;
        int s = sigwaitinfo(&set, &si);
        if (s < 0)
            continue;
        if (s == SIGCHLD) {
            /* each child that ended is looked at before it is reaped: the job's group is
             * killed while the job's zombie still holds its pid. Once reaped, the pid may be
             * handed out again, and kill(-job) from root would end the group of whatever
             * process took it and made itself a group leader (anyone's). */
            for (;;) {
                siginfo_t ci;
                ci.si_pid = 0;
                if (waitid(P_ALL, 0, &ci, WEXITED | WNOHANG | WNOWAIT) < 0 || ci.si_pid <= 0)
                    break;
                if (ci.si_pid == job)
                    kill(-job, SIGKILL); /* nothing it started may outlive it */
                int st;
                if (waitpid(ci.si_pid, &st, WNOHANG) != ci.si_pid)
                    break; /* (cannot be: it is a zombie) */
                if (ci.si_pid != job)
                    continue;
                if (WIFEXITED(st))
                    code = WEXITSTATUS(st);
                else if (WIFSIGNALED(st))
                    sig = WTERMSIG(st);
                job_done = 1;
            }
        } else if (s == SIGTERM || s == SIGINT || s == SIGHUP) {
            if (!cancelled) {
                cancelled = 1;
                kill(-job, SIGTERM);
                carma_proc_kill_tree(getpid(), SIGTERM, NULL, NULL);
                struct itimerval it = {.it_value = {grace_ms / 1000, (grace_ms % 1000) * 1000}};
                if (grace_ms == 0)
                    it.it_value.tv_usec = 1;
                setitimer(ITIMER_REAL, &it, NULL);
            }
        } else if (s == SIGALRM) {
            kill(-job, SIGKILL);
            carma_proc_kill_tree(getpid(), SIGKILL, NULL, NULL);
        }
    }
    /* The job's main process ended (its group was killed before it was reaped): nothing
     * it started may outlive it. As the
     * subreaper, the shepherd is the parent of every orphan of the job, and each other
     * descendant has a living parent among them: with no child left there is no
     * descendant, and the scan of /proc (milliseconds of CPU on a busy host, beside the
     * next job's launch) is skipped. */
    for (int round = 0; round < 100; round++) {
        int st;
        pid_t p;
        while ((p = waitpid(-1, &st, WNOHANG)) > 0)
            ;
        int none = p < 0 && errno == ECHILD;
        if (none && subreaper)
            break;
        /* (not a subreaper: orphans went to init, found only by the scan) */
        if (carma_proc_kill_tree(getpid(), SIGKILL, NULL, NULL) == 0 && none)
            break;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    char status[160];
    if (sig)
        snprintf(status, sizeof status, "signaled %d\ncancelled %d\nend %.6f\n", sig, cancelled,
                 now_s());
    else
        snprintf(status, sizeof status, "exited %d\ncancelled %d\nend %.6f\n", code, cancelled,
                 now_s());
    status_write(sfd, sp->dir, status);
    _exit(0);
}

/* The helper's command line (carma_shepherd_main parses it; internal, but parsed strictly):
 *   carma-shepherd --carma-shepherd-v5 DIR UID GID SWITCH GRACE_US NENV NARGV UMASK RLIMITS
 * (RLIMITS: util/rlimits.h text, or "-" for the shepherd's own)
 * with the handshake's ends at descriptors 3 (ready, written) and 4 (go, read), and the
 * job's working directory, user name, environment and command at 5: the cwd, the user,
 * then NENV and NARGV strings, each ending in a NUL, until carmad closes its end. Never in
 * the helper's own environment (it runs as carmad's user, root: a user's LD_PRELOAD must
 * not reach its dynamic loader) nor in its arguments (/proc/PID/cmdline is readable by
 * every user, who must not learn another user's cwd there either, which carma show keeps
 * from them; the job's environ only by its owner). */
#define SHEPHERD_MAGIC "--carma-shepherd-v5"
enum { SH_ARGC = 11 };            /* the path, the magic, DIR ... RLIMITS */
enum { SH_SPEC_MAX = 64u << 20 }; /* the environment and command: less */
/* fd moved to a descriptor >= 7 (close-on-exec), so the spawn's dup2 onto 3 to 6
 * cannot clobber it; -1 on failure (fd closed). */
static int fd_above_6(int fd)
{
    if (fd > 6)
        return fd;
    int n = fcntl(fd, F_DUPFD_CLOEXEC, 7);
    close(fd);
    return n;
}

/* The spawn's attributes and file actions: an empty signal mask, every signal at its
 * default, the three pipe ends at 3, 4 and 5, the program at 6 (exec'd through
 * /proc/self/fd/6; the helper closes it first thing), nothing else of carmad's past 6. */
static int spawn_setup(posix_spawn_file_actions_t *fa, posix_spawnattr_t *at, int ready_w, int go_r,
                       int spec_r, int exe_fd)
{
    /* every signal, glibc's internal ones too (which sigfillset leaves out, and its spawn
     * would otherwise leave ignored, a disposition exec keeps) */
    sigset_t none, all;
    sigemptyset(&none);
    memset(&all, 0xff, sizeof all);
    if (posix_spawnattr_setsigmask(at, &none) || posix_spawnattr_setsigdefault(at, &all) ||
        posix_spawnattr_setflags(at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF) ||
        posix_spawn_file_actions_adddup2(fa, ready_w, 3) ||
        posix_spawn_file_actions_adddup2(fa, go_r, 4) ||
        posix_spawn_file_actions_adddup2(fa, spec_r, 5) ||
        posix_spawn_file_actions_adddup2(fa, exe_fd, 6) ||
        posix_spawn_file_actions_addclosefrom_np(fa, 7))
        return -1;
    return 0;
}

/* Closes *fd when open. */
static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* Every descriptor and buffer of a start but its pidfd. */
static void start_release(struct carma_shepherd_start *st)
{
    carma_shepherd_release(st);
    free(st->spec);
    st->spec = NULL;
    free(st->dir);
    st->dir = NULL;
}

/* String i of what the helper reads at 5: the cwd, the user, nenv then nargv strings. */
static const char *spec_str(const struct carma_shepherd_spec *sp, size_t nenv, size_t i)
{
    return i == 0         ? sp->cwd
           : i == 1       ? sp->user
           : i - 2 < nenv ? sp->envp[i - 2]
                          : sp->argv[i - 2 - nenv];
}

/* The job's working directory, user, environment and command as the helper reads them
 * (each ending in a NUL) into st->spec: 0, or a negative errno with err set. */
static int spec_bytes(const struct carma_shepherd_spec *sp, size_t nenv, size_t nargv,
                      struct carma_shepherd_start *st, struct carma_err *err)
{
    size_t n = 0;
    for (size_t i = 0; i < 2 + nenv + nargv; i++)
        n += strlen(spec_str(sp, nenv, i)) + 1;
    if (n >= SH_SPEC_MAX) /* what read_spec refuses */
        return carma_err_set(err, -E2BIG, "the job's environment and command pass %u MiB",
                             SH_SPEC_MAX >> 20);
    if (!(st->spec = malloc(n)))
        return carma_err_set(err, -ENOMEM, "out of memory");
    for (size_t i = 0; i < 2 + nenv + nargv; i++) {
        const char *str = spec_str(sp, nenv, i);
        size_t l = strlen(str) + 1;
        memcpy(st->spec + st->spec_len, str, l);
        st->spec_len += l;
    }
    return 0;
}

int carma_shepherd_begin(const char *exe, int exe_fd, const struct carma_shepherd_spec *sp,
                         double wait_s, struct carma_shepherd_start *st, struct carma_err *err)
{
    memset(st, 0, sizeof *st);
    st->pidfd = st->ready_fd = st->go_fd = st->spec_fd = -1;
    size_t nenv = 0, nargv = 0;
    while (sp->envp[nenv])
        nenv++;
    while (sp->argv[nargv])
        nargv++;
    if (nargv == 0)
        return carma_err_set(err, -EINVAL, "a job with no command");
    int rc = spec_bytes(sp, nenv, nargv, st, err);
    if (!rc && !(st->dir = strdup(sp->dir)))
        rc = carma_err_set(err, -ENOMEM, "out of memory");
    if (rc) {
        start_release(st);
        return rc;
    }
    char uid[24], gid[24], grace[24], ne[24], na[24], um[24];
    snprintf(uid, sizeof uid, "%u", (unsigned)sp->uid);
    snprintf(gid, sizeof gid, "%u", (unsigned)sp->gid);
    snprintf(grace, sizeof grace, "%lld",
             sp->kill_grace_s > 0 ? (long long)(sp->kill_grace_s * 1e6 + 0.5) : 0LL);
    snprintf(ne, sizeof ne, "%zu", nenv);
    snprintf(na, sizeof na, "%zu", nargv);
    snprintf(um, sizeof um, "%u", (unsigned)(sp->umask & 0777));
    char *av[SH_ARGC + 1] = {(char *)exe,
                             SHEPHERD_MAGIC,
                             (char *)sp->dir,
                             uid,
                             gid,
                             sp->switch_user ? "1" : "0",
                             grace,
                             ne,
                             na,
                             um,
                             (char *)(sp->rlimits ? sp->rlimits : "-"),
                             NULL};
    /* the helper's environment: carmad's own sanitizer settings (a test build) and the
     * shepherd's test hook, else none */
    static const char *const keep[] = {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS",
                                       "CARMA_TEST_STATUS_FAILS"};
    enum { NKEEP = sizeof keep / sizeof *keep };
    char *env[NKEEP + 1] = {NULL};
    for (size_t i = 0, n = 0; i < NKEEP; i++) {
        const char *v = getenv(keep[i]);
        if (v && asprintf(&env[n], "%s=%s", keep[i], v) > 0)
            n++;
    }

    int ready[2] = {-1, -1}, go[2] = {-1, -1}, spec[2] = {-1, -1}, xfd = -1;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    int fa_ok = posix_spawn_file_actions_init(&fa) == 0, at_ok = posix_spawnattr_init(&at) == 0;
    if (pipe2(ready, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0 || pipe2(spec, O_CLOEXEC) < 0) {
        rc = carma_err_set(err, -errno, "pipe: %s", strerror(errno));
        goto out;
    }
    if ((ready[1] = fd_above_6(ready[1])) < 0 || (go[0] = fd_above_6(go[0])) < 0 ||
        (spec[0] = fd_above_6(spec[0])) < 0) {
        rc = carma_err_set(err, -errno, "fcntl: %s", strerror(errno));
        goto out;
    }
    /* carmad's ends that it waits on never block it (the helper's ends do block) */
    if (fcntl(ready[0], F_SETFL, O_NONBLOCK) < 0 || fcntl(spec[1], F_SETFL, O_NONBLOCK) < 0) {
        rc = carma_err_set(err, -errno, "fcntl: %s", strerror(errno));
        goto out;
    }
    if ((xfd = fcntl(exe_fd, F_DUPFD_CLOEXEC, 7)) < 0) { /* above the dup2s' targets */
        rc = carma_err_set(err, -errno, "the job shepherd %s: %s", exe, strerror(errno));
        goto out;
    }
    if (!fa_ok || !at_ok || spawn_setup(&fa, &at, ready[1], go[0], spec[0], xfd)) {
        rc = carma_err_set(err, -ENOMEM, "cannot set up the shepherd's start");
        goto out;
    }
    /* posix_spawn (vfork semantics): carmad's pages are neither copied nor marked
     * copy-on-write, which a fork of it, kept alive for the job's life, made carmad pay
     * for at every later write (tens of microseconds a page on a virtual machine). */
    int e = posix_spawn(&st->pid, "/proc/self/fd/6", &fa, &at, av, env);
    if (e) {
        st->pid = 0;
        rc = e == ENOENT && access("/proc/self/fd", X_OK)
                 ? carma_err_set(err, -e,
                                 "cannot run the job shepherd %s through "
                                 "/proc/self/fd: is /proc mounted?",
                                 exe)
                 : carma_err_set(err, -e, "cannot run the job shepherd %s: %s", exe, strerror(e));
        goto out;
    }
    /* the helper's pidfd: trusted only when the helper, which holds the ready pipe's write
     * end until it ends, still held it after the open (carmad ignores SIGCHLD: the kernel
     * reaps a helper at once, and its pid may be handed on) */
    close_fd(&ready[1]);
    st->pidfd = (int)syscall(SYS_pidfd_open, st->pid, 0);
    struct pollfd hup = {.fd = ready[0], .events = POLLIN};
    if (st->pidfd >= 0 && (poll(&hup, 1, 0) < 0 || (hup.revents & POLLHUP)))
        close_fd(&st->pidfd); /* it ended already: step reads why, and kills nothing */
    st->ready_fd = ready[0];
    st->go_fd = go[1];
    st->spec_fd = spec[1];
    ready[0] = go[1] = spec[1] = -1;
    st->wait_s = wait_s;
    st->deadline = carma_mono_s() + wait_s;
out:
    close_fd(&xfd);
    for (int k = 0; k < 2; k++) {
        close_fd(&ready[k]);
        close_fd(&go[k]);
        close_fd(&spec[k]);
    }
    if (fa_ok)
        posix_spawn_file_actions_destroy(&fa);
    if (at_ok)
        posix_spawnattr_destroy(&at);
    for (size_t i = 0; env[i]; i++)
        free(env[i]);
    if (rc < 0)
        start_release(st);
    return rc;
}

/* Kills a helper that failed, only while it still holds the ready pipe's write end: then
 * it was alive after pidfd_open, so the pidfd is the helper's and not a process that took
 * its pid (carmad ignores SIGCHLD: the kernel reaps at once); without a pidfd (a kernel
 * before 5.3, no descriptor left), by pid, alive a moment ago. */
static void kill_failed(struct carma_shepherd_start *st)
{
    struct pollfd hup = {.fd = st->ready_fd, .events = POLLIN};
    if (st->ready_fd < 0 || poll(&hup, 1, 0) < 0 || (hup.revents & POLLHUP))
        return;
    if (st->pidfd >= 0)
        syscall(SYS_pidfd_send_signal, st->pidfd, SIGKILL, NULL, 0);
    else
        kill(st->pid, SIGKILL);
}

int carma_shepherd_step(struct carma_shepherd_start *st, struct carma_err *err)
{
    /* the environment and command first (the helper reads them before anything else) */
    while (st->spec_fd >= 0 && st->spec_off < st->spec_len) {
        ssize_t w = write(st->spec_fd, st->spec + st->spec_off, st->spec_len - st->spec_off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN)
            break;
        if (w <= 0) {
            st->spec_failed = 1; /* it stopped reading: it says why on the ready pipe */
            break;
        }
        st->spec_off += (size_t)w;
    }
    if (st->spec_fd >= 0 && (st->spec_failed || st->spec_off == st->spec_len)) {
        close_fd(&st->spec_fd); /* its end of the job: also leaves carmad's epoll set */
        free(st->spec);
        st->spec = NULL;
    }
    /* then its word: 'r' when it recorded itself; 'e' and a line saying why when it
     * cannot start, read to its end */
    int eof = 0;
    while (st->got < sizeof st->msg - 1 && !(st->got && st->msg[0] == 'r')) {
        ssize_t r = read(st->ready_fd, st->msg + st->got, sizeof st->msg - 1 - st->got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            eof = r == 0 || errno != EAGAIN;
            break;
        }
        st->got += (size_t)r;
    }
    int why = st->got > 1 && st->msg[0] == 'e', late = carma_mono_s() >= st->deadline, rc;
    st->msg[st->got] = 0;
    if (why && (eof || late || st->got == sizeof st->msg - 1)) {
        rc = carma_err_set(err, -ECHILD, "the shepherd could not start: %s", st->msg + 1);
    } else if (st->got == 1 && st->msg[0] == 'r' && st->spec_fd < 0 && !st->spec_failed) {
        if (write(st->go_fd, "g", 1) == 1) {
            start_release(st);
            return 1;
        }
        rc = carma_err_set(err, -ECHILD, "the shepherd did not start");
    } else if (eof || (st->got && st->msg[0] != 'e')) {
        rc = carma_err_set(err, -ECHILD, "the shepherd did not start");
    } else if (late) {
        rc = carma_err_set(err, -ETIMEDOUT, "the shepherd did not record itself within %g s",
                           st->wait_s);
    } else {
        return 0;
    }
    kill_failed(st);
    start_release(st);
    close_fd(&st->pidfd);
    return rc;
}

/* (its descriptors, which start_release closes too) */
void carma_shepherd_release(struct carma_shepherd_start *st)
{
    close_fd(&st->ready_fd); /* EOF on its job or its go */
    close_fd(&st->go_fd);
    close_fd(&st->spec_fd);
}

/* Waits on a pidfd until the deadline (carma_mono_s): 1 once its process ended. */
static int pidfd_wait(int pidfd, double deadline)
{
    for (;;) {
        double left = deadline - carma_mono_s();
        struct pollfd pf = {.fd = pidfd, .events = POLLIN};
        int pr = poll(&pf, 1, left > 0 ? (int)(left * 1e3) + 1 : 0);
        if (pr < 0 && errno == EINTR)
            continue;
        return pr > 0;
    }
}

void carma_shepherd_abort(struct carma_shepherd_start *st, double deadline)
{
    char *dir = st->dir;
    st->dir = NULL;
    start_release(st);
    int gone = 0;
    if (st->pidfd >= 0 && !(gone = pidfd_wait(st->pidfd, deadline))) {
        syscall(SYS_pidfd_send_signal, st->pidfd, SIGKILL, NULL, 0);
        gone = pidfd_wait(st->pidfd, carma_mono_s() + 0.2); /* longer only in D state */
    }
    pid_t p;
    uint64_t t;
    if (gone && dir && carma_shepherd_read_pid(dir, &p, &t) == 0 && p == st->pid) {
        char path[PATH_MAX];
        if ((size_t)snprintf(path, sizeof path, "%s/shepherd", dir) < sizeof path)
            unlink(path);
    }
    free(dir);
    close_fd(&st->pidfd);
}

/* A decimal in [0, max], all of s (carma_parse_u64); -1 when not. */
static long long parse_dec(const char *s, long long max)
{
    uint64_t v;
    return carma_parse_u64(s, &v) || v > (uint64_t)max ? -1 : (long long)v;
}

/* The job from descriptor 5, to its end: n strings, each ending in a NUL, into a
 * NULL-ended array of n + 1; NULL when the bytes are not exactly that. */
static char **read_spec(size_t n)
{
    size_t cap = 1 << 16, len = 0;
    char *b = malloc(cap);
    for (;;) {
        if (!b)
            return NULL;
        ssize_t r = read(5, b + len, cap - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            free(b);
            return NULL;
        }
        if (r == 0)
            break;
        len += (size_t)r;
        if (len == cap) {
            char *nb = cap < SH_SPEC_MAX ? realloc(b, cap * 2) : NULL;
            if (!nb)
                free(b);
            b = nb;
            cap *= 2;
        }
    }
    close(5);
    size_t nuls = 0; /* exactly n strings: n NULs, the last byte one of them */
    for (size_t i = 0; i < len; i++)
        nuls += b[i] == 0;
    char **v = len && !b[len - 1] && nuls == n ? calloc(n + 1, sizeof *v) : NULL;
    if (!v) {
        free(b);
        return NULL;
    }
    for (size_t i = 0, k = 0; k < n; k++, i += strlen(b + i) + 1)
        v[k] = b + i;
    return v;
}

int carma_shepherd_main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], SHEPHERD_MAGIC) != 0) {
        fprintf(stderr, "carma-shepherd: started by carmad for each job attempt, not by hand\n");
        return 2;
    }
    prctl(PR_SET_NAME, "carma-shepherd"); /* exec'd as /proc/self/fd/6: named "6" */
    /* Standard descriptors closed in carmad would make the job's logs land on them. */
    if (carma_fd_fill_std() < 0)
        return sh_fail(125, "cannot open /dev/null for its standard descriptors");
    close(6); /* carmad's handle on this program */
    long long uid = argc == SH_ARGC ? parse_dec(argv[3], UINT32_MAX - 1) : -1;
    long long gid = argc == SH_ARGC ? parse_dec(argv[4], UINT32_MAX - 1) : -1;
    long long sw = argc == SH_ARGC ? parse_dec(argv[5], 1) : -1;
    long long grace = argc == SH_ARGC ? parse_dec(argv[6], 86400000000LL) : -1;
    long long nenv = argc == SH_ARGC ? parse_dec(argv[7], SH_SPEC_MAX / 2) : -1;
    long long nargv = argc == SH_ARGC ? parse_dec(argv[8], SH_SPEC_MAX / 2) : -1;
    long long um = argc == SH_ARGC ? parse_dec(argv[9], 0777) : -1;
    struct rlimit rl[CARMA_RLIMITS_N];
    struct carma_err lerr = {{0}};
    int lim_ok = argc == SH_ARGC &&
                 (strcmp(argv[10], "-") == 0 || carma_rlimits_parse(argv[10], rl, &lerr) == 0);
    char **spec = NULL;
    if (uid < 0 || gid < 0 || sw < 0 || grace < 0 || nenv < 0 || nargv < 1 || um < 0 || !lim_ok ||
        !argv[2][0] || !(spec = read_spec((size_t)(2 + nenv + nargv))) || !spec[0][0] ||
        !spec[1][0])
        return sh_fail(2, "malformed command line or job from carmad");
    char **envp = calloc((size_t)nenv + 1, sizeof *envp);
    if (!envp)
        return sh_fail(125, "out of memory");
    memcpy(envp, spec + 2, (size_t)nenv * sizeof *envp);
    struct carma_shepherd_spec sp = {.dir = argv[2],
                                     .cwd = spec[0],
                                     .uid = (uid_t)uid,
                                     .gid = (gid_t)gid,
                                     .user = spec[1],
                                     .switch_user = (int)sw,
                                     .umask = (mode_t)um,
                                     .kill_grace_s = (double)grace / 1e6,
                                     .envp = envp,
                                     .argv = spec + 2 + nenv};
    sp.rlimits = strcmp(argv[10], "-") ? argv[10] : NULL;
    shepherd_main(&sp, sp.rlimits ? rl : NULL, 3, 4); /* never returns */
    return 125;
}

static int read_small(const char *dir, const char *name, char *buf, size_t cap)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -errno;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    if (n < 0)
        return -EIO;
    buf[n] = 0;
    return 0;
}

int carma_shepherd_read_pid(const char *dir, pid_t *pid, uint64_t *starttime)
{
    char buf[128];
    int rc = read_small(dir, "shepherd", buf, sizeof buf);
    if (rc)
        return rc;
    int p;
    unsigned long long t;
    if (sscanf(buf, "%d %llu", &p, &t) != 2 || p <= 1)
        return -EINVAL;
    *pid = p;
    *starttime = t;
    return 0;
}

int carma_shepherd_read_status(const char *dir, struct carma_exit *x, double *end_s)
{
    char buf[256];
    int rc = read_small(dir, "status", buf, sizeof buf);
    if (rc)
        return rc;
    memset(x, 0, sizeof *x);
    int v, c;
    double e;
    char kind[16];
    if (sscanf(buf, "%15s %d cancelled %d end %lf", kind, &v, &c, &e) != 4)
        return -EINVAL;
    if (strcmp(kind, "exited") == 0) {
        x->exited = 1;
        x->code = v;
    } else if (strcmp(kind, "signaled") == 0) {
        x->signal = v;
    } else {
        return -EINVAL;
    }
    x->cancelled = c != 0;
    *end_s = e;
    return 0;
}

int carma_shepherd_pidfd(const char *dir, pid_t *pid)
{
    pid_t p;
    uint64_t t;
    if (carma_shepherd_read_pid(dir, &p, &t) || t == 0)
        return -1;
    /* opened first, then the start time read: a pid looked at before the open may have
     * gone to another process since, which the pidfd would pin */
    int fd = (int)syscall(SYS_pidfd_open, p, 0);
    if (fd < 0)
        return -1;
    if (carma_proc_starttime(p) != t) {
        close(fd);
        return -1;
    }
    *pid = p;
    return fd;
}

int carma_shepherd_alive(const char *dir, pid_t *pid)
{
    pid_t p;
    uint64_t t;
    if (carma_shepherd_read_pid(dir, &p, &t))
        return 0;
    if (pid)
        *pid = p;
    return t != 0 && carma_proc_starttime(p) == t;
}
