/* barrier_ovh: MPI-level barrier latency for the MPI-layer overhead of an
 * offloaded barrier (seed 000 sec. 4.1).
 *
 * usage: barrier_ovh [iters] [skip]
 *   iters  consecutive MPI_Barrier calls (default 10000, as in the seed)
 *   skip   leading barriers left out of the steady figure (default 10)
 *
 * Every barrier is timed, the first included, so the mean covers the same
 * barriers as the engine's own mean (LANAI_STATS=1: barrier_us); nothing
 * else runs between MPI_Init and the loop. Output (rank 0):
 *   barrier_ovh ranks=P iters=N all_us=.. all_max_us=.. steady_us=..
 *               steady_max_us=.. first_max_us=..
 * all_us: mean over ranks of each rank's mean per barrier (all N); *_max_us:
 * the largest rank's; steady_us: the same without the first `skip`;
 * first_max_us: the slowest rank's first barrier (connection set-up). */
#include "eval_util.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long iters = argc > 1 ? atol(argv[1]) : 10000;
    long skip = argc > 2 ? atol(argv[2]) : 10;
    if (iters < 2) iters = 2;
    if (skip < 1 || skip >= iters) skip = 1;

    double t0 = MPI_Wtime(), t_first = 0, t_skip = 0;
    for (long i = 0; i < iters; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (i == 0) t_first = MPI_Wtime();
        if (i == skip - 1) t_skip = MPI_Wtime();
    }
    double t1 = MPI_Wtime();
    double mine[3] = {(t1 - t0) * 1e6 / (double)iters,
                      (t1 - t_skip) * 1e6 / (double)(iters - skip), (t_first - t0) * 1e6};
    double *all = eu_gather(mine, 3);
    if (rank == 0) {
        double sum[3] = {0, 0, 0}, max[3] = {0, 0, 0};
        for (int r = 0; r < size; r++)
            for (int k = 0; k < 3; k++) {
                sum[k] += all[3 * r + k];
                if (all[3 * r + k] > max[k]) max[k] = all[3 * r + k];
            }
        printf("barrier_ovh ranks=%d iters=%ld all_us=%.4f all_max_us=%.4f steady_us=%.4f "
               "steady_max_us=%.4f first_max_us=%.1f\n", size, iters, sum[0] / size, max[0],
               sum[1] / size, max[1], max[2]);
        fflush(stdout);
        free(all);
    }
    MPI_Finalize();
    return 0;
}
