/* Back-to-back rooted collectives larger than a shared-memory ring: the
 * non-roots finish each call as soon as their data is queued, so their
 * queues grow while the root consumes. Every result is checked; the test's
 * timeout catches a sender that sleeps on a full queue. */
#include "lt.h"
#include <stdlib.h>

#define N (64 * 1024 / 8)
#define ROUNDS 300

int main(int argc, char **argv)
{
    lt_init("coll_stream", &argc, &argv);
    long *in = malloc(N * sizeof(long)), *out = malloc(N * sizeof(long));
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < N; i++)
            in[i] = (long)lt_rank * 1000 + i + round;
        MPI_OK(MPI_Reduce(in, out, N, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
        if (lt_rank == 0) {
            long s = (long)lt_size * (lt_size - 1) / 2 * 1000;
            for (int i = 0; i < N; i += 997)
                CHECK(out[i] == s + (long)lt_size * (i + round), "round %d element %d: got %ld", round, i, out[i]);
        }
    }
    /* Non-roots are now far ahead with their queues full; this waits. */
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    for (int round = 0; round < ROUNDS / 10; round++) {
        int root = round % lt_size;
        for (int i = 0; i < N; i++)
            in[i] = lt_rank == root ? round * 7 + i : -1;
        MPI_OK(MPI_Bcast(in, N, MPI_LONG, root, MPI_COMM_WORLD));
        CHECK(in[N - 1] == round * 7 + N - 1, "bcast round %d: got %ld", round, in[N - 1]);
    }
    free(in);
    free(out);
    return lt_finish();
}
