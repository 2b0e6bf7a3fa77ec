#include "util/fd.h"

#include <fcntl.h>

int carma_fd_fill_std(void)
{
    for (int fd = 0; fd < 3; fd++)
        if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) < 0) /* the lowest free */
            return -1;
    return 0;
}
