/* The carmad protocol: JSON lines over a UNIX stream socket (DESIGN.md §6).
 *
 * A client writes one request object per line and reads one response object per
 * line. Requests are parsed strictly: bounded in size, every key known, every value
 * of the expected type and range; anything else is refused with a clear message.
 *
 *   {"v":1,"op":"submit","job":{"argv":["python","train.py"],"cwd":"/home/u",
 *        "env":{"K":"V"},"name":"n","gpus":1,"mem_mib":4096,"max_attempts":3,
 *        "summary":"...","batch":32,"seq_len":512,"precision":"bf16",
 *        "gradient_checkpointing":true,"gradient_accumulation":true,"umask":18,
 *        "time_limit_s":7200,
 *        "after":[12,13]}}
 *   {"v":1,"op":"ls","all":false,"after":0,"limit":1000}   {"v":1,"op":"show","id":7}
 *   {"v":1,"op":"cancel","ids":[7,8]}    {"v":1,"op":"logs","id":7}
 *   {"v":1,"op":"cancel","all":true,"state":"queued","name":"sweep","user":"alice"}
 *   {"v":1,"op":"gpus"}                  {"v":1,"op":"ping"}
 *   {"v":1,"op":"usage","user":"alice","since":1714550400,"until":1714636800}
 *   {"v":1,"op":"history","since":1714550400,"until":1714636800,"points":600}
 *   {"v":1,"op":"drain","gpu":1,"reason":"fan swap"}   {"v":1,"op":"undrain","gpu":"GPU-..."}
 *   {"v":1,"op":"drain","gpus":[0,"GPU-..."]}          {"v":1,"op":"undrain","all":true}
 *
 * New operations need no new version: a carmad that lacks one answers "badrequest"
 * (unknown operation). "v" changes only when a request or answer it knows changes.
 *
 * Responses: {"ok":true,...} or {"ok":false,"error":"CODE","message":"..."}. Every
 * response line is at most CARMA_PROTO_MAX_LINE bytes: an answer that would be longer
 * is replaced by the error "toolarge". `ls` is paged: a page holds jobs with ids above
 * "after", ascending, and carries "next" (the "after" of the next page) when more follow. */
#ifndef CARMA_PROTO_PROTO_H
#define CARMA_PROTO_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "estimate/estimate.h"
#include "util/err.h"

#define CARMA_PROTO_VERSION 1
#define CARMA_PROTO_MAX_LINE (1u << 20)   /* one request or response line, bytes */
#define CARMA_PROTO_MAX_ARGV 1024         /* arguments of a job */
#define CARMA_PROTO_MAX_ARG 8192          /* bytes of one argument */
/* bytes of job.argv as JSON: keeps a job's `show` answer well inside one line */
#define CARMA_PROTO_MAX_ARGV_BYTES (256u << 10)
#define CARMA_PROTO_MAX_ENV 512           /* environment entries */
#define CARMA_PROTO_MAX_ENV_BYTES 32768   /* bytes of one entry's value */
#define CARMA_PROTO_MAX_NAME 128          /* job name */
#define CARMA_PROTO_MAX_PATH 4096         /* cwd */
#define CARMA_PROTO_MAX_SUMMARY (512u << 10) /* model summary text */
#define CARMA_PROTO_MAX_IDS 4096          /* ids in one cancel */
#define CARMA_PROTO_MAX_AFTER 64          /* jobs one job runs after ("after") */
/* ids a cancel with "all" lists in its answer at most (it cancels every match; "count"
 * says how many): 50000 of the longest (19 digits and a comma) fit one line */
#define CARMA_PROTO_MAX_CANCELLED 50000
#define CARMA_PROTO_MAX_GPUS 64
#define CARMA_PROTO_MAX_ATTEMPTS 100
/* A job's "time_limit_s" (carma submit --time-limit): 1 s to 365 days, per attempt. */
#define CARMA_PROTO_MIN_TIME_LIMIT_S 1
#define CARMA_PROTO_MAX_TIME_LIMIT_S (365u * 86400u)
#define CARMA_PROTO_LS_PAGE 1000          /* most jobs in one ls answer (and its default) */
#define CARMA_PROTO_TIMEOUT_S 60          /* client: default wait for an answer */

enum carma_op {
    CARMA_OP_PING,
    CARMA_OP_SUBMIT,
    CARMA_OP_LS,
    CARMA_OP_SHOW,
    CARMA_OP_CANCEL,
    CARMA_OP_LOGS,
    CARMA_OP_GPUS,
    CARMA_OP_USAGE,   /* accounting totals per user */
    CARMA_OP_HISTORY, /* recorded samples and attempts, for reports */
    CARMA_OP_DRAIN,   /* an administrator takes a GPU out of service */
    CARMA_OP_UNDRAIN, /* ... and puts it back */
};
#define CARMA_OP_LAST CARMA_OP_UNDRAIN
#define CARMA_PROTO_MAX_USER 64        /* user name in a usage request */
#define CARMA_PROTO_MAX_POINTS 4000    /* points per GPU in a history request */
#define CARMA_PROTO_MAX_TIME 253402300799.0 /* seconds since the epoch: year 9999 */

/* An attempt's peak_partial (show): why its peak_mib is only a lower limit of the memory
 * it used, the sum of: carmad was down while it ran (its memory unobserved meanwhile);
 * NVML gave no figure for one of its processes at some tick; its memory was near its
 * peak at fewer than CARMA_PEAK_HELD_TICKS ticks (daemon/store.h: it may have ended on
 * its way up, a run of a few seconds sampled once a second). */
#define CARMA_PEAK_DOWNTIME 1u
#define CARMA_PEAK_UNKNOWN 2u
#define CARMA_PEAK_BRIEF 4u
#define CARMA_PROTO_MAX_GPU_INDEX 65535     /* a GPU's index in a drain request */
#define CARMA_PROTO_MAX_UUID 95             /* bytes of a GPU's UUID in a drain request */
#define CARMA_PROTO_MAX_REASON 100          /* bytes of a drain's reason */
#define CARMA_PROTO_MAX_GPU_LIST 256        /* GPUs one drain or undrain names */

/* A GPU a drain or undrain names: its index (uuid NULL), or its UUID (1..CARMA_PROTO_MAX_UUID
 * printable ASCII bytes, pointing into the request's JSON). */
struct carma_req_gpu {
    uint32_t index;
    const char *uuid;
};

/* A job as submitted. Strings point into the request's JSON (valid until
 * carma_req_free); the arrays are owned by the request. */
struct carma_req_job {
    const char **argv;  /* argc entries + NULL */
    size_t argc;
    const char **env_key, **env_val; /* nenv entries each */
    size_t nenv;
    const char *cwd;    /* absolute */
    const char *name;   /* NULL: none */
    const char *summary;/* NULL: none */
    uint32_t gpus;      /* 1..CARMA_PROTO_MAX_GPUS */
    uint64_t mem_mib;   /* 0: not declared */
    uint32_t max_attempts; /* 0: daemon default */
    uint32_t time_limit_s; /* "time_limit_s": wall seconds an attempt may run, from its start,
                              CARMA_PROTO_MIN_TIME_LIMIT_S..CARMA_PROTO_MAX_TIME_LIMIT_S;
                              0: no limit (absent) */
    uint32_t batch;     /* 0: none */
    uint32_t seq_len;   /* 0: none (sequence models need it for the estimator) */
    uint32_t image_h, image_w; /* "image_size": [h, w]; 0: none (CNN module trees need it) */
    uint32_t heads;     /* attention heads per block the summary does not show (carma
                           estimate's --heads), 1..EST_MAX_HEADS; 0: none */
    uint32_t shared_layer_runs; /* "shared_layer_runs": the runs of a shared layer group
                                   (carma estimate's --shared-layer-runs),
                                   1..EST_MAX_SHARED_RUNS; 0: none */
    int tied_head;              /* "tied_head": the summary's output head shares its token table's
                                   weight (carma estimate's --tied-head); 0: not said */
    int umask;                  /* "umask": the submitter's file mode creation mask, 0..0777,
                                   which the job runs with; -1: not given (carmad's default) */
    /* "after": the jobs that must all end succeeded before this one may start (carma
     * submit --after), 1..CARMA_PROTO_MAX_AFTER distinct ids in the order given; nafter 0:
     * none */
    uint64_t after[CARMA_PROTO_MAX_AFTER];
    size_t nafter;
    /* How the summary's model trains, as `carma estimate` takes it (only with a
     * summary): "optimizer", "precision", "attention" (est_opts_set's names and values;
     * default adamw, fp32, as the summary shows), "gradient_checkpointing" and
     * "gradient_accumulation" (true or false), and "experts_per_token" (carma estimate's
     * --experts-per-token, 1..EST_MAX_EXPERTS, in train.experts_per_token; 0: none). */
    struct est_opts train;
};

/* A cancel with "all": the jobs of which state it ends ("state"). */
enum carma_cancel_state {
    CARMA_CANCEL_ACTIVE,  /* absent: queued and running ones */
    CARMA_CANCEL_QUEUED,  /* "queued" */
    CARMA_CANCEL_RUNNING, /* "running" */
};

struct carma_req {
    enum carma_op op;
    json_t *root;       /* owned */
    struct carma_req_job job; /* SUBMIT */
    uint64_t id;        /* SHOW, LOGS */
    uint64_t *ids;      /* CANCEL, owned; NULL (nids 0) with all */
    size_t nids;
    int all; /* LS: finished jobs too; CANCEL: every active job that matches
                the filters below, instead of ids */
    /* CANCEL with all, each optional: "state", "name" (a job name, exactly, 1 to
     * CARMA_PROTO_MAX_NAME bytes), "user" (whose jobs, as USAGE's; 1 to
     * CARMA_PROTO_MAX_USER bytes) or "all_users" (true: every user's; not with "user") */
    enum carma_cancel_state cancel_state;
    const char *name;
    int all_users;
    uint64_t after;     /* LS: only jobs with a larger id; 0 from the first */
    uint32_t limit;     /* LS: 1..CARMA_PROTO_LS_PAGE jobs at most; 0 the daemon's page */
    const char *user;   /* USAGE: NULL all visible; CANCEL: NULL the caller's */
    double since, until;/* USAGE, HISTORY: seconds since the epoch, < 0 open */
    uint32_t points;    /* HISTORY: 0 default */
    /* DRAIN, UNDRAIN: "gpu", the GPU's index (gpu_uuid NULL) or its UUID (gpu_uuid:
     * 1..CARMA_PROTO_MAX_UUID printable ASCII bytes) */
    uint32_t gpu;
    const char *gpu_uuid;
    /* DRAIN, UNDRAIN instead of "gpu": "gpus", 1..CARMA_PROTO_MAX_GPU_LIST GPUs each as
     * "gpu" (gpu_list, owned), or "all": true (every GPU of the server, in all); exactly
     * one of "gpu", "gpus" and "all" */
    struct carma_req_gpu *gpu_list;
    size_t ngpu_list;
    const char *reason; /* DRAIN: 1..CARMA_PROTO_MAX_REASON printable ASCII bytes, not all
                           blanks; NULL: none given */
};

/* Parses one request line of `len` bytes (no newline needed). Returns 0 and fills
 * req, or a negative errno with err naming the problem ("job.argv[2]: not a
 * string"). On error req needs no free. */
int carma_req_parse(struct carma_req *req, const char *buf, size_t len, struct carma_err *err);
void carma_req_free(struct carma_req *req);

/* Whether k is an environment name a job may carry: [A-Za-z_][A-Za-z0-9_]*, at most 256
 * bytes (what a shell can export; "BASH_FUNC_f%%" is not). */
int carma_proto_env_name_ok(const char *k);

/* A job name made from text that passed no name check (a command's file name): the
 * characters a given name may not hold (controls, invisible and direction-changing
 * format characters, bytes of no UTF-8 sequence) become '?', cut at a character to at
 * most CARMA_PROTO_MAX_NAME bytes; "job" when nothing is left. out: cap bytes, at
 * least CARMA_PROTO_MAX_NAME + 1. */
void carma_proto_name_from(const char *s, char *out, size_t cap);

/* Whether the well-formed UTF-8 sequence p of l bytes (1..4) is a character a job name
 * may not hold: a control (C0, DEL, C1) or a format character that hides text or turns
 * its direction (the list in docs/daemon.md). */
int carma_proto_char_hidden(const unsigned char *p, size_t l);

/* Whether s (NUL-terminated) is 1..max printable ASCII bytes (0x20..0x7e), not all
 * blanks: a drain's reason or a GPU's UUID, which STATE/drained keeps as they are. */
int carma_proto_printable_ok(const char *s, size_t max);

/* Parses a list of job ids as `carma submit --after` takes it: decimal ids from 1 to
 * 2^63 - 1 separated by single commas ("12,13"), nothing else (no blanks, signs, empty
 * items), appended to ids[*n..cap) (cap at most CARMA_PROTO_MAX_AFTER in use). An id
 * already in ids[0..*n) is refused, not dropped (a repeated id is a slip the user should
 * see). Returns 0, or -EINVAL / -E2BIG with err naming the item and the problem, ids and
 * *n then unspecified. */
int carma_proto_ids_parse(const char *s, uint64_t *ids, size_t cap, size_t *n,
                          struct carma_err *err);

/* Name of an op ("submit"), or NULL. */
const char *carma_op_name(enum carma_op op);

/* A response {"ok":false,"error":code,"message":msg}; new reference (NULL only when
 * out of memory). A message longer than CARMA_ERR_MAX - 1 bytes is cut at a whole
 * UTF-8 character, and bytes in it that are not UTF-8 become U+FFFD. */
json_t *carma_resp_error(const char *code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A response {"ok":true}; new reference, add fields to it. */
json_t *carma_resp_ok(void);

/* Serialises `msg` compactly followed by '\n' into a malloc'd buffer (*out, *len).
 * Returns 0 or -ENOMEM / -E2BIG (longer than CARMA_PROTO_MAX_LINE). */
int carma_proto_dump(const json_t *msg, char **out, size_t *len);

/* ---- client side ---- */

/* The socket path a client uses when none is given: $CARMA_SOCKET, else
 * /run/carma/carmad.sock for root, else $XDG_RUNTIME_DIR/carma/carmad.sock, else
 * /tmp/carma-UID/carmad.sock. Returns 0 or -ENAMETOOLONG. */
int carma_proto_default_socket(char *buf, size_t cap);

/* Where a root carmad listens by default (the installed unit's): a client finds it there. */
#define CARMA_SYSTEM_SOCKET "/run/carma/carmad.sock"

/* The socket path the carma client uses when none is given: carma_proto_default_socket's
 * (with euid for geteuid()), except that a user other than root without $CARMA_SOCKET
 * whose own socket is not there gets system_path where a socket is there: the root carmad
 * serving every user of a shared server, which its users then reach without setting
 * CARMA_SOCKET (a per-user carmad, running, still comes first). carmad's own default
 * stays carma_proto_default_socket's. Returns 0 or -ENAMETOOLONG. */
int carma_proto_client_socket(uid_t euid, const char *system_path, char *buf, size_t cap);

/* Whether socket `path` can only have been made by root or this user: its folder owned
 * by either and writable by no one else, or, in a sticky folder anyone writes (/tmp),
 * the socket owned by either. Else another user could listen there and read every
 * request (environments hold tokens). Returns 0, or -EPERM with err saying whose the
 * folder is. The client checks it before connecting; carmad before it listens there. */
int carma_socket_trusted(const char *path, struct carma_err *err);

/* Connects to the daemon's socket. Returns the fd or a negative errno (err set). */
int carma_client_connect(const char *path, struct carma_err *err);

/* How long a client waits for an answer, in ms: $CARMA_TIMEOUT (seconds, a number
 * in (0, 86400]) when set and valid, else CARMA_PROTO_TIMEOUT_S. */
int carma_client_timeout_ms(void);

/* Sends `req` (not consumed) and waits up to timeout_ms (< 0: forever) for the
 * response line; *resp is a new reference. A daemon may answer and close without
 * reading the request (a refused connection: "busy"): that answer is returned even
 * when sending failed. Returns 0, or a negative errno with err set (connection,
 * -ETIMEDOUT, parse). */
int carma_client_call_timeout(int fd, const json_t *req, json_t **resp, int timeout_ms,
                              struct carma_err *err);

/* carma_client_call_timeout with carma_client_timeout_ms(). */
int carma_client_call(int fd, const json_t *req, json_t **resp, struct carma_err *err);

/* Convenience: connect, call, close. */
int carma_client_request(const char *path, const json_t *req, json_t **resp,
                         struct carma_err *err);

/* carma_client_request waiting up to timeout_ms (< 0: forever) for the answer. */
int carma_client_request_timeout(const char *path, const json_t *req, json_t **resp, int timeout_ms,
                                 struct carma_err *err);

#endif
