#include "daemon/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <microhttpd.h>

enum carma_http_route carma_http_route(const char *method, const char *url)
{
    if (!method || !url)
        return CARMA_HTTP_NOTFOUND;
    size_t n = strnlen(url, CARMA_HTTP_MAX_URL + 1);
    if (n > CARMA_HTTP_MAX_URL)
        return CARMA_HTTP_TOOLONG;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return CARMA_HTTP_BADMETHOD;
    /* A fragment is never part of a request target (RFC 9112 section 3.2). */
    if (strchr(url, '#'))
        return CARMA_HTTP_BADREQUEST;
    /* The absolute form (section 3.2.2, "http://host/path?query") is routed by its
     * path; the authority is not checked (the listening address is what answers). */
    if (!strncasecmp(url, "http://", 7)) {
        url += 7;
        url += strcspn(url, "/?");
        if (!url[-1] || url[-1] == '/') /* no authority: "http://" then the path */
            return CARMA_HTTP_BADREQUEST;
        if (*url != '/') /* an empty path is "/" */
            url = "/";
    }
    size_t p = strcspn(url, "?");
    static const struct {
        const char *path;
        enum carma_http_route r;
    } routes[] = {
        {"/", CARMA_HTTP_INDEX},
        {"/metrics", CARMA_HTTP_METRICS},
        {"/v1/gpus", CARMA_HTTP_GPUS},
        {"/v1/jobs", CARMA_HTTP_JOBS},
    };
    for (size_t k = 0; k < sizeof routes / sizeof routes[0]; k++)
        if (strlen(routes[k].path) == p && memcmp(routes[k].path, url, p) == 0)
            return routes[k].r;
    return CARMA_HTTP_NOTFOUND;
}

static int parse_port(const char *s, unsigned *port)
{
    if (!*s || strlen(s) > 5)
        return -1;
    unsigned v = 0;
    for (const char *c = s; *c; c++) {
        if (*c < '0' || *c > '9')
            return -1;
        v = v * 10 + (unsigned)(*c - '0');
    }
    if (v == 0 || v > 65535)
        return -1;
    *port = v;
    return 0;
}

/* The path is routed as sent: no percent-decoding, so "/metrics%00" or "/v1%2Fgpus" is
 * no route (decoded, a %00 would end the string at "/metrics"). The query string, also
 * left as sent, is ignored. */
static size_t keep_escapes(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls;
    (void)c;
    return strlen(s);
}

int carma_http_parse_addr(const char *spec, struct sockaddr_storage *sa, socklen_t *len,
                          struct carma_err *err)
{
    memset(sa, 0, sizeof *sa);
    if (!spec || !*spec)
        return carma_err_set(err, -EINVAL, "http: empty address");
    if (strlen(spec) > 64)
        return carma_err_set(err, -EINVAL, "http: address too long");
    char host[72];
    const char *port_s;
    if (spec[0] == '[') {
        const char *e = strchr(spec, ']');
        if (!e || e[1] != ':')
            return carma_err_set(err, -EINVAL, "http %s: [IPv6]:PORT expected", spec);
        memcpy(host, spec + 1, (size_t)(e - spec - 1));
        host[e - spec - 1] = 0;
        port_s = e + 2;
    } else {
        const char *c = strrchr(spec, ':');
        if (!c) {
            snprintf(host, sizeof host, "127.0.0.1");
            port_s = spec;
        } else {
            if (strchr(spec, ':') != c)
                return carma_err_set(err, -EINVAL, "http %s: write an IPv6 address as "
                                                   "[ADDR]:PORT", spec);
            memcpy(host, spec, (size_t)(c - spec));
            host[c - spec] = 0;
            if (!host[0] || !strcmp(host, "localhost"))
                snprintf(host, sizeof host, "127.0.0.1");
            port_s = c + 1;
        }
    }
    unsigned port;
    if (parse_port(port_s, &port))
        return carma_err_set(err, -EINVAL, "http %s: a port in [1, 65535] expected", spec);
    struct sockaddr_in *s4 = (struct sockaddr_in *)sa;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)sa;
    if (spec[0] != '[' && inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)port);
        *len = sizeof *s4;
        return 0;
    }
    if (spec[0] == '[' && inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)port);
        *len = sizeof *s6;
        return 0;
    }
    return carma_err_set(err, -EINVAL, "http %s: an IP address (no host names) expected", spec);
}

struct body {
    char *p;
    size_t len;
};

struct carma_http {
    struct MHD_Daemon *mhd;
    pthread_mutex_t mu;
    struct body b[3]; /* metrics, gpus, jobs */
    unsigned long served;
};

static const char index_text[] =
    "carmad: GET /metrics (Prometheus text), GET /v1/gpus, GET /v1/jobs (JSON)\n";

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type,
                             const char *text, size_t len, int copy)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        len, (void *)text, copy ? MHD_RESPMEM_MUST_COPY : MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    if (status == 405) /* RFC 9110: a 405 names the methods that work */
        MHD_add_response_header(r, "Allow", "GET, HEAD");
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

/* Per request, in MHD's request pointer: whether the headers were seen, whether a body
 * came, whether the whole target holds a '#' (in the query string too), and its length as
 * sent (query string included; MHD hands on_request the path alone). */
#define REQ_HEADERS 1u
#define REQ_BODY 2u
#define REQ_FRAG 4u
#define REQ_LEN_SHIFT 3

static void *target_seen(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls;
    (void)c;
    size_t n = strnlen(uri, CARMA_HTTP_MAX_URL + 1);
    return (void *)(uintptr_t)(((n + 1) << REQ_LEN_SHIFT) | (strchr(uri, '#') ? REQ_FRAG : 0));
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_size, void **req_cls)
{
    (void)version;
    (void)upload_data;
    struct carma_http *h = cls;
    uintptr_t st = (uintptr_t)*req_cls;
    if (!(st & REQ_HEADERS)) { /* first call: headers only */
        *req_cls = (void *)(st | REQ_HEADERS);
        return MHD_YES;
    }
    if (*upload_size) {
        *upload_size = 0; /* a body is not wanted; drained and refused below */
        *req_cls = (void *)(st | REQ_BODY);
        return MHD_YES;
    }
    static const char bd[] = "a request body is not accepted\n";
    if (st & REQ_BODY)
        return reply(c, 413, "text/plain", bd, sizeof bd - 1, 0);
    size_t target = st >> REQ_LEN_SHIFT ? (st >> REQ_LEN_SHIFT) - 1 : 0;
    static const char nf[] = "not found\n", bm[] = "method not allowed\n",
                      tl[] = "request target too long\n", na[] = "not ready yet\n",
                      br[] = "bad request target\n";
    enum carma_http_route r = carma_http_route(method, url);
    if (target > CARMA_HTTP_MAX_URL && r != CARMA_HTTP_BADMETHOD)
        r = CARMA_HTTP_TOOLONG;
    else if ((st & REQ_FRAG) && r != CARMA_HTTP_BADMETHOD)
        r = CARMA_HTTP_BADREQUEST; /* a '#' in the query string, which MHD cut off */
    switch (r) {
    case CARMA_HTTP_NOTFOUND: return reply(c, 404, "text/plain", nf, sizeof nf - 1, 0);
    case CARMA_HTTP_BADMETHOD: return reply(c, 405, "text/plain", bm, sizeof bm - 1, 0);
    case CARMA_HTTP_TOOLONG: return reply(c, 414, "text/plain", tl, sizeof tl - 1, 0);
    case CARMA_HTTP_BADREQUEST:
        return reply(c, 400, "text/plain", br, sizeof br - 1, 0);
    case CARMA_HTTP_INDEX:
        return reply(c, 200, "text/plain", index_text, sizeof index_text - 1, 0);
    default: break;
    }
    int k = r == CARMA_HTTP_METRICS ? 0 : r == CARMA_HTTP_GPUS ? 1 : 2;
    const char *type = k == 0 ? "text/plain; version=0.0.4; charset=utf-8" : "application/json";
    pthread_mutex_lock(&h->mu);
    h->served++;
    enum MHD_Result ret;
    if (!h->b[k].p)
        ret = reply(c, 503, "text/plain", na, sizeof na - 1, 0);
    else
        ret = reply(c, 200, type, h->b[k].p, h->b[k].len, 1); /* copied under the lock */
    pthread_mutex_unlock(&h->mu);
    return ret;
}

int carma_http_start(struct carma_http **out, const char *spec, struct carma_err *err)
{
    *out = NULL;
    struct sockaddr_storage sa;
    socklen_t len;
    int rc = carma_http_parse_addr(spec, &sa, &len, err);
    if (rc)
        return rc;
    struct carma_http *h = calloc(1, sizeof *h);
    if (!h)
        return carma_err_set(err, -ENOMEM, "out of memory");
    pthread_mutex_init(&h->mu, NULL);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL;
    if (sa.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    /* Connections from one address: a cap keeps one remote host from holding all 64
     * (slow requests); on loopback every client has the same address, where a cap
     * would only let one local user lock the scraper out sooner. */
    const struct sockaddr_in *s4 = (const struct sockaddr_in *)&sa;
    const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&sa;
    int loopback = sa.ss_family == AF_INET ? (ntohl(s4->sin_addr.s_addr) >> 24) == 127
                                           : IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr);
    unsigned per_ip = loopback ? 64 : 16;
    h->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR, &sa,
                              MHD_OPTION_CONNECTION_LIMIT, (unsigned)64,
                              MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
                              MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)65536,
                              MHD_OPTION_UNESCAPE_CALLBACK, keep_escapes, NULL,
                              MHD_OPTION_URI_LOG_CALLBACK, target_seen, NULL,
                              MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip, MHD_OPTION_END);
    if (!h->mhd) {
        int e = errno ? errno : EADDRINUSE;
        pthread_mutex_destroy(&h->mu);
        free(h);
        return carma_err_set(err, -e, "http %s: cannot listen (%s)", spec, strerror(e));
    }
    *out = h;
    return 0;
}

void carma_http_publish(struct carma_http *h, char *metrics, char *gpus_json, char *jobs_json)
{
    char *in[3] = {metrics, gpus_json, jobs_json};
    char *old[3] = {NULL, NULL, NULL};
    pthread_mutex_lock(&h->mu);
    for (int k = 0; k < 3; k++)
        if (in[k]) {
            old[k] = h->b[k].p;
            h->b[k].p = in[k];
            h->b[k].len = strlen(in[k]);
        }
    pthread_mutex_unlock(&h->mu);
    for (int k = 0; k < 3; k++)
        free(old[k]);
}

unsigned long carma_http_served(struct carma_http *h)
{
    pthread_mutex_lock(&h->mu);
    unsigned long n = h->served;
    pthread_mutex_unlock(&h->mu);
    return n;
}

void carma_http_stop(struct carma_http *h)
{
    if (!h)
        return;
    MHD_stop_daemon(h->mhd);
    for (int k = 0; k < 3; k++)
        free(h->b[k].p);
    pthread_mutex_destroy(&h->mu);
    free(h);
}
