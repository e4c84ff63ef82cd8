/* synth_app: seed 000's three synthetic applications (sec. 4.5, Fig. 10).
 *
 * usage: synth_app [cell_ms] [max_runs] [apps]
 *   cell_ms   wall time one application should take (default 300)
 *   max_runs  upper bound on runs per application (default 10000, the seed's)
 *   apps      which applications, comma-separated (default 1,2,3)
 *
 * An application is a sequence of steps, each a computation followed by
 * MPI_Barrier. Step means (us): app 1: 10, 20, .., 80 (8 steps, 360 in all;
 * communication-intensive); app 2: 10, 20, .., 200 (20 steps, 2100); app 3:
 * 100, 500, 1000, 2000, 3000, 500, 500, 250, 600, 1000 (10 steps, 9450;
 * computation-intensive). Within a step each rank computes (a busy wait on
 * MPI_Wtime) for the mean +-10%, uniform, from a splitmix64 stream seeded
 * from (rank, app). Two warm-up runs (another stream) size the cell; rank 0
 * replays every rank's stream for the ideal run time (per step, the longest
 * compute; a barrier that cost nothing). Output (rank 0), per application:
 *   synth app=A steps=S mean_compute_us=C ranks=P runs=N run_us=.. compute_us=..
 *         barrier_us=.. ideal_us=.. eff=..
 * run_us: the slowest rank's loop time per run; compute_us, barrier_us: means
 * over ranks per run; eff: mean over ranks of compute / loop time. */
#include "eval_util.h"

static const double APP1[] = {10, 20, 30, 40, 50, 60, 70, 80};
static const double APP3[] = {100, 500, 1000, 2000, 3000, 500, 500, 250, 600, 1000};

static int steps_of(int app, double *out) {
    if (app == 1) {
        for (int i = 0; i < 8; i++) out[i] = APP1[i];
        return 8;
    }
    if (app == 2) {
        for (int i = 0; i < 20; i++) out[i] = 10.0 * (i + 1);
        return 20;
    }
    for (int i = 0; i < 10; i++) out[i] = APP3[i];
    return 10;
}

static double draw(uint64_t *s, double mean) {
    return mean * (1.0 + 0.1 * (2.0 * eu_uniform(s) - 1.0));
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double cell_us = (argc > 1 ? atof(argv[1]) : 300.0) * 1e3;
    long max_runs = argc > 2 ? atol(argv[2]) : 10000;
    double apps[8];
    int na = eu_parse_list(argc > 3 ? argv[3] : "1,2,3", apps, 8);
    if (cell_us <= 0) cell_us = 300e3;
    if (max_runs < 3) max_runs = 3;
    uint64_t *streams = rank == 0 ? malloc(sizeof(uint64_t) * (size_t)size) : NULL;

    for (int a = 0; a < na; a++) {
        int app = (int)apps[a];
        if (app < 1 || app > 3) continue;
        double mean[20], total = 0;
        int ns = steps_of(app, mean);
        for (int s = 0; s < ns; s++) total += mean[s];
        uint64_t warm = eu_seed(rank, (uint64_t)app, 0xfffff), rng = eu_seed(rank, (uint64_t)app, 0);
        MPI_Barrier(MPI_COMM_WORLD);
        double w0 = MPI_Wtime();
        for (int run = 0; run < 2; run++)
            for (int s = 0; s < ns; s++) {
                eu_compute_us(draw(&warm, mean[s]));
                MPI_Barrier(MPI_COMM_WORLD);
            }
        long runs = eu_agree_iters((MPI_Wtime() - w0) * 1e6 / 2, cell_us, 3, max_runs);
        MPI_Barrier(MPI_COMM_WORLD);
        double comp = 0, in = 0, t0 = MPI_Wtime();
        for (long run = 0; run < runs; run++)
            for (int s = 0; s < ns; s++) {
                comp += eu_compute_us(draw(&rng, mean[s]));
                double tb = MPI_Wtime();
                MPI_Barrier(MPI_COMM_WORLD);
                in += MPI_Wtime() - tb;
            }
        double loop = (MPI_Wtime() - t0) * 1e6;
        double mine[4] = {loop / (double)runs, comp / (double)runs, in * 1e6 / (double)runs,
                          loop > 0 ? comp / loop : 0};
        double *all = eu_gather(mine, 4);
        if (rank == 0) {
            double rmax = 0, c = 0, b = 0, e = 0, ideal = 0;
            for (int r = 0; r < size; r++) {
                if (all[4 * r] > rmax) rmax = all[4 * r];
                c += all[4 * r + 1];
                b += all[4 * r + 2];
                e += all[4 * r + 3];
                streams[r] = eu_seed(r, (uint64_t)app, 0);
            }
            for (long run = 0; run < runs; run++)
                for (int s = 0; s < ns; s++) {
                    double worst = 0;
                    for (int r = 0; r < size; r++) {
                        double d = draw(&streams[r], mean[s]);
                        if (d > worst) worst = d;
                    }
                    ideal += worst;
                }
            printf("synth app=%d steps=%d mean_compute_us=%g ranks=%d runs=%ld run_us=%.3f "
                   "compute_us=%.3f barrier_us=%.3f ideal_us=%.3f eff=%.5f\n", app, ns, total,
                   size, runs, rmax, c / size, b / size, ideal / (double)runs, e / size);
            fflush(stdout);
            free(all);
        }
    }
    free(streams);
    MPI_Finalize();
    return 0;
}
