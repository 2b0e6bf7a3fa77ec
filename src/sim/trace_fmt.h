/* Private to the trace loaders (src/sim/trace*.c, catalog.c): a growing trace with a
 * name index, and one parse function per format. Not for use elsewhere. */
#ifndef CARMA_SIM_TRACE_FMT_H
#define CARMA_SIM_TRACE_FMT_H

#include "sim/trace.h"

/* Bounds of a job's figures, checked by sim_build_job and stated in its messages;
 * loaders bound their own fields by them too. */
#define SIM_TIME_MAX_S 1e10  /* about 300 years: anything above is a unit mistake */
#define SIM_MEM_MAX_MIB 1e7  /* peak memory and estimates per GPU */
#define SIM_RAMP_MAX_S 1e6   /* launch to peak memory */

/* A trace under construction. Jobs and workloads grow geometrically up to the bounds
 * (SIM_TRACE_MAX_JOBS, 65535 workloads); names are unique (hash index). */
struct sim_build {
    struct sim_trace t;
    size_t jobs_cap, wl_cap, names_cap;
    uint32_t *index;   /* open addressing: workload index + 1, 0 empty */
    size_t index_cap;  /* power of two, > 2 * nworkloads */
    const char *file;
};

void sim_build_init(struct sim_build *b, const char *file);
/* Frees everything the builder holds (after a failure). */
void sim_build_discard(struct sim_build *b);
/* Moves the trace out; the builder is empty afterwards. */
void sim_build_finish(struct sim_build *b, struct sim_trace *out);
/* Index of the workload named w->name, adding a copy of *w when new. */
int sim_build_workload(struct sim_build *b, const struct sim_workload *w, uint16_t *idx,
                       size_t line, struct carma_err *err);
/* Stores a job's own name (cut to SIM_NAME_MAX - 1 bytes) for sim_job_spec.name:
 * *ref = its offset + 1 in the trace's names. */
int sim_build_name(struct sim_build *b, const char *name, uint32_t *ref, struct carma_err *err);
/* Index of an existing workload by name, or -1. */
long sim_build_find(const struct sim_build *b, const char *name);
/* Appends a job after checking its fields (times, GPUs, memory, ratios) and the
 * arrival order; `line` names the record in errors. */
int sim_build_job(struct sim_build *b, const struct sim_job_spec *j, size_t line,
                  struct carma_err *err);
/* For formats without a catalog: gives workload *w the job's peak memory and profile,
 * adds it (or finds it by name), sets j->workload and appends the job. */
int sim_build_job_own(struct sim_build *b, struct sim_workload *w, struct sim_job_spec *j,
                      size_t line, struct carma_err *err);

/* Names a trace uses that the built-in model table lacks (Muri models, Gavel job
 * types), each with its first line and its number of jobs, so that one message lists
 * them all once the file is read. Zero-initialised = empty. */
struct sim_unknown {
    char *name; /* owned copy */
    size_t line, jobs;
};
struct sim_unknowns {
    struct sim_unknown *v; /* in order of first use (by line) */
    size_t n, cap;
    uint32_t *index;  /* open addressing: entry + 1, 0 empty */
    size_t index_cap; /* power of two, > 2 * n */
    size_t jobs;      /* jobs with an unknown name, in all */
};
#define SIM_UNKNOWN_LIST 10 /* names a message lists; the rest are counted */

/* Counts the job of `line` named `name`. 0, or a negative code with err set (out of
 * memory, or more than SIM_TRACE_MAX_JOBS such jobs). */
int sim_unknown_add(struct sim_unknowns *u, const char *name, size_t line, const char *file,
                    struct carma_err *err);
/* The message for u (not empty), at its first name's line: how many names, the first
 * SIM_UNKNOWN_LIST of them (fewer when the message would not fit) with line and jobs,
 * how many more, that the table is built in and what to do. `what` names one ("model",
 * "job type"). Returns -EINVAL. */
int sim_unknown_error(const struct sim_unknowns *u, const char *file, const char *what,
                      struct carma_err *err);
void sim_unknown_free(struct sim_unknowns *u);

/* Reads the next line of buf from *off into line (at most cap - 1 bytes, a trailing
 * CR dropped, NUL-terminated) and counts it in *n. Returns 1 with a line, 0 at the end,
 * or -EINVAL with err naming file and line when the line does not fit or holds another
 * CR (CARMA_CR_BARE_MSG, or CARMA_CR_ONLY_MSG when buf has no LF at all). */
int sim_next_line(const char *buf, size_t len, size_t *off, size_t *n, char *line, size_t cap,
                  const char *file, struct carma_err *err);

/* Copies src into a fixed char array, or fails when it does not fit (or is empty). */
int sim_name_copy(char *dst, size_t cap, const char *src);

/* Fills smact/smocc/drama/ramp_s of a job from its peak memory by the documented
 * rule (src/sim/profile.h). */
void sim_job_profile_rule(struct sim_job_spec *j);

/* The parsers, called by sim_trace_parse with text that is not empty, holds no NUL
 * byte and starts with no byte order mark. */
int sim_parse_carma_csv(const char *file, const char *buf, size_t len,
                        const struct sim_trace_opts *o, struct sim_trace *out,
                        struct carma_err *err);
int sim_parse_carma_sh(const char *file, const char *buf, size_t len,
                       const struct sim_trace_opts *o, struct sim_trace *out,
                       struct carma_err *err);
int sim_parse_muri(const char *file, const char *buf, size_t len, const struct sim_trace_opts *o,
                   struct sim_trace *out, struct carma_err *err);
int sim_parse_gavel(const char *file, const char *buf, size_t len, const struct sim_trace_opts *o,
                    struct sim_trace *out, struct carma_err *err);
int sim_parse_alibaba(const char *file, const char *buf, size_t len,
                      const struct sim_trace_opts *o, struct sim_trace *out,
                      struct carma_err *err);

#endif
