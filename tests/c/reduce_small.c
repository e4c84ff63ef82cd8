/* Small MPI_Reduce calls as the mailbox path on one node serves them
 * (central_reduce.rs): blocking reduces that finish as they start, mixed
 * with nonblocking ones still in flight on the same communicator, with
 * roots that rotate and ranks that arrive late. Every result is checked
 * against a value computed here.
 * usage: reduce_small [rounds] */
#include "lt.h"
#include <stdlib.h>
#include <time.h>

#define MAXN 6

static long val(int rank, int i, int call) { return (long)rank * 1009 + i * 31 + call * 7; }

static long sum(int i, int call)
{
    long s = 0;
    for (int r = 0; r < lt_size; r++)
        s += val(r, i, call);
    return s;
}

static void fill(long *v, int n, int call)
{
    for (int i = 0; i < n; i++)
        v[i] = val(lt_rank, i, call);
}

static void check(const long *got, int n, int call, int root, const char *what)
{
    if (lt_rank != root)
        return;
    for (int i = 0; i < n; i++)
        CHECK(got[i] == sum(i, call), "%s call %d root %d [%d]: %ld want %ld", what, call, root, i,
              got[i], sum(i, call));
}

/* A late arrival: some rank sleeps a little in some rounds. */
static void skew(int round)
{
    if ((round + lt_rank) % 5 == 0) {
        struct timespec ts = {0, 20000L * (1 + lt_rank % 3)};
        nanosleep(&ts, NULL);
    }
}

/* An operation the datatype cannot take fails on every rank, root or not,
 * on a communicator whose first reduce it is (before the ranks have agreed
 * on the device), and the communicator works afterwards. */
static void bad_operations(void)
{
    MPI_Comm c;
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    MPI_OK(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));
    long in = lt_rank + 1, out = 0;
    double din = 1.0, dout = 0.0;
    int cls = -1, root = lt_size - 1;
    int rc = MPI_Reduce(&in, &out, 1, MPI_LONG, MPI_OP_NULL, root, c);
    CHECK(rc != MPI_SUCCESS, "MPI_Reduce with MPI_OP_NULL succeeded");
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_OP, "MPI_Reduce with MPI_OP_NULL: class %d, want MPI_ERR_OP", cls);
    rc = MPI_Reduce(&din, &dout, 1, MPI_DOUBLE, MPI_BAND, root, c);
    CHECK(rc != MPI_SUCCESS, "MPI_Reduce of MPI_DOUBLE with MPI_BAND succeeded");
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_OP, "MPI_Reduce of MPI_DOUBLE with MPI_BAND: class %d, want MPI_ERR_OP",
          cls);
    MPI_OK(MPI_Reduce(&in, &out, 1, MPI_LONG, MPI_SUM, root, c));
    if (lt_rank == root)
        CHECK(out == (long)lt_size * (lt_size + 1) / 2, "sum after errors: %ld", out);
    MPI_OK(MPI_Comm_free(&c));
}

int main(int argc, char **argv)
{
    lt_init("reduce_small", &argc, &argv);
    int rounds = argc > 1 ? atoi(argv[1]) : 300;
    long in[4][MAXN], out[4][MAXN], bout[MAXN];
    int call = 0;
    for (int round = 0; round < rounds; round++) {
        int n = 1 + round % MAXN;
        skew(round);
        /* Three nonblocking reduces in flight, each to its own root, then a
         * blocking one to yet another root while they are pending. */
        MPI_Request q[3];
        int first = call;
        for (int k = 0; k < 3; k++) {
            fill(in[k], n, call++);
            MPI_OK(MPI_Ireduce(in[k], out[k], n, MPI_LONG, MPI_SUM, (round + k) % lt_size,
                               MPI_COMM_WORLD, &q[k]));
        }
        fill(in[3], n, call);
        MPI_OK(MPI_Reduce(in[3], bout, n, MPI_LONG, MPI_SUM, (round + 3) % lt_size,
                          MPI_COMM_WORLD));
        check(bout, n, call++, (round + 3) % lt_size, "blocking behind nonblocking");
        /* Completed in reverse order of posting. */
        for (int k = 2; k >= 0; k--)
            MPI_OK(MPI_Wait(&q[k], MPI_STATUS_IGNORE));
        for (int k = 0; k < 3; k++)
            check(out[k], n, first + k, (round + k) % lt_size, "nonblocking");
        /* A run of blocking reduces to one root, long enough to use every
         * mailbox slot more than once; in place at the root every other run. */
        int root = round % lt_size;
        for (int j = 0; j < 70; j++) {
            fill(in[0], n, call);
            if (round % 2 && lt_rank == root) {
                for (int i = 0; i < n; i++)
                    bout[i] = in[0][i];
                MPI_OK(MPI_Reduce(MPI_IN_PLACE, bout, n, MPI_LONG, MPI_SUM, root, MPI_COMM_WORLD));
            } else {
                MPI_OK(MPI_Reduce(in[0], bout, n, MPI_LONG, MPI_SUM, root, MPI_COMM_WORLD));
            }
            check(bout, n, call++, root, "blocking run");
        }
    }
    bad_operations();
    return lt_finish();
}
