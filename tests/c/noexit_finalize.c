/* Rank 0 leaves main without calling MPI_Finalize while the others call
 * it. The launcher must notice and exit non-zero. Never prints PASS. */
#include "lt.h"

int main(int argc, char **argv)
{
    lt_init("noexit_finalize", &argc, &argv);
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    if (lt_rank == 0) {
        printf("noexit_finalize: rank 0 leaving main early\n");
        fflush(stdout);
        return 0;
    }
    MPI_Finalize();
    return 0;
}
