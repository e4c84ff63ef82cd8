/* barrier_lat: MPI_Barrier latency (seed 000 Fig. 4/5, seed 002 sec. 3.3).
 *
 * usage: barrier_lat [batches] [target_ms] [max_iters]
 *   batches    timed batches to run (default 5)
 *   target_ms  wall time one batch should take (default 100)
 *   max_iters  upper bound on barriers per batch (default 100000)
 *
 * Rank 0 calibrates the batch length during warm-up (doubling the number of
 * barriers until a round takes at least target_ms/8), then every batch runs
 * the same fixed number of back-to-back barriers. Output (rank 0 only):
 *   barrier_cfg <ranks> <iters per batch>
 *   barrier_us <mean us per barrier>        one line per batch
 * The batch value is the maximum over ranks of each rank's mean. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int batches = argc > 1 ? atoi(argv[1]) : 5;
    double target = (argc > 2 ? atof(argv[2]) : 100.0) / 1e3;
    long max_iters = argc > 3 ? atol(argv[3]) : 100000;
    if (batches < 1) batches = 1;
    if (target <= 0) target = 0.1;
    if (max_iters < 1) max_iters = 1;

    /* Warm-up and calibration: rounds of n barriers, n doubling. Rank 0
     * decides when to stop and tells the others, so all agree on counts. */
    long n = 1, iters = 1;
    for (;;) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (long i = 0; i < n; i++) MPI_Barrier(MPI_COMM_WORLD);
        double dt = MPI_Wtime() - t0;
        long decision = 0; /* 0: go on doubling; >0: iterations per batch */
        if (rank == 0 && (dt >= target / 8 || n >= max_iters)) {
            double per = dt / n;
            double want = per > 0 ? target / per : (double)max_iters;
            decision = want < 1 ? 1 : (want > max_iters ? max_iters : (long)want);
        }
        MPI_Bcast(&decision, 1, MPI_LONG, 0, MPI_COMM_WORLD);
        if (decision > 0) { iters = decision; break; }
        n *= 2;
    }
    if (rank == 0) {
        printf("barrier_cfg %d %ld\n", size, iters);
        fflush(stdout);
    }

    for (int b = 0; b < batches; b++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (long i = 0; i < iters; i++) MPI_Barrier(MPI_COMM_WORLD);
        double us = (MPI_Wtime() - t0) * 1e6 / (double)iters, worst = 0;
        MPI_Reduce(&us, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            printf("barrier_us %.4f\n", worst);
            fflush(stdout);
        }
    }
    MPI_Finalize();
    return 0;
}
