/* Fuzz target: carmad's HTTP request routing and the --http address parser. The
 * input is "METHOD URL" on one line (the first space splits), then optionally a
 * newline and an address. Routing must be total and never read past the strings;
 * an accepted address is IPv4 or IPv6 with a non-zero port. */
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "daemon/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = 0;
    char *nl = strchr(s, '\n');
    char *addr = NULL;
    if (nl) {
        *nl = 0;
        addr = nl + 1;
    }
    char *sp = strchr(s, ' ');
    const char *method = s, *url = "";
    if (sp) {
        *sp = 0;
        url = sp + 1;
    }
    enum carma_http_route r = carma_http_route(method, url);
    if ((unsigned)r > CARMA_HTTP_BADREQUEST)
        __builtin_trap();
    /* a route only for an origin-form target or an absolute one, never with a '#' */
    if (r >= CARMA_HTTP_INDEX && r <= CARMA_HTTP_JOBS &&
        ((url[0] != '/' && strncasecmp(url, "http://", 7) != 0) || strchr(url, '#')))
        __builtin_trap();
    if (addr) {
        struct sockaddr_storage sa;
        socklen_t len = 0;
        struct carma_err err = {{0}};
        if (carma_http_parse_addr(addr, &sa, &len, &err) == 0) {
            if (sa.ss_family == AF_INET) {
                if (len != sizeof(struct sockaddr_in) || ((struct sockaddr_in *)&sa)->sin_port == 0)
                    __builtin_trap();
            } else if (sa.ss_family == AF_INET6) {
                if (len != sizeof(struct sockaddr_in6) ||
                    ((struct sockaddr_in6 *)&sa)->sin6_port == 0)
                    __builtin_trap();
            } else {
                __builtin_trap();
            }
        } else if (!err.msg[0]) {
            __builtin_trap();
        }
    }
    free(s);
    return 0;
}
