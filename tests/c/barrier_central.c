/* Barriers checked by the clock: in every barrier, no rank may leave before
 * the last rank entered. Ranks run on one host, so CLOCK_MONOTONIC is one
 * clock for all of them; each records its entry and exit times and rank 0
 * checks max(entry) <= min(exit) for every barrier.
 *
 * Modes (argv[1]):
 *   all    consecutive barriers with varying skew, split and duplicated
 *          communicators, concurrent communicators, Ibarrier, and many
 *          create/free cycles (channels must be given back)
 *   many   argv[2] barriers on MPI_COMM_WORLD as fast as possible
 *   exhaust  more live communicators than channels, all barriering
 *   kill   the last rank dies (SIGKILL) while the others wait in a barrier
 */
#include "lt.h"
#include <signal.h>
#include <sys/resource.h>

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Busy or sleeping skew, different per rank and iteration. */
static void skew(int iter, int rank, int size)
{
    unsigned h = (unsigned)(iter * 2654435761u) ^ (unsigned)(rank * 40503u);
    int slow = iter % (size > 0 ? size : 1);
    int kind = iter % 4;
    if (kind == 0)
        return;
    if (kind == 1 && rank == slow) {
        struct timespec ts = {0, 200000 + (long)(h % 300) * 1000}; /* 0.2-0.5 ms */
        nanosleep(&ts, NULL);
    } else if (kind == 2) {
        double until = now_us() + (h % 50);
        while (now_us() < until)
            ;
    } else if (kind == 3 && rank == slow) {
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
}

/* Gathers the entry/exit times of `n` barriers on `comm` and checks them. */
static void check_times(MPI_Comm comm, const double *in, const double *out, int n,
                        const char *what)
{
    int r, sz, i, q, bad = 0;
    double *all_in, *all_out;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &sz);
    all_in = malloc(sizeof(double) * n * sz);
    all_out = malloc(sizeof(double) * n * sz);
    MPI_OK(MPI_Gather(in, n, MPI_DOUBLE, all_in, n, MPI_DOUBLE, 0, comm));
    MPI_OK(MPI_Gather(out, n, MPI_DOUBLE, all_out, n, MPI_DOUBLE, 0, comm));
    if (r == 0) {
        for (i = 0; i < n; i++) {
            double last_in = -1e300, first_out = 1e300;
            for (q = 0; q < sz; q++) {
                if (all_in[q * n + i] > last_in)
                    last_in = all_in[q * n + i];
                if (all_out[q * n + i] < first_out)
                    first_out = all_out[q * n + i];
            }
            if (first_out < last_in && bad++ < 3)
                CHECK(0, "%s: barrier %d: a rank left %.1f us before the last entered",
                      what, i, last_in - first_out);
        }
    }
    free(all_in);
    free(all_out);
}

static void timed_barriers(MPI_Comm comm, int n, const char *what, int nonblocking)
{
    int r, sz, i;
    double *in = malloc(sizeof(double) * n), *out = malloc(sizeof(double) * n);
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &sz);
    for (i = 0; i < n; i++) {
        skew(i, r, sz);
        in[i] = now_us();
        if (nonblocking) {
            MPI_Request req;
            int flag = 0;
            MPI_OK(MPI_Ibarrier(comm, &req));
            /* Compute a little, testing now and then, then wait. */
            while (!flag && now_us() - in[i] < 30)
                MPI_OK(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
            if (!flag)
                MPI_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        } else {
            MPI_OK(MPI_Barrier(comm));
        }
        out[i] = now_us();
    }
    check_times(comm, in, out, n, what);
    free(in);
    free(out);
}

static void mode_all(void)
{
    MPI_Comm half, dup1, dup2;
    int i;
    timed_barriers(MPI_COMM_WORLD, 300, "world", 0);
    timed_barriers(MPI_COMM_WORLD, 100, "world ibarrier", 1);

    /* Split: both halves barrier at the same time on their own channels. */
    MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, lt_rank % 2, -lt_rank, &half));
    timed_barriers(half, 200, "half", 0);

    /* Several communicators interleaved. */
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup1));
    MPI_OK(MPI_Comm_dup(half, &dup2));
    for (i = 0; i < 20; i++) {
        timed_barriers(dup1, 5, "dup1", 0);
        timed_barriers(dup2, 5, "dup2", i % 2);
        timed_barriers(MPI_COMM_WORLD, 3, "world again", 0);
    }
    MPI_OK(MPI_Comm_free(&dup2));
    MPI_OK(MPI_Comm_free(&dup1));
    MPI_OK(MPI_Comm_free(&half));

    /* More create/free cycles than there are channels: each must give its
     * channel back (with 64 channels, 150 cycles would otherwise run out
     * and fall back, which the exhaust mode checks separately). */
    for (i = 0; i < 150; i++) {
        MPI_Comm c;
        MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
        timed_barriers(c, 2, "cycle", 0);
        MPI_OK(MPI_Comm_free(&c));
    }
}

static void mode_exhaust(void)
{
    enum { N = 6 };
    MPI_Comm c[N];
    int i, k;
    for (i = 0; i < N; i++)
        MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &c[i]));
    for (k = 0; k < 10; k++)
        for (i = 0; i < N; i++)
            timed_barriers(c[i], 5, "exhausted", k % 2);
    for (i = 0; i < N; i++)
        MPI_OK(MPI_Comm_free(&c[i]));
    /* Channels are back: a new communicator gets one again. */
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &c[0]));
    timed_barriers(c[0], 20, "after exhaustion", 0);
    MPI_OK(MPI_Comm_free(&c[0]));
}

static void mode_many(int n)
{
    int i;
    double t = now_us();
    for (i = 0; i < n; i++)
        MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    t = now_us() - t;
    if (lt_rank == 0)
        printf("barrier_central: %d barriers at %d ranks in %.3f s (%.2f us each)\n", n,
               lt_size, t / 1e6, t / n);
    timed_barriers(MPI_COMM_WORLD, 50, "after many", 0);
}

static void mode_kill(void)
{
    int i;
    struct rlimit no_core = {0, 0};
    for (i = 0; i < 20; i++)
        MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    if (lt_rank == lt_size - 1) {
        setrlimit(RLIMIT_CORE, &no_core);
        printf("barrier_central: rank %d killing itself\n", lt_rank);
        fflush(stdout);
        raise(SIGKILL);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    printf("FAIL barrier_central rank %d: barrier returned without the dead rank\n", lt_rank);
    fflush(stdout);
    exit(1);
}

int main(int argc, char **argv)
{
    const char *mode;
    lt_init("barrier_central", &argc, &argv);
    mode = argc > 1 ? argv[1] : "all";
    if (!strcmp(mode, "all"))
        mode_all();
    else if (!strcmp(mode, "many"))
        mode_many(argc > 2 ? atoi(argv[2]) : 10000);
    else if (!strcmp(mode, "exhaust"))
        mode_exhaust();
    else if (!strcmp(mode, "kill"))
        mode_kill();
    else
        CHECK(0, "unknown mode %s", mode);
    return lt_finish();
}
