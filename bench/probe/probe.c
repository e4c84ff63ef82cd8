/* The machine's floors, measured without any MPI library, so that runs of
 * bench/compare on different days can be told apart by the machine they
 * ran on (a VM may land on cores that share a cache, or not).
 *   probe cacheline: two processes on CPUs 0 and 1 pass one cache line
 *                    back and forth; prints "cacheline <one-way us>"
 *   probe tcp:       the same over a loopback TCP connection, one byte
 *                    each way, both sides polling as MPI libraries do;
 *                    prints "tcp <one-way us>"
 *   probe tcp-barrier: 4 processes, pinned round-robin to the CPUs as
 *                    lanairun pins them, run a barrier over loopback TCP
 *                    in the fewest messages (3 arrivals at rank 0, 3
 *                    releases), polling every socket and yielding between
 *                    polls; prints "tcp-barrier <us per barrier>". It is
 *                    the floor of bench/compare's barrier-n4/net case.
 *   probe yield-barrier8, yield-barrier16: 8 or 16 processes, pinned
 *                    round-robin to the CPUs as lanairun pins ranks that
 *                    outnumber the cores, run a barrier on one shared
 *                    counter, each waiting rank yielding between polls;
 *                    prints "yield-barrierN <us per barrier>". On fewer
 *                    cores than processes every barrier needs each
 *                    process scheduled once, so this is the floor of
 *                    barrier-n8/node and barrier-n16/node.
 * Each figure is the best of 5 batches. */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void pin(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu % (int)sysconf(_SC_NPROCESSORS_ONLN), &s);
    sched_setaffinity(0, sizeof s, &s);
}

static double cacheline(int rounds)
{
    _Atomic int *turn = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (turn == MAP_FAILED)
        return -1;
    atomic_store(turn, 0);
    pid_t child = fork();
    if (child == 0) {
        pin(1);
        for (int i = 0; i < 5 * rounds; i++) {
            while (atomic_load_explicit(turn, memory_order_acquire) != 2 * i + 1)
                ;
            atomic_store_explicit(turn, 2 * i + 2, memory_order_release);
        }
        _exit(0);
    }
    pin(0);
    double best = 1e30;
    for (int b = 0; b < 5; b++) {
        double t0 = now_us();
        for (int i = b * rounds; i < (b + 1) * rounds; i++) {
            atomic_store_explicit(turn, 2 * i + 1, memory_order_release);
            while (atomic_load_explicit(turn, memory_order_acquire) != 2 * i + 2)
                ;
        }
        double t = (now_us() - t0) / rounds / 2;
        best = t < best ? t : best;
    }
    waitpid(child, NULL, 0);
    return best;
}

/* One byte, polled for rather than slept on: a blocking read measures
 * the scheduler's wake-up, not the network path. */
static int get(int s, char *c)
{
    ssize_t r;
    while ((r = recv(s, c, 1, MSG_DONTWAIT)) < 0 && (errno == EAGAIN || errno == EINTR))
        ;
    return r == 1;
}

static double tcp(int rounds)
{
    int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    if (l < 0 || bind(l, (void *)&a, sizeof a) || getsockname(l, (void *)&a, &al) || listen(l, 1))
        return -1;
    pid_t child = fork();
    if (child == 0) {
        pin(1);
        int s = socket(AF_INET, SOCK_STREAM, 0);
        char c;
        if (connect(s, (void *)&a, sizeof a))
            _exit(1);
        setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        for (int i = 0; i < 5 * rounds; i++)
            if (!get(s, &c) || write(s, &c, 1) != 1)
                _exit(1);
        _exit(0);
    }
    pin(0);
    int s = accept(l, NULL, NULL);
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    double best = 1e30;
    char c = 'x';
    for (int b = 0; b < 5; b++) {
        double t0 = now_us();
        for (int i = 0; i < rounds; i++)
            if (write(s, &c, 1) != 1 || !get(s, &c))
                return -1;
        double t = (now_us() - t0) / rounds / 2;
        best = t < best ? t : best;
    }
    waitpid(child, NULL, 0);
    return best;
}

enum { BARRIER_RANKS = 4 };

/* A connected loopback pair with Nagle off, as every MPI library sets it. */
static int tcp_pair(int *a, int *b)
{
    int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sa;
    if (l < 0 || bind(l, (void *)&sa, sl) || getsockname(l, (void *)&sa, &sl) || listen(l, 1))
        return -1;
    *a = socket(AF_INET, SOCK_STREAM, 0);
    if (*a < 0 || connect(*a, (void *)&sa, sl) || (*b = accept(l, NULL, NULL)) < 0)
        return -1;
    close(l);
    setsockopt(*a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(*b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return 0;
}

/* Whether a byte has come on s, without waiting for one. */
static int try_get(int s)
{
    char c;
    ssize_t r = recv(s, &c, 1, MSG_DONTWAIT);
    if (r < 0 && errno != EAGAIN && errno != EINTR)
        _exit(1);
    return r == 1;
}

/* One barrier as rank me of BARRIER_RANKS, fd[j] being its socket to j.
 * A waiting rank yields between polls: on a machine with fewer cores than
 * ranks that hands the core to the rank it waits for (spinning longer or
 * sleeping in recv were both slower here). */
static void tcp_barrier_once(int me, const int *fd)
{
    char c = 'x';
    if (me == 0) {
        int got = 0, from[BARRIER_RANKS] = {0};
        while (got < BARRIER_RANKS - 1) {
            for (int j = 1; j < BARRIER_RANKS; j++)
                if (!from[j] && try_get(fd[j]))
                    from[j] = 1, got++;
            if (got < BARRIER_RANKS - 1)
                sched_yield();
        }
        for (int j = 1; j < BARRIER_RANKS; j++)
            if (write(fd[j], &c, 1) != 1)
                _exit(1);
    } else {
        if (write(fd[0], &c, 1) != 1)
            _exit(1);
        while (!try_get(fd[0]))
            sched_yield();
    }
}

static double tcp_barrier(int rounds)
{
    int fd[BARRIER_RANKS][BARRIER_RANKS];
    for (int i = 0; i < BARRIER_RANKS; i++)
        for (int j = i + 1; j < BARRIER_RANKS; j++)
            if (tcp_pair(&fd[i][j], &fd[j][i]))
                return -1;
    double *best = mmap(NULL, sizeof *best, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (best == MAP_FAILED)
        return -1;
    *best = 1e30;
    for (int me = 0; me < BARRIER_RANKS; me++) {
        if (fork() != 0)
            continue;
        pin(me);
        for (int i = 0; i < rounds / 10; i++)
            tcp_barrier_once(me, fd[me]);
        for (int b = 0; b < 5; b++) {
            double t0 = now_us();
            for (int i = 0; i < rounds; i++)
                tcp_barrier_once(me, fd[me]);
            double t = (now_us() - t0) / rounds;
            if (me == 0 && t < *best)
                *best = t;
        }
        _exit(0);
    }
    int status, ok = 1;
    while (wait(&status) > 0)
        ok &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
    return ok ? *best : -1;
}

/* One shared arrival counter and a generation word, a line each: the
 * last to arrive resets the counter and moves the generation on. */
struct yield_device {
    _Alignas(64) atomic_uint count;
    _Alignas(64) atomic_uint gen;
    _Alignas(64) double best;
};

static double yield_barrier(int ranks, int rounds)
{
    struct yield_device *d = mmap(NULL, sizeof *d, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (d == MAP_FAILED)
        return -1;
    atomic_store(&d->count, 0);
    atomic_store(&d->gen, 0);
    d->best = 1e30;
    for (int me = 0; me < ranks; me++) {
        if (fork() != 0)
            continue;
        pin(me);
        unsigned gen = 0;
        for (int b = 0; b < 6; b++) {
            double t0 = now_us();
            for (int i = 0; i < rounds; i++) {
                gen++;
                if (atomic_fetch_add(&d->count, 1) == (unsigned)ranks - 1) {
                    atomic_store(&d->count, 0);
                    atomic_store(&d->gen, gen);
                } else {
                    while (atomic_load(&d->gen) != gen)
                        sched_yield();
                }
            }
            double t = (now_us() - t0) / rounds;
            /* The first batch warms up. */
            if (me == 0 && b > 0 && t < d->best)
                d->best = t;
        }
        _exit(0);
    }
    int status, ok = 1;
    while (wait(&status) > 0)
        ok &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
    return ok ? d->best : -1;
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "cacheline";
    double us = !strcmp(what, "tcp")                ? tcp(4000)
                : !strcmp(what, "tcp-barrier")      ? tcp_barrier(4000)
                : !strcmp(what, "yield-barrier8")   ? yield_barrier(8, 4000)
                : !strcmp(what, "yield-barrier16")  ? yield_barrier(16, 2000)
                                                    : cacheline(200000);
    if (us < 0) {
        perror(what);
        return 1;
    }
    printf("%s %.4f\n", what, us);
    return 0;
}
