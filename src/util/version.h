/* carma's version: VERSION's content, plus "+g<short hash>" and "-dirty" when built
 * from a git checkout (tools/version.sh). Defined in a file the build generates
 * ($BUILD/obj/gen/version.c), rewritten only when the string changes, and linked into
 * the carma and carmad programs only: what else needs it is handed it (carmad_opts). */
#ifndef CARMA_UTIL_VERSION_H
#define CARMA_UTIL_VERSION_H

extern const char carma_version[];

#endif
