/* MPI_Abort from the last rank while the others block in MPI_Recv from it:
 * the whole job must end with exit code 7. Never prints PASS. */
#include "lt.h"

int main(int argc, char **argv)
{
    int v = 0;
    lt_init("abort", &argc, &argv);
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    if (lt_rank == lt_size - 1) {
        printf("abort: rank %d calling MPI_Abort(MPI_COMM_WORLD, 7)\n", lt_rank);
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 7);
        printf("FAIL abort rank %d: MPI_Abort returned\n", lt_rank);
        return 1;
    }
    MPI_Recv(&v, 1, MPI_INT, lt_size - 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("FAIL abort rank %d: MPI_Recv from the aborting rank returned\n", lt_rank);
    return 1;
}
