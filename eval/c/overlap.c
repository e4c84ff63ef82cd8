/* overlap: OSU-style communication/computation overlap of MPI_Ibarrier and
 * MPI_Iallreduce (8 bytes: one double, MPI_SUM).
 *
 * usage: overlap [phase_ms] [min_compute_us] [max_iters]
 *   phase_ms        wall time each timed phase should take (default 300)
 *   min_compute_us  lower bound on the compute time (default 200)
 *   max_iters       upper bound on iterations per phase (default 20000)
 *
 * For each collective, after a warm-up:
 *   1. pure: iterations of post + MPI_Wait, then an MPI_Barrier (untimed).
 *      t_pure = this rank's mean of post + wait.
 *   2. The compute time is max(max over ranks of t_pure, min_compute_us), as
 *      OSU sizes its dummy compute to the pure latency. The compute is a busy
 *      loop on a volatile, calibrated in loops per us at start-up; it makes no
 *      MPI call, so only asynchronous progress can move the collective.
 *   3. overlapped: post, compute, MPI_Wait, then an MPI_Barrier (untimed).
 *      t_ovl = mean of post..wait, t_cpu = mean of the compute part alone.
 * Each phase is time-bounded (rank 0 broadcasts a stop flag every 4
 * iterations, outside the timed parts), so every rank runs the same count.
 *
 * overlap % = max(0, 100 * (1 - (t_ovl - t_cpu) / t_pure)), OSU's formula,
 * from the means over ranks of t_ovl, t_cpu and t_pure; the minimum of the
 * per-rank figure is printed too. Output (rank 0), one line per collective:
 *   overlap coll=ibarrier|iallreduce ranks=P iters=N overall_us=.. compute_us=..
 *           pure_us=.. overlap_pct=.. min_overlap_pct=.. target_compute_us=..
 * Every MPI_Iallreduce result is checked: sum over ranks of (rank+1+i%1000)
 * must equal P(P+1)/2 + P*(i%1000) exactly; a mismatch aborts with exit 1. */
#include "eval_util.h"

#include <string.h>

enum { IBARRIER, IALLREDUCE };
static const char *NAMES[] = {"ibarrier", "iallreduce"};

static int size_g;
static double loops_per_us;

static void post(int coll, long i, double *in, double *out, MPI_Request *req) {
    if (coll == IBARRIER) {
        MPI_Ibarrier(MPI_COMM_WORLD, req);
    } else {
        int rank;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        *in = (double)(rank + 1) + (double)(i % 1000);
        *out = -1.0;
        MPI_Iallreduce(in, out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, req);
    }
}

static void check(int coll, long i, double out) {
    if (coll != IALLREDUCE) return;
    double p = (double)size_g;
    double want = p * (p + 1) / 2 + p * (double)(i % 1000);
    if (out != want) {
        char msg[200];
        snprintf(msg, sizeof msg, "MPI_Iallreduce(MPI_DOUBLE, MPI_SUM) gave %.17g, expected %.17g "
                 "at iteration %ld", out, want, i);
        eu_fail("overlap", msg);
    }
}

static void run(int coll, double phase_us, double min_compute_us, long max_iters) {
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double in, out;
    MPI_Request req;
    long i = 0;

    for (; i < 20; i++) { /* warm-up */
        post(coll, i, &in, &out, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        check(coll, i, out);
        MPI_Barrier(MPI_COMM_WORLD);
    }

    /* 1. pure communication */
    double pure = 0, start = eu_now_us();
    long n = 0;
    for (;; n++, i++) {
        if (n % 4 == 0 && eu_should_stop(start, phase_us, n, 10, max_iters)) break;
        double t0 = MPI_Wtime();
        post(coll, i, &in, &out, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        pure += MPI_Wtime() - t0;
        check(coll, i, out);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    double t_pure = pure * 1e6 / (double)n, pure_max;
    MPI_Allreduce(&t_pure, &pure_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    double target = pure_max > min_compute_us ? pure_max : min_compute_us;
    uint64_t loops = (uint64_t)(target * loops_per_us);

    /* 3. post, compute, wait */
    double ovl = 0, cpu = 0;
    long m = 0;
    start = eu_now_us();
    for (;; m++, i++) {
        if (m % 4 == 0 && eu_should_stop(start, phase_us, m, 10, max_iters)) break;
        double t0 = MPI_Wtime();
        post(coll, i, &in, &out, &req);
        double c0 = MPI_Wtime();
        eu_spin_loops(loops);
        double c1 = MPI_Wtime();
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        double t1 = MPI_Wtime();
        ovl += t1 - t0;
        cpu += c1 - c0;
        check(coll, i, out);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    double mine[3] = {ovl * 1e6 / (double)m, cpu * 1e6 / (double)m, t_pure};
    double my_ovl = 100.0 * (1.0 - (mine[0] - mine[1]) / mine[2]);
    if (my_ovl < 0) my_ovl = 0;
    double sum[3], min_ovl;
    MPI_Reduce(mine, sum, 3, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&my_ovl, &min_ovl, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        double o = sum[0] / size_g, c = sum[1] / size_g, p = sum[2] / size_g;
        double pct = 100.0 * (1.0 - (o - c) / p);
        if (pct < 0) pct = 0;
        printf("overlap coll=%s ranks=%d iters=%ld overall_us=%.3f compute_us=%.3f pure_us=%.3f "
               "overlap_pct=%.2f min_overlap_pct=%.2f target_compute_us=%.3f\n",
               NAMES[coll], size_g, m, o, c, p, pct, min_ovl, target);
        fflush(stdout);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size_g);
    double phase_us = (argc > 1 ? atof(argv[1]) : 300.0) * 1e3;
    double min_compute_us = argc > 2 ? atof(argv[2]) : 200.0;
    long max_iters = argc > 3 ? atol(argv[3]) : 20000;
    if (phase_us <= 0) phase_us = 300e3;
    if (max_iters < 10) max_iters = 10;
    loops_per_us = eu_calibrate_loops_per_us();
    run(IBARRIER, phase_us, min_compute_us, max_iters);
    run(IALLREDUCE, phase_us, min_compute_us, max_iters);
    MPI_Finalize();
    return 0;
}
