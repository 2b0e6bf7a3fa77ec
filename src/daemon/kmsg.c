#include "daemon/kmsg.h"

#include <errno.h>
#include <string.h>

#include "daemon/classify.h"

#define KMSG_PID_MAX 4194304 /* the kernel's PID_MAX_LIMIT */
#define KMSG_XID_CLEANUP 45  /* preemptive cleanup, due to previous errors */

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int hex_val(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* A decimal number of 1 to maxd digits at s[*i..end): its value in *v, *i past it. */
static int dec(const char *s, size_t end, size_t *i, unsigned maxd, uint64_t *v)
{
    size_t k = *i;
    uint64_t x = 0;
    while (k < end && is_digit(s[k]) && k - *i < maxd)
        x = x * 10 + (uint64_t)(s[k++] - '0');
    if (k == *i || (k < end && is_digit(s[k])))
        return -1;
    *i = k;
    *v = x;
    return 0;
}

/* mind to maxd hex digits at s[*i..end). */
static int hex(const char *s, size_t end, size_t *i, unsigned mind, unsigned maxd, uint32_t *v)
{
    size_t k = *i;
    uint32_t x = 0;
    while (k < end && hex_val(s[k]) >= 0 && k - *i < maxd)
        x = x * 16 + (uint32_t)hex_val(s[k++]);
    if (k - *i < mind || (k < end && hex_val(s[k]) >= 0))
        return -1;
    *i = k;
    *v = x;
    return 0;
}

/* s[*i..end) starts with lit: *i past it. */
static int lit(const char *s, size_t end, size_t *i, const char *l)
{
    size_t n = strlen(l);
    if (end - *i < n || memcmp(s + *i, l, n))
        return -1;
    *i += n;
    return 0;
}

/* The part of the message after "pid=", up to the next ',' or its end: a pid or 0. */
static pid_t pid_of(const char *s, size_t end, size_t i)
{
    size_t e = i;
    while (e < end && s[e] != ',')
        e++;
    uint64_t v;
    size_t k = i;
    if (dec(s, e, &k, 7, &v) || k != e || v == 0 || v > KMSG_PID_MAX)
        return 0; /* '<unknown>', <unknown>, or anything else: not named */
    return (pid_t)v;
}

/* The message m[0..n): an NVRM Xid line. */
static int parse_xid_line(const char *m, size_t n, struct carmad_kmsg_xid *out)
{
    size_t i = 0;
    uint32_t dom, bus, dev;
    uint64_t xid;
    if (lit(m, n, &i, "NVRM: Xid (") < 0)
        return 0;
    (void)lit(m, n, &i, "PCI:");
    if (hex(m, n, &i, 4, 8, &dom) || lit(m, n, &i, ":") || hex(m, n, &i, 2, 2, &bus) ||
        lit(m, n, &i, ":") || hex(m, n, &i, 2, 2, &dev) || dev > 0x1f || lit(m, n, &i, "): ") ||
        dec(m, n, &i, 10, &xid))
        return 0;
    pid_t pid = 0;
    if (i < n) {
        if (m[i] != ',')
            return 0;
        i++;
        while (i < n && m[i] == ' ')
            i++;
        if (lit(m, n, &i, "pid=") == 0)
            pid = pid_of(m, n, i);
    }
    out->domain = dom;
    out->bus = bus;
    out->device = dev;
    out->xid = xid;
    out->pid = pid;
    return 1;
}

int carmad_kmsg_parse(const char *rec, size_t len, struct carmad_kmsg_xid *out)
{
    if (!rec || len == 0 || len > CARMAD_KMSG_RECORD_MAX || memchr(rec, '\0', len))
        return 0;
    size_t i = 0;
    uint64_t prio, seq, ts;
    /* PRIO,SEQ,TIMESTAMP,FLAGS[,...]; */
    if (dec(rec, len, &i, 10, &prio) || lit(rec, len, &i, ",") || dec(rec, len, &i, 20, &seq) ||
        lit(rec, len, &i, ",") || dec(rec, len, &i, 20, &ts) || lit(rec, len, &i, ","))
        return 0;
    if (i >= len || (rec[i] != '-' && rec[i] != 'c' && rec[i] != '+'))
        return 0;
    i++;
    if (i < len && rec[i] == ',') /* further fields (caller=T1, ...) */
        while (i < len && rec[i] != ';' && rec[i] != '\n')
            i++;
    if (i >= len || rec[i] != ';')
        return 0;
    i++;
    size_t m = i;
    while (i < len && rec[i] != '\n')
        i++;
    size_t mlen = i - m;
    /* continuation lines: each starts with a space and ends with a newline */
    if (i < len) {
        i++;
        while (i < len) {
            if (rec[i] != ' ')
                return 0;
            const char *nl = memchr(rec + i, '\n', len - i);
            if (!nl)
                return 0;
            i = (size_t)(nl - rec) + 1;
        }
    }
    if (prio >> 3 != 0) /* not the kernel's facility */
        return 0;
    return parse_xid_line(rec + m, mlen, out);
}

int carmad_kmsg_pci_parse(const char *busid, uint32_t *domain, uint32_t *bus, uint32_t *device)
{
    if (!busid)
        return -EINVAL;
    size_t n = strnlen(busid, 64), i = 0;
    uint32_t d, b, v, f;
    if (hex(busid, n, &i, 4, 8, &d) || lit(busid, n, &i, ":") || hex(busid, n, &i, 2, 2, &b) ||
        lit(busid, n, &i, ":") || hex(busid, n, &i, 2, 2, &v) || v > 0x1f ||
        lit(busid, n, &i, ".") || hex(busid, n, &i, 1, 1, &f) || f > 7 || i != n)
        return -EINVAL;
    *domain = d;
    *bus = b;
    *device = v;
    return 0;
}

void carmad_kmsg_pids_note(struct carmad_kmsg_pids *t, pid_t pid, uint64_t job, double now)
{
    if (pid <= 0)
        return;
    size_t free_k = CARMAD_KMSG_PIDS, old_k = 0;
    for (size_t k = 0; k < CARMAD_KMSG_PIDS; k++) {
        struct carmad_kmsg_pid *e = &t->e[k];
        if (e->pid == pid) {
            if (job || !e->job) { /* a job's stays the job's when no one's claims it */
                e->job = job;
                e->seen_s = now;
            }
            return;
        }
        if (!e->pid && free_k == CARMAD_KMSG_PIDS)
            free_k = k;
        if (e->pid && e->seen_s < t->e[old_k].seen_s)
            old_k = k;
    }
    size_t k = free_k < CARMAD_KMSG_PIDS ? free_k : old_k;
    t->e[k] = (struct carmad_kmsg_pid){.pid = pid, .job = job, .seen_s = now};
}

int carmad_kmsg_pids_find(const struct carmad_kmsg_pids *t, pid_t pid, double now,
                          double max_age_s, uint64_t *job)
{
    if (pid <= 0)
        return 0;
    for (size_t k = 0; k < CARMAD_KMSG_PIDS; k++)
        if (t->e[k].pid == pid) {
            if (now - t->e[k].seen_s > max_age_s)
                return 0;
            *job = t->e[k].job;
            return 1;
        }
    return 0;
}

void carmad_kmsg_blame_add(struct carmad_kmsg_blames *b, const struct carmad_kmsg_blame *x)
{
    if (carma_xid_kind(x->xid, NULL) != CARMA_XID_APP || x->xid == KMSG_XID_CLEANUP)
        return; /* the verdict reads no other: a storm of them must not push one out */
    b->e[b->next] = *x;
    b->next = (b->next + 1) % CARMAD_KMSG_BLAMES;
    if (b->n < CARMAD_KMSG_BLAMES)
        b->n++;
}

enum carmad_kmsg_verdict carmad_kmsg_judge(const struct carmad_kmsg_blames *b, uint64_t job,
                                           double start_s, double end_s, double window_s,
                                           struct carmad_kmsg_blame *which)
{
    const struct carmad_kmsg_blame *other = NULL;
    for (unsigned k = 0; k < b->n && k < CARMAD_KMSG_BLAMES; k++) {
        const struct carmad_kmsg_blame *e = &b->e[k];
        /* Xid 45 (preemptive cleanup) is the driver tearing down a process's channels
         * after an error (another client's fault under MPS, a kill, a reset): it says
         * who was ended, not who faulted, so it blames no one */
        if (carma_xid_kind(e->xid, NULL) != CARMA_XID_APP || e->xid == KMSG_XID_CLEANUP ||
            e->t < start_s || end_s - e->t > window_s)
            continue;
        if (e->job == job)
            return CARMAD_KMSG_SELF;
        if (!other || e->t >= other->t)
            other = e;
    }
    if (!other)
        return CARMAD_KMSG_NONE;
    if (which)
        *which = *other;
    return CARMAD_KMSG_OTHER;
}
