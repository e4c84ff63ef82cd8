/* Thousands of small nonblocking collectives in flight at once, so that
 * their senders pass the lending bound while their receivers have not
 * posted yet. Every rank posts `calls` pairs of MPI_Ibcast and MPI_Ireduce
 * of one long, from roots that rotate over the ranks; the last rank posts
 * its share `late_ms` late. Requests are completed last first, then a
 * second round is completed in random order with MPI_Testsome. Every
 * value is checked against one computed here.
 * usage: coll_inflight [calls] [late_ms] */
#include "lt.h"

static long bval(int call) { return 1000003L * call + 7; }
static long rval(int rank, int call) { return (long)rank * 7919 + call; }

static void post(int calls, long *b, long *in, long *out, MPI_Request *req)
{
    for (int i = 0; i < calls; i++) {
        int root = i % lt_size;
        b[i] = lt_rank == root ? bval(i) : -1;
        in[i] = rval(lt_rank, i);
        out[i] = -1;
        MPI_OK(MPI_Ibcast(&b[i], 1, MPI_LONG, root, MPI_COMM_WORLD, &req[2 * i]));
        MPI_OK(MPI_Ireduce(&in[i], &out[i], 1, MPI_LONG, MPI_SUM, (root + 1) % lt_size,
                           MPI_COMM_WORLD, &req[2 * i + 1]));
    }
}

static void check(int calls, const long *b, const long *out)
{
    for (int i = 0; i < calls; i++) {
        CHECK(b[i] == bval(i), "bcast %d: %ld, want %ld", i, b[i], bval(i));
        if (lt_rank == (i % lt_size + 1) % lt_size) {
            long want = 0;
            for (int r = 0; r < lt_size; r++)
                want += rval(r, i);
            CHECK(out[i] == want, "reduce %d: %ld, want %ld", i, out[i], want);
        }
    }
}

int main(int argc, char **argv)
{
    lt_init("coll_inflight", &argc, &argv);
    int calls = argc > 1 ? atoi(argv[1]) : 12000;
    int late_ms = argc > 2 ? atoi(argv[2]) : 50;
    long *b = malloc(sizeof(long) * calls), *in = malloc(sizeof(long) * calls),
         *out = malloc(sizeof(long) * calls);
    MPI_Request *req = malloc(sizeof(MPI_Request) * 2 * calls);
    int *done = malloc(sizeof(int) * 2 * calls);

    if (lt_rank == lt_size - 1) {
        struct timespec ts = {late_ms / 1000, (late_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    post(calls, b, in, out, req);
    for (int k = 2 * calls - 1; k >= 0; k--)
        MPI_OK(MPI_Wait(&req[k], MPI_STATUS_IGNORE));
    check(calls, b, out);

    /* Again, completed in whatever order they finish. */
    post(calls, b, in, out, req);
    int left = 2 * calls;
    while (left > 0) {
        int n = 0;
        MPI_OK(MPI_Testsome(2 * calls, req, &n, done, MPI_STATUSES_IGNORE));
        if (n != MPI_UNDEFINED)
            left -= n;
    }
    check(calls, b, out);

    free(b);
    free(in);
    free(out);
    free(req);
    free(done);
    return lt_finish();
}
