/* reduce_cpu: host time spent inside an 8-byte MPI_Reduce, without and with
 * process skew (seed 003, Fig. 5-7).
 *
 * usage: reduce_cpu [cell_ms] [max_iters] [delays] [sleep|spin]
 *   cell_ms    wall time one (type, delay) cell should take (default 500)
 *   max_iters  upper bound on iterations per cell (default 10000)
 *   delays     comma-separated maximum delays D in us (default 0,100,250,500,1000)
 *   sleep|spin how a rank waits out its delay (default sleep: the core is free
 *              for other ranks, as each rank had its own processor in seed 003)
 *
 * For each type (MPI_LONG, then MPI_DOUBLE; MPI_SUM, root 0) and each D, after
 * a warm-up, every iteration is: MPI_Barrier, a random delay of 0..D us (a
 * splitmix64 stream seeded from the rank, the type and D, so the same on every
 * implementation), then one timed MPI_Reduce of one element. Time inside =
 * wall time of the MPI_Reduce call. A cell is time-bounded: rank 0 broadcasts
 * a stop flag every 4 iterations, before the barrier, outside the timing
 * (at least 4 iterations, after 3 untimed ones).
 *
 * Output (rank 0), one line per cell:
 *   reduce_cpu type=long|double delay_us=D ranks=P iters=N all_us=.. nonroot_us=..
 *              root_us=.. max_us=..
 * all_us: mean over ranks of each rank's mean time inside; nonroot_us: the same
 * without rank 0; root_us: rank 0's; max_us: the largest rank mean.
 * Root checks every result: sum over ranks of (rank+1+i%1000) must equal
 * P(P+1)/2 + P*(i%1000) exactly; a mismatch aborts with exit 1. */
#include "eval_util.h"

#include <string.h>

static int rank_g, size_g;

static double cell(int is_double, int delay_us, double cell_us, long max_iters, int spin) {
    uint64_t rng = 0x5eed0003ull ^ ((uint64_t)(rank_g + 1) << 32) ^ ((uint64_t)delay_us << 8) ^
                   (uint64_t)is_double;
    double t_in = 0, start = 0;
    long n = 0;
    for (long i = -3;; i++) { /* i < 0: warm-up, untimed */
        if (i == 0) start = eu_now_us();
        if (i >= 0 && i % 4 == 0 && eu_should_stop(start, cell_us, i, 4, max_iters)) break;
        MPI_Barrier(MPI_COMM_WORLD);
        if (delay_us > 0) {
            double d = (double)(eu_rand(&rng) % (uint64_t)(delay_us + 1));
            eu_wait_until(eu_now_us() + d, spin);
        }
        long k = (i < 0 ? -i : i) % 1000, lin = rank_g + 1 + k, lout = -1;
        double din = (double)lin, dout = -1;
        double t0 = MPI_Wtime();
        if (is_double)
            MPI_Reduce(&din, &dout, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        else
            MPI_Reduce(&lin, &lout, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        double dt = MPI_Wtime() - t0;
        if (i >= 0) {
            t_in += dt;
            n++;
        }
        if (rank_g == 0) {
            long want = (long)size_g * (size_g + 1) / 2 + (long)size_g * k;
            int bad = is_double ? dout != (double)want : lout != want;
            if (bad) {
                char msg[200];
                snprintf(msg, sizeof msg, "MPI_Reduce(%s, MPI_SUM) gave %.17g, expected %ld "
                         "at iteration %ld", is_double ? "MPI_DOUBLE" : "MPI_LONG",
                         is_double ? dout : (double)lout, want, i);
                eu_fail("reduce_cpu", msg);
            }
        }
    }
    double mean = n ? t_in * 1e6 / (double)n : 0;
    double *all = rank_g == 0 ? malloc(sizeof(double) * (size_t)size_g) : NULL;
    MPI_Gather(&mean, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank_g == 0) {
        double sum = 0, max = 0;
        for (int r = 0; r < size_g; r++) {
            sum += all[r];
            if (all[r] > max) max = all[r];
        }
        double nonroot = size_g > 1 ? (sum - all[0]) / (size_g - 1) : all[0];
        printf("reduce_cpu type=%s delay_us=%d ranks=%d iters=%ld all_us=%.3f nonroot_us=%.3f "
               "root_us=%.3f max_us=%.3f\n", is_double ? "double" : "long", delay_us, size_g, n,
               sum / size_g, nonroot, all[0], max);
        fflush(stdout);
        free(all);
    }
    return mean;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_g);
    MPI_Comm_size(MPI_COMM_WORLD, &size_g);
    double cell_us = (argc > 1 ? atof(argv[1]) : 500.0) * 1e3;
    long max_iters = argc > 2 ? atol(argv[2]) : 10000;
    const char *list = argc > 3 ? argv[3] : "0,100,250,500,1000";
    int spin = argc > 4 && strcmp(argv[4], "spin") == 0;
    if (cell_us <= 0) cell_us = 500e3;
    if (max_iters < 4) max_iters = 4;
    int delays[32], nd = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *tok = strtok(buf, ","); tok && nd < 32; tok = strtok(NULL, ","))
        delays[nd++] = atoi(tok) < 0 ? 0 : atoi(tok);
    for (int t = 0; t < 2; t++)
        for (int j = 0; j < nd; j++) cell(t, delays[j], cell_us, max_iters, spin);
    MPI_Finalize();
    return 0;
}
