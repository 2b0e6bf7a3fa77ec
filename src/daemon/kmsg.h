/* The kernel's log (/dev/kmsg) as a source of Xid blame: NVIDIA's driver prints each
 * Xid with the pid of the process it puts it on ("NVRM: Xid (PCI:0000:00:06): 31,
 * pid=705, name=python3, ..."), which NVML's Xid events do not carry. Under MPS that
 * pid is the client that faulted, not the server, so it tells the culprit from the
 * co-runners the fault ended with it (docs/daemon.md, "Xid events").
 *
 * Pure functions over plain bytes and small fixed tables, no I/O: the parser is driven
 * by tests/fuzz/fuzz_kmsg.c. */
#ifndef CARMA_DAEMON_KMSG_H
#define CARMA_DAEMON_KMSG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CARMAD_KMSG_RECORD_MAX 8192 /* bytes of one record carmad reads (the kernel's
                                       CONSOLE_EXT_LOG_MAX) */

/* One NVRM Xid line of the kernel's. */
struct carmad_kmsg_xid {
    uint32_t domain, bus, device; /* the GPU's PCI location */
    uint64_t xid;
    pid_t pid; /* the process the driver named, 0: none ('<unknown>' or not said) */
};

/* Parses one /dev/kmsg record rec[0..len) ("PRIO,SEQ,TIMESTAMP,FLAGS[,...];MESSAGE\n",
 * then continuation lines that start with a space; Documentation/ABI/testing/dev-kmsg).
 * Returns 1 and fills *out when it is well formed, of the kernel's facility (0: what
 * userspace writes to /dev/kmsg has facility 1 unless root forges it), and its message
 * is an NVRM Xid line: "NVRM: Xid (PCI:DDDD:BB:DD): N, pid=P, ..." (or "(DDDD:BB:DD)"
 * of old drivers; "pid='<unknown>'", "pid=<unknown>" or no pid at all give pid 0; a pid
 * that is not a number from 1 to 2^22 likewise). Returns 0 for anything else. Reads no
 * byte past len; rec need not be NUL-terminated. */
int carmad_kmsg_parse(const char *rec, size_t len, struct carmad_kmsg_xid *out);

/* Parses NVML's bus id ("00000000:00:06.0", or "0000:3b:00.0" of old drivers: a domain
 * of 4 to 8 hex digits, then bus, device and function) into its numbers. 0, or -EINVAL
 * for anything else (an empty one included). */
int carmad_kmsg_pci_parse(const char *busid, uint32_t *domain, uint32_t *bus, uint32_t *device);

/* The processes the monitor last listed on one GPU, with the job each was (0: no carma
 * job's; CARMAD_KMSG_SERVER: an MPS server, no client), so that a record read after its
 * process ended still names its job. */
#define CARMAD_KMSG_PIDS 256
#define CARMAD_KMSG_SERVER UINT64_MAX
struct carmad_kmsg_pid {
    pid_t pid; /* 0: free */
    uint64_t job;
    double seen_s;
};
struct carmad_kmsg_pids {
    struct carmad_kmsg_pid e[CARMAD_KMSG_PIDS];
};

/* Notes pid (> 0) seen at now as job's (0: no carma job's). A pid already known as a
 * job's is not made no one's by a later listing (its process gone, the monitor no
 * longer finds its session) unless another job claims it; when the table is full the
 * entry seen longest ago gives way. */
void carmad_kmsg_pids_note(struct carmad_kmsg_pids *t, pid_t pid, uint64_t job, double now);

/* 1 and *job when pid was seen within max_age_s before now (or after it: a clock that
 * stepped back), else 0. */
int carmad_kmsg_pids_find(const struct carmad_kmsg_pids *t, pid_t pid, double now,
                          double max_age_s, uint64_t *job);

/* The Xids the kernel put on a process, lately, on one GPU. */
#define CARMAD_KMSG_BLAMES 16
struct carmad_kmsg_blame {
    double t; /* when carmad read it */
    uint64_t xid;
    pid_t pid;
    uint64_t job; /* the job whose process it was, 0: no carma job's */
};
struct carmad_kmsg_blames {
    struct carmad_kmsg_blame e[CARMAD_KMSG_BLAMES];
    unsigned n, next; /* entries held; where the next goes (the oldest gives way) */
};

/* Keeps x when it is one the verdict reads (an application Xid, not 45), so that others
 * (a storm of ECC or unknown Xids) cannot push the culprit's out of the ring. */
void carmad_kmsg_blame_add(struct carmad_kmsg_blames *b, const struct carmad_kmsg_blame *x);

enum carmad_kmsg_verdict {
    CARMAD_KMSG_NONE,  /* nothing known */
    CARMAD_KMSG_OTHER, /* an application Xid of another job's process (or no job's) */
    CARMAD_KMSG_SELF,  /* the kernel put an application Xid on this job's own process */
};

/* What the kernel said about an attempt of job `job` that ran from start_s and ended at
 * end_s: only application Xids (carma_xid_kind APP) that carmad read from start_s on and
 * at most window_s before end_s count, Xid 45 (preemptive cleanup: the driver tearing
 * down a process after an error or a kill, the victim's, not the culprit's) excepted. SELF when one
 * of them was put on the job's own process; else OTHER when one was put on another's, *which (may
 * be NULL) the latest of those; else NONE. */
enum carmad_kmsg_verdict carmad_kmsg_judge(const struct carmad_kmsg_blames *b, uint64_t job,
                                           double start_s, double end_s, double window_s,
                                           struct carmad_kmsg_blame *which);

#endif
