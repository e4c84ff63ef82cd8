/* A rank dies of SIGSEGV while the others block in MPI_Recv from it: the
 * job must end promptly with a non-zero exit. Never prints PASS. */
#include "lt.h"
#include <signal.h>
#include <sys/resource.h>

int main(int argc, char **argv)
{
    int v = 0, victim;
    struct rlimit no_core = {0, 0};
    lt_init("crash", &argc, &argv);
    victim = lt_size > 1 ? 1 : 0;
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    if (lt_rank == victim) {
        setrlimit(RLIMIT_CORE, &no_core); /* no core files in the test tree */
        printf("crash: rank %d raising SIGSEGV\n", lt_rank);
        fflush(stdout);
        raise(SIGSEGV);
        printf("FAIL crash rank %d: survived SIGSEGV\n", lt_rank);
        return 1;
    }
    MPI_Recv(&v, 1, MPI_INT, victim, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("FAIL crash rank %d: MPI_Recv from the dead rank returned\n", lt_rank);
    return 1;
}
