/* barrier_skew: barriers with varying arrival times (seed 000 sec. 4.4,
 * Fig. 8/9).
 *
 * usage: barrier_skew [cell_ms] [max_iters] [means] [skews]
 *   cell_ms    wall time one (mean, skew) cell should take (default 150)
 *   max_iters  upper bound on iterations per cell (default 10000)
 *   means      mean compute times in us (default 64,256,1024,4096)
 *   skews      variations in % of the mean (default 0,5,10,20)
 *
 * Each iteration of a cell, every rank computes (a busy wait on MPI_Wtime)
 * for mean * (1 + skew/100 * u), u uniform in [-1, 1) from a splitmix64
 * stream seeded from (rank, mean, skew), then calls MPI_Barrier. 3 warm-up
 * iterations (another stream) size the cell. Rank 0 then replays every
 * rank's stream to get the ideal time per iteration: the mean over
 * iterations of the longest compute of that iteration (a barrier that cost
 * nothing). Output (rank 0), one line per cell:
 *   skew mean_us=M skew_pct=S ranks=P iters=N iter_us=.. barrier_us=..
 *        barrier_max_us=.. compute_us=.. ideal_us=..
 * iter_us: the slowest rank's loop time per iteration; barrier_us: mean over
 * ranks of the mean time inside MPI_Barrier (barrier_max_us: the largest);
 * compute_us: mean over ranks of the compute per iteration. */
#include "eval_util.h"

static double draw(uint64_t *s, double mean, double skew_pct) {
    return mean * (1.0 + skew_pct / 100.0 * (2.0 * eu_uniform(s) - 1.0));
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double cell_us = (argc > 1 ? atof(argv[1]) : 150.0) * 1e3;
    long max_iters = argc > 2 ? atol(argv[2]) : 10000;
    double means[32], skews[32];
    int nm = eu_parse_list(argc > 3 ? argv[3] : "64,256,1024,4096", means, 32);
    int ns = eu_parse_list(argc > 4 ? argv[4] : "0,5,10,20", skews, 32);
    if (cell_us <= 0) cell_us = 150e3;
    if (max_iters < 10) max_iters = 10;
    uint64_t *streams = rank == 0 ? malloc(sizeof(uint64_t) * (size_t)size) : NULL;

    for (int a = 0; a < nm; a++)
        for (int b = 0; b < ns; b++) {
            double m = means[a], sk = skews[b];
            uint64_t key_a = (uint64_t)m, key_b = (uint64_t)(sk * 100);
            uint64_t warm = eu_seed(rank, key_a, key_b ^ 0xfffff), rng = eu_seed(rank, key_a, key_b);
            MPI_Barrier(MPI_COMM_WORLD);
            double w0 = MPI_Wtime();
            for (int i = 0; i < 3; i++) {
                eu_compute_us(draw(&warm, m, sk));
                MPI_Barrier(MPI_COMM_WORLD);
            }
            long iters = eu_agree_iters((MPI_Wtime() - w0) * 1e6 / 3, cell_us, 10, max_iters);
            MPI_Barrier(MPI_COMM_WORLD);
            double comp = 0, in = 0, t0 = MPI_Wtime();
            for (long i = 0; i < iters; i++) {
                comp += eu_compute_us(draw(&rng, m, sk));
                double tb = MPI_Wtime();
                MPI_Barrier(MPI_COMM_WORLD);
                in += MPI_Wtime() - tb;
            }
            double loop = (MPI_Wtime() - t0) * 1e6;
            double mine[3] = {loop / (double)iters, in * 1e6 / (double)iters, comp / (double)iters};
            double *all = eu_gather(mine, 3);
            if (rank == 0) {
                double itmax = 0, bsum = 0, bmax = 0, csum = 0, ideal = 0;
                for (int r = 0; r < size; r++) {
                    if (all[3 * r] > itmax) itmax = all[3 * r];
                    bsum += all[3 * r + 1];
                    if (all[3 * r + 1] > bmax) bmax = all[3 * r + 1];
                    csum += all[3 * r + 2];
                    streams[r] = eu_seed(r, key_a, key_b);
                }
                for (long i = 0; i < iters; i++) {
                    double worst = 0;
                    for (int r = 0; r < size; r++) {
                        double d = draw(&streams[r], m, sk);
                        if (d > worst) worst = d;
                    }
                    ideal += worst;
                }
                printf("skew mean_us=%g skew_pct=%g ranks=%d iters=%ld iter_us=%.3f "
                       "barrier_us=%.3f barrier_max_us=%.3f compute_us=%.3f ideal_us=%.3f\n", m,
                       sk, size, iters, itmax, bsum / size, bmax, csum / size,
                       ideal / (double)iters);
                fflush(stdout);
                free(all);
            }
        }
    free(streams);
    MPI_Finalize();
    return 0;
}
