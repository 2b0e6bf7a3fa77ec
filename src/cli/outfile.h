/* A file a command writes whole or not at all (an HTML report): a write that fails (a
 * full disk, a file size limit) or is interrupted leaves the old file as it was, not
 * half of a new one. */
#ifndef CARMA_CLI_OUTFILE_H
#define CARMA_CLI_OUTFILE_H

#include <stddef.h>
#include <stdio.h>

struct cli_outfile {
    FILE *f;
    int fd;              /* f's descriptor (f writes through it) */
    int werr;            /* errno of f's first write that failed, 0: none */
    char final[4096];    /* what the new file replaces once whole */
    char tmp[4096 + 256]; /* the new file beside it; "": written in place */
};

/* Opens path for writing. A regular file or a new path (through a link: its target) is
 * written as a new file beside it, given the old file's owner, group and permissions
 * (made with no wider ones than those, so that no other user can open it before),
 * that cli_outfile_close renames over it. Written in place instead, as a shell's `>`
 * would (whole-or-nothing then lost, what the file is kept): what is not a regular file
 * (/dev/stdout, a FIFO), a link that leads nowhere, a file whose replacing would lose
 * what it is (one of several hard links; a file with ACLs or other extended attributes
 * but an SELinux label; one whose owner and group the new file cannot be given: another
 * user's, written by a user allowed to write it), and a path where no new file can be
 * made beside it (a folder the caller may not write, a file system whose names are
 * shorter than NAME_MAX). The new file's name fits NAME_MAX whatever the target's (the
 * target's name cut in it). o must stay where it is until closed (f writes through it).
 * 0, or a negative errno. */
int cli_outfile_open(struct cli_outfile *o, const char *path);

/* Closes o's stream; the new file then takes the old one's place, unless `failed` (the
 * caller's write failed) or the close or the rename fails, when it is removed and the old
 * file stays. 0, or -1 with msg (cap bytes) saying why when the close or the rename
 * failed, or when a write failed ("write failed: " and the errno of the write() that
 * failed, in place of the caller's message: errno itself may have changed since);
 * another failure of the caller keeps its own message. */
int cli_outfile_close(struct cli_outfile *o, int failed, char *msg, size_t cap);

/* For a fatal signal's handler (async-signal-safe): removes the new file of the one
 * cli_outfile open now, if any. */
void cli_outfile_abandon(void);

/* Catches SIGINT, SIGTERM and SIGHUP (not where they are ignored: nohup, a background
 * job of a script) with a handler that calls first (async-signal-safe; NULL: none),
 * removes the open cli_outfile's new file (cli_outfile_abandon), and lets the signal end
 * the process as the shell expects (status 128 + sig). Once, before the first open. */
void cli_fatal_signals_catch(void (*first)(void));

#endif
