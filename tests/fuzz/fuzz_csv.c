/* Fuzz target: the strict CSV reader every loader builds on, comma and tab modes. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "util/csv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct carma_csv c; /* large: keep it off the stack */
    struct carma_err err;
    for (int mode = 0; mode < 2; mode++) {
        carma_csv_init(&c, (const char *)data, size, "fuzz", mode ? '\t' : ',');
        int rc;
        size_t records = 0;
        while ((rc = carma_csv_next(&c, &err)) == 1) {
            if (c.nfields == 0 || c.nfields > CARMA_CSV_MAX_FIELDS)
                __builtin_trap();
            for (size_t i = 0; i < c.nfields; i++) {
                size_t n = strlen(c.field[i]);
                if (n > CARMA_CSV_MAX_FIELD)
                    __builtin_trap();
                double d;
                uint64_t u;
                int64_t s;
                (void)carma_parse_double(c.field[i], &d);
                (void)carma_parse_u64(c.field[i], &u);
                (void)carma_parse_i64(c.field[i], &s);
            }
            (void)carma_csv_col(&c, "submit_s");
            if (++records > size + 1)
                __builtin_trap(); /* progress: at least one byte per record */
        }
        if (rc < 0 && strstr(err.msg, "fuzz:") != err.msg)
            __builtin_trap(); /* every error names the file */
    }
    return 0;
}
