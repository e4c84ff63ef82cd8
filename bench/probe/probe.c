/* The machine's floors, measured without any MPI library, so that runs of
 * bench/compare on different days can be told apart by the machine they
 * ran on (a VM may land on cores that share a cache, or not).
 *   probe cacheline: two processes on CPUs 0 and 1 pass one cache line
 *                    back and forth; prints "cacheline <one-way us>"
 *   probe tcp:       the same over a loopback TCP connection, one byte
 *                    each way, both sides polling as MPI libraries do;
 *                    prints "tcp <one-way us>"
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

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "cacheline";
    double us = !strcmp(what, "tcp") ? tcp(4000) : cacheline(200000);
    if (us < 0) {
        perror(what);
        return 1;
    }
    printf("%s %.4f\n", what, us);
    return 0;
}
