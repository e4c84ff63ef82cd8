/* Allreduce (and now and then Reduce and Bcast) in a loop for argv[1]
 * seconds (default 40), checking every result. pytest kills a rank or the
 * offload engine while this runs and checks the job ends fast and clean;
 * left alone it passes. */
#include "lt.h"

#define N 1000

int main(int argc, char **argv)
{
    static int in[N], out[N];
    double secs = argc > 1 ? atof(argv[1]) : 40.0;
    long iter = 0;
    int go = 1;
    lt_init("offload_loop", &argc, &argv);
    double end = MPI_Wtime() + secs;
    if (lt_rank == 0) {
        printf("LOOPING for %.0f s\n", secs);
        fflush(stdout);
    }
    while (go) {
        for (int i = 0; i < N; i++)
            in[i] = (int)((iter + i) % 1000) + lt_rank;
        MPI_OK(MPI_Allreduce(in, out, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        for (int i = 0; i < N; i++) {
            int want = (int)((iter + i) % 1000) * lt_size + lt_size * (lt_size - 1) / 2;
            if (out[i] != want) {
                CHECK(0, "iteration %ld element %d: got %d want %d", iter, i, out[i], want);
                break;
            }
        }
        if (iter % 16 == 0) {
            int r = 0;
            MPI_OK(MPI_Reduce(&lt_rank, &r, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD));
            if (lt_rank == 0)
                CHECK(r == lt_size * (lt_size - 1) / 2, "Reduce: got %d", r);
            /* Rank 0's clock decides when everyone stops. */
            go = lt_rank == 0 ? MPI_Wtime() < end : 0;
            MPI_OK(MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD));
        }
        iter++;
    }
    if (lt_rank == 0) {
        printf("%ld iterations\n", iter);
        fflush(stdout);
    }
    return lt_finish();
}
