/* reduce_lat: 8-byte MPI_Reduce latency, seed 003's method (Fig. 2).
 *
 * usage: reduce_lat [batches] [batch_ms] [max_iters]
 *   batches    timed batches per type (default 5)
 *   batch_ms   wall time one batch should take (default 100)
 *   max_iters  upper bound on iterations per batch (default 20000)
 *
 * Needs at least 2 ranks. The "leaf" is rank P-1, the deepest rank of a
 * binomial tree rooted at 0. First ranks 0 and P-1 measure the one-way
 * latency l of an empty message: half the mean round trip of 200, the lowest
 * of 5 such rounds after a warm-up round (a noisy round must not inflate l).
 * Then, per iteration: MPI_Barrier; the leaf reads the clock; every
 * rank calls MPI_Reduce (one element, MPI_SUM, root 0); the root checks the
 * result and sends an empty message to the leaf; the leaf receives it and
 * reads the clock again. Latency = that interval minus l: the time from the
 * leaf starting the reduction until the root has the result. Batches are
 * time-bounded (rank 0 broadcasts a stop flag every 4 iterations, outside the
 * timing; at least 4 iterations, after 10 untimed ones before the first batch
 * of each type and 2 before the others).
 *
 * Output (rank 0), one line per batch, MPI_LONG first, then MPI_DOUBLE:
 *   reduce_lat type=long|double ranks=P batch=B iters=N us=<mean latency> oneway_us=l
 * Root checks every result: sum over ranks of (rank+1+i%1000) must equal
 * P(P+1)/2 + P*(i%1000) exactly; a mismatch aborts with exit 1. */
#include "eval_util.h"

static int rank_g, size_g;

static double oneway(void) {
    int leaf = size_g - 1;
    double best = 0;
    for (int round = -1; round < 5; round++) { /* round -1: warm-up */
        double t0 = MPI_Wtime();
        for (int i = 0; i < 200; i++) {
            if (rank_g == 0) {
                MPI_Send(NULL, 0, MPI_BYTE, leaf, 1, MPI_COMM_WORLD);
                MPI_Recv(NULL, 0, MPI_BYTE, leaf, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank_g == leaf) {
                MPI_Recv(NULL, 0, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(NULL, 0, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
            }
        }
        double l = (MPI_Wtime() - t0) * 1e6 / 400.0;
        if (round >= 0 && (round == 0 || l < best)) best = l;
    }
    MPI_Bcast(&best, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return best;
}

/* One batch; returns the leaf's mean latency at rank 0 (iterations in *iters). */
static double batch(int is_double, double batch_us, long max_iters, double l, long warm,
                    long *iters) {
    int leaf = size_g - 1;
    double sum = 0, start = 0;
    long n = 0;
    for (long i = -warm;; i++) {
        if (i == 0) start = eu_now_us();
        if (i >= 0 && i % 4 == 0 && eu_should_stop(start, batch_us, i, 4, max_iters)) break;
        long k = (i < 0 ? -i : i) % 1000, lin = rank_g + 1 + k, lout = -1;
        double din = (double)lin, dout = -1;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (is_double)
            MPI_Reduce(&din, &dout, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        else
            MPI_Reduce(&lin, &lout, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank_g == 0) {
            long want = (long)size_g * (size_g + 1) / 2 + (long)size_g * k;
            if (is_double ? dout != (double)want : lout != want) {
                char msg[200];
                snprintf(msg, sizeof msg, "MPI_Reduce(%s, MPI_SUM) gave %.17g, expected %ld "
                         "at iteration %ld", is_double ? "MPI_DOUBLE" : "MPI_LONG",
                         is_double ? dout : (double)lout, want, i);
                eu_fail("reduce_lat", msg);
            }
            MPI_Send(NULL, 0, MPI_BYTE, leaf, 2, MPI_COMM_WORLD);
        } else if (rank_g == leaf) {
            MPI_Recv(NULL, 0, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (i >= 0) {
                sum += (MPI_Wtime() - t0) * 1e6 - l;
                n++;
            }
        }
        if (i >= 0 && rank_g == 0) n++;
    }
    double mean = rank_g == leaf && n ? sum / (double)n : 0;
    if (rank_g == leaf) MPI_Send(&mean, 1, MPI_DOUBLE, 0, 3, MPI_COMM_WORLD);
    if (rank_g == 0) MPI_Recv(&mean, 1, MPI_DOUBLE, leaf, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    *iters = n;
    return mean;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_g);
    MPI_Comm_size(MPI_COMM_WORLD, &size_g);
    int batches = argc > 1 ? atoi(argv[1]) : 5;
    double batch_us = (argc > 2 ? atof(argv[2]) : 100.0) * 1e3;
    long max_iters = argc > 3 ? atol(argv[3]) : 20000;
    if (batches < 1) batches = 1;
    if (batch_us <= 0) batch_us = 100e3;
    if (max_iters < 4) max_iters = 4;
    if (size_g < 2) {
        if (rank_g == 0) fprintf(stderr, "reduce_lat: needs at least 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
    double l = oneway();
    for (int t = 0; t < 2; t++) {
        for (int b = 0; b < batches; b++) {
            long n;
            double us = batch(t, batch_us, max_iters, l, b == 0 ? 10 : 2, &n);
            if (rank_g == 0) {
                printf("reduce_lat type=%s ranks=%d batch=%d iters=%ld us=%.4f oneway_us=%.4f\n",
                       t ? "double" : "long", size_g, b, n, us, l);
                fflush(stdout);
            }
        }
    }
    MPI_Finalize();
    return 0;
}
