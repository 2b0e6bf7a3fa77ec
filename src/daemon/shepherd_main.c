/* carma-shepherd: the program carmad spawns for each job attempt (daemon/shepherd.h). */
#include "daemon/shepherd.h"

int main(int argc, char **argv)
{
    return carma_shepherd_main(argc, argv);
}
