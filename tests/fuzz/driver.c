/* Standalone driver for the fuzz targets, so that every target runs in `make test`
 * (under ASan+UBSan) without libFuzzer: it feeds each file of the given corpus
 * folders, then -runs=N deterministic mutations of them (byte flips, truncations,
 * insertions, splices). Under `make fuzz` the same targets link with libFuzzer. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define DRIVER_MAX_INPUT (1u << 20)
#define DRIVER_MAX_FILES 4096

struct input {
    uint8_t *data;
    size_t size;
};

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int load_file(const char *path, struct input *out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    out->data = malloc(DRIVER_MAX_INPUT);
    if (!out->data) {
        fclose(f);
        return -1;
    }
    out->size = fread(out->data, 1, DRIVER_MAX_INPUT, f);
    fclose(f);
    return 0;
}

static void run_one(const uint8_t *d, size_t n)
{
    /* Copy into an exact-size buffer so ASan sees reads past the end. */
    uint8_t *copy = malloc(n ? n : 1);
    if (!copy)
        abort();
    if (n)
        memcpy(copy, d, n);
    LLVMFuzzerTestOneInput(copy, n);
    free(copy);
}

int main(int argc, char **argv)
{
    long runs = 0;
    struct input *in = calloc(DRIVER_MAX_FILES, sizeof(*in));
    size_t nin = 0;
    if (!in)
        return 1;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "-runs=", 6) == 0) {
            runs = strtol(argv[i] + 6, NULL, 10);
            continue;
        }
        if (argv[i][0] == '-')
            continue; /* other libFuzzer flags */
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "driver: %s: no such corpus\n", argv[i]);
            return 1;
        }
        if (S_ISDIR(st.st_mode)) {
            DIR *d = opendir(argv[i]);
            struct dirent *e;
            while (d && (e = readdir(d)) && nin < DRIVER_MAX_FILES) {
                if (e->d_name[0] == '.')
                    continue;
                char p[4096];
                snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
                if (load_file(p, &in[nin]) == 0)
                    nin++;
            }
            if (d)
                closedir(d);
        } else if (nin < DRIVER_MAX_FILES && load_file(argv[i], &in[nin]) == 0) {
            nin++;
        }
    }
    for (size_t i = 0; i < nin; i++)
        run_one(in[i].data, in[i].size);
    uint64_t s = 0x9e3779b97f4a7c15ull;
    uint8_t *buf = malloc(DRIVER_MAX_INPUT);
    if (!buf)
        return 1;
    for (long r = 0; r < runs; r++) {
        size_t n = 0;
        if (nin) {
            struct input *src = &in[rng_next(&s) % nin];
            n = src->size;
            memcpy(buf, src->data, n);
        }
        int edits = 1 + (int)(rng_next(&s) % 8);
        for (int k = 0; k < edits; k++) {
            uint64_t op = rng_next(&s) % 5;
            if (op == 0 && n) {
                buf[rng_next(&s) % n] ^= (uint8_t)(1u << (rng_next(&s) % 8));
            } else if (op == 1 && n) {
                n = rng_next(&s) % n;
            } else if (op == 2 && n + 1 < DRIVER_MAX_INPUT) {
                size_t at = n ? rng_next(&s) % (n + 1) : 0;
                memmove(buf + at + 1, buf + at, n - at);
                static const char interesting[] = ",\n\"{}[]:-0.9e\t ()x#";
                buf[at] = (uint8_t)interesting[rng_next(&s) % (sizeof interesting - 1)];
                n++;
            } else if (op == 3 && n) {
                buf[rng_next(&s) % n] = (uint8_t)rng_next(&s);
            } else if (op == 4 && nin) {
                struct input *o = &in[rng_next(&s) % nin];
                size_t take = o->size ? rng_next(&s) % o->size : 0;
                if (n + take < DRIVER_MAX_INPUT) {
                    memcpy(buf + n, o->data + (o->size - take), take);
                    n += take;
                }
            }
        }
        run_one(buf, n);
    }
    printf("driver: %zu corpus inputs, %ld mutations, no crash\n", nin, runs);
    free(buf);
    for (size_t i = 0; i < nin; i++)
        free(in[i].data);
    free(in);
    return 0;
}
