/* Helpers for the GPU backend tests that load the fake vendor libraries through the
 * real dlopen path: where the fakes are ($CARMA_FAKE, set by tests/run.sh) and
 * state files written atomically (a new inode each time, so the fake sees it). */
#ifndef CARMA_TESTS_GPU_FAKE_H
#define CARMA_TESTS_GPU_FAKE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* "$CARMA_FAKE/rel" in buf, or NULL when CARMA_FAKE is unset or the file missing. */
static inline const char *gpu_fake_lib(char *buf, size_t cap, const char *rel)
{
    const char *dir = getenv("CARMA_FAKE");
    if (!dir || !*dir)
        return NULL;
    snprintf(buf, cap, "%s/%s", dir, rel);
    return access(buf, R_OK) == 0 ? buf : NULL;
}

/* Writes text to path atomically (path.tmp, then rename). Returns 0 or -1. */
static inline int gpu_fake_write(const char *path, const char *text)
{
    char tmp[4300];
    snprintf(tmp, sizeof tmp, "%.4200s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    int ok = fputs(text, f) >= 0;
    ok &= fclose(f) == 0;
    return ok && rename(tmp, path) == 0 ? 0 : -1;
}

/* A fresh state file path under /tmp, exported in env var `var`. */
static inline void gpu_fake_state_path(char *buf, size_t cap, const char *var, const char *tag)
{
    snprintf(buf, cap, "/tmp/carma-test-%s-%ld.state", tag, (long)getpid());
    setenv(var, buf, 1);
}

#endif
