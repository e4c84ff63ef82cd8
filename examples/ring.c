/* The README's example job: pass a token around a ring, then Allreduce.
 * Every rank checks what it got against what it computes itself. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char host[MPI_MAX_PROCESSOR_NAME];
    int len;
    MPI_Get_processor_name(host, &len);

    /* Ring: rank 0 starts a token at 0; every rank adds its rank + 1. */
    int token = 0, ok = 1;
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    if (size > 1) {
        if (rank == 0) {
            MPI_Send(&token, 1, MPI_INT, next, 7, MPI_COMM_WORLD);
            MPI_Recv(&token, 1, MPI_INT, prev, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            token += 1;
        } else {
            MPI_Recv(&token, 1, MPI_INT, prev, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            token += rank + 1;
            MPI_Send(&token, 1, MPI_INT, next, 7, MPI_COMM_WORLD);
        }
    } else {
        token = 1;
    }
    if (rank == 0 && token != size * (size + 1) / 2) ok = 0;

    /* Allreduce: the sum of squares of ranks. */
    long sq = (long)rank * rank, total = 0;
    MPI_Allreduce(&sq, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    long expect = (long)(size - 1) * size * (2 * size - 1) / 6;
    if (total != expect) ok = 0;

    int all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    printf("rank %d of %d on %s: allreduce sum of squares = %ld\n", rank, size, host, total);
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        printf("ring token after one lap = %d (expected %d)\n", token, size * (size + 1) / 2);
        printf("%s\n", all_ok ? "ring+allreduce: OK" : "ring+allreduce: WRONG RESULT");
    }
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
