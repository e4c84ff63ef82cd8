/* eval_util.h: helpers shared by overlap.c, reduce_cpu.c and reduce_lat.c.
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

#endif
