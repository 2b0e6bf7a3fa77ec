/* carmad's HTTP endpoints (DESIGN.md §6): GET /metrics (Prometheus text), GET /v1/gpus
 * and GET /v1/jobs (JSON), served by libmicrohttpd on its own thread
 * (MHD_USE_INTERNAL_POLLING_THREAD). The thread never touches the daemon's state: the
 * loop publishes a read-only snapshot of the three bodies after every monitor tick and
 * after every iteration that changed a job, and the thread copies the body it needs
 * under a mutex. A scrape therefore sees the state as of the last publish (at most one
 * monitor interval old) and can never slow the loop down by more than a pointer swap.
 *
 * Off unless configured; `--http PORT` or `:PORT` listens on 127.0.0.1 only. */
#ifndef CARMA_DAEMON_HTTP_H
#define CARMA_DAEMON_HTTP_H

#include <stddef.h>
#include <sys/socket.h>

#include "util/err.h"

#define CARMA_HTTP_MAX_URL 256 /* longer request targets are refused (414) */

enum carma_http_route {
    CARMA_HTTP_NOTFOUND,  /* 404 */
    CARMA_HTTP_BADMETHOD, /* 405: anything but GET and HEAD */
    CARMA_HTTP_TOOLONG,   /* 414 */
    CARMA_HTTP_INDEX,     /* "/": a short text naming the endpoints */
    CARMA_HTTP_METRICS,
    CARMA_HTTP_GPUS,
    CARMA_HTTP_JOBS,
    CARMA_HTTP_BADREQUEST, /* 400: a '#' in the target, an absolute form without host */
};

/* Routes a request: method and the request target as received (a query string is
 * ignored, "/metrics?x" is /metrics; no percent-decoding, no dot segments: the
 * paths are exact; an absolute form "http://HOST/metrics" is routed by its path; a
 * '#' is a bad request). Pure. */
enum carma_http_route carma_http_route(const char *method, const char *url);

/* Parses an address for --http: "PORT", ":PORT" (127.0.0.1), "HOST:PORT" with an
 * IPv4 literal or "localhost", "[IPv6]:PORT". No name resolution. Returns 0 and
 * fills *sa and *len, or -EINVAL with err naming the problem. */
int carma_http_parse_addr(const char *spec, struct sockaddr_storage *sa, socklen_t *len,
                          struct carma_err *err);

struct carma_http;

/* Starts listening on spec. Returns 0 or a negative errno with err set. */
int carma_http_start(struct carma_http **out, const char *spec, struct carma_err *err);

/* Replaces the snapshot: the three malloc'd bodies become the server's (any may be
 * NULL to keep the previous one). Thread-safe with the serving thread. */
void carma_http_publish(struct carma_http *h, char *metrics, char *gpus_json, char *jobs_json);

/* Requests served so far (for tests and logs). */
unsigned long carma_http_served(struct carma_http *h);

/* Stops the thread and frees everything. NULL is fine. */
void carma_http_stop(struct carma_http *h);

#endif
