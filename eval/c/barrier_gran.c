/* barrier_gran: granularity of computation between barriers (seed 000
 * sec. 4.3, Fig. 6/7).
 *
 * usage: barrier_gran [cell_ms] [max_iters] [g,g,...]
 *   cell_ms    wall time one compute size should take (default 150)
 *   max_iters  upper bound on iterations per size (default 10000)
 *   g,...      compute per iteration in us (default 0,1,2,5,10,20,50,100,200,
 *              500,1000,2000,5000,10000)
 *
 * For each g: 5 warm-up iterations time one iteration (rank 0), which sizes
 * the cell; then iterations of compute(g) (a busy wait on MPI_Wtime) followed
 * by MPI_Barrier, with nothing else in the loop. Per rank: loop = wall time of
 * the loop, comp = time spent computing. Output (rank 0), one line per g:
 *   granularity g_us=g ranks=P iters=N iter_us=.. iter_max_us=.. compute_us=..
 *               barrier_us=.. eff=..
 * iter_us, compute_us: means over ranks per iteration; barrier_us = iter_us -
 * compute_us; eff: mean over ranks of comp / loop (seed 000's efficiency
 * factor: computation over computation plus barrier). */
#include "eval_util.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double cell_us = (argc > 1 ? atof(argv[1]) : 150.0) * 1e3;
    long max_iters = argc > 2 ? atol(argv[2]) : 10000;
    double gs[64];
    int ng = eu_parse_list(argc > 3 ? argv[3] : "0,1,2,5,10,20,50,100,200,500,1000,2000,5000,10000",
                           gs, 64);
    if (cell_us <= 0) cell_us = 150e3;
    if (max_iters < 10) max_iters = 10;

    for (int j = 0; j < ng; j++) {
        double g = gs[j];
        MPI_Barrier(MPI_COMM_WORLD);
        double w0 = MPI_Wtime();
        for (int i = 0; i < 5; i++) {
            eu_compute_us(g);
            MPI_Barrier(MPI_COMM_WORLD);
        }
        long iters = eu_agree_iters((MPI_Wtime() - w0) * 1e6 / 5, cell_us, 10, max_iters);
        MPI_Barrier(MPI_COMM_WORLD);
        double comp = 0, t0 = MPI_Wtime();
        for (long i = 0; i < iters; i++) {
            comp += eu_compute_us(g);
            MPI_Barrier(MPI_COMM_WORLD);
        }
        double loop = (MPI_Wtime() - t0) * 1e6;
        double mine[3] = {loop / (double)iters, comp / (double)iters, loop > 0 ? comp / loop : 0};
        double *all = eu_gather(mine, 3);
        if (rank == 0) {
            double it = 0, itmax = 0, c = 0, e = 0;
            for (int r = 0; r < size; r++) {
                it += all[3 * r];
                if (all[3 * r] > itmax) itmax = all[3 * r];
                c += all[3 * r + 1];
                e += all[3 * r + 2];
            }
            it /= size;
            c /= size;
            printf("granularity g_us=%g ranks=%d iters=%ld iter_us=%.3f iter_max_us=%.3f "
                   "compute_us=%.3f barrier_us=%.3f eff=%.5f\n", g, size, iters, it, itmax, c,
                   it - c, e / size);
            fflush(stdout);
            free(all);
        }
    }
    MPI_Finalize();
    return 0;
}
