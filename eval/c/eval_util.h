/* eval_util.h: helpers shared by the eval programs (overlap.c, reduce_cpu.c,
 * reduce_lat.c, barrier_ovh.c, barrier_gran.c, barrier_skew.c, synth_app.c).
 *
 * A monotonic clock that is not MPI, a seeded per-rank random stream, a
 * calibrated busy loop, and a stop flag that rank 0 broadcasts so that a
 * time-bounded loop runs the same number of iterations on every rank. */
#ifndef EVAL_UTIL_H
#define EVAL_UTIL_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline double eu_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* splitmix64: small, seedable, identical on every implementation. */
static inline uint64_t eu_rand(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The busy "compute": increments of a volatile, so the compiler keeps every
 * iteration, and no MPI call (the library gets no chance to progress). */
static volatile uint64_t eu_sink;

static inline void eu_spin_loops(uint64_t n) {
    for (uint64_t i = 0; i < n; i++) eu_sink++;
}

/* Loops per microsecond of CPU time: the fastest of a few timed runs of about
 * 20 ms of this thread's CPU clock, so time spent descheduled (ranks share the
 * cores) does not make the loop look slow. */
static inline double eu_calibrate_loops_per_us(void) {
    uint64_t n = 1 << 16;
    double best = 0;
    for (int tries = 0; tries < 5;) {
        struct timespec a, b;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
        eu_spin_loops(n);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
        double dt = (double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) / 1e3;
        if (dt < 20000) {
            n *= 2;
            continue;
        }
        double rate = (double)n / dt;
        if (rate > best) best = rate;
        tries++;
    }
    return best;
}

/* Sleep or spin until the monotonic clock reaches deadline_us. */
static inline void eu_wait_until(double deadline_us, int spin) {
    if (spin) {
        while (eu_now_us() < deadline_us) {
        }
        return;
    }
    double left = deadline_us - eu_now_us();
    if (left <= 0) return;
    time_t sec = (time_t)(left / 1e6);
    struct timespec ts = {sec, (long)((left - (double)sec * 1e6) * 1e3)};
    nanosleep(&ts, NULL);
}

/* Rank 0 decides whether a time-bounded loop stops; everyone agrees. Called
 * every few iterations, outside the timed regions. */
static inline int eu_should_stop(double start_us, double budget_us, long done, long min_iters,
                          long max_iters) {
    int rank, stop = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        stop = done >= max_iters || (done >= min_iters && eu_now_us() - start_us >= budget_us);
    MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return stop;
}

static inline void eu_fail(const char *prog, const char *msg) {
    fprintf(stderr, "%s: FAIL: %s\n", prog, msg);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

/* A uniform double in [0, 1) from the stream (53 random bits). */
static inline double eu_uniform(uint64_t *state) {
    return (double)(eu_rand(state) >> 11) * (1.0 / 9007199254740992.0);
}

/* The seed of a per-rank stream: the same for a given (rank, a, b) on every
 * implementation, so runs are reproducible and comparable. */
static inline uint64_t eu_seed(int rank, uint64_t a, uint64_t b) {
    uint64_t s = 0x5eed000000000000ull ^ ((uint64_t)(rank + 1) << 40) ^ (a << 20) ^ b;
    (void)eu_rand(&s); /* one step, so nearby seeds do not start alike */
    return s;
}

/* "Compute" for us microseconds of wall time: a busy wait on MPI_Wtime (time
 * spent descheduled counts, as it would for a real computation). Returns the
 * microseconds actually spent. */
static inline double eu_compute_us(double us) {
    double t0 = MPI_Wtime(), end = t0 + us * 1e-6, t;
    do {
        t = MPI_Wtime();
    } while (t < end);
    return (t - t0) * 1e6;
}

/* Iterations that fill budget_us, from rank 0's measured time per iteration;
 * rank 0 broadcasts the count, so every rank runs the same number. */
static inline long eu_agree_iters(double per_iter_us, double budget_us, long min_iters,
                                  long max_iters) {
    int rank;
    long n = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        double want = per_iter_us > 0 ? budget_us / per_iter_us : (double)max_iters;
        n = want < (double)min_iters ? min_iters
                                     : (want > (double)max_iters ? max_iters : (long)want);
    }
    MPI_Bcast(&n, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    return n;
}

/* Parses a comma-separated list of non-negative numbers into out (at most
 * max); returns how many. */
static inline int eu_parse_list(const char *s, double *out, int max) {
    int n = 0;
    while (s && *s && n < max) {
        char *end;
        double v = strtod(s, &end);
        if (end == s) break;
        out[n++] = v < 0 ? 0 : v;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

/* Gathers k doubles from every rank to rank 0 (NULL elsewhere; free it). */
static inline double *eu_gather(const double *mine, int k) {
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double *all = rank == 0 ? malloc(sizeof(double) * (size_t)k * (size_t)size) : NULL;
    MPI_Gather(mine, k, MPI_DOUBLE, all, k, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return all;
}

#endif
