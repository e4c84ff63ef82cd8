/* MPI_Comm_idup is nonblocking: it returns before the other members have
 * called it, several can be in flight at once (also on overlapping
 * communicators, mixed with blocking creations), and each result is a
 * congruent communicator with its own context. */
#include "lt.h"

int main(int argc, char **argv)
{
    MPI_Comm a, b, half, hdup, bdup;
    MPI_Request r[3];
    int v = -1, i, res, sum;
    lt_init("comm_idup", &argc, &argv);

    /* Rank 0 starts the idup, then sends to rank 1, which receives before
     * it calls MPI_Comm_idup itself: a blocking idup would deadlock here. */
    MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, lt_rank % 2, lt_rank, &half));
    if (lt_rank == 0) {
        MPI_OK(MPI_Comm_idup(MPI_COMM_WORLD, &a, &r[0]));
        if (lt_size > 1)
            MPI_OK(MPI_Send(&lt_rank, 1, MPI_INT, 1, 5, MPI_COMM_WORLD));
    } else {
        if (lt_rank == 1)
            MPI_OK(MPI_Recv(&v, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        MPI_OK(MPI_Comm_idup(MPI_COMM_WORLD, &a, &r[0]));
    }
    /* Two more in flight at once, one on an overlapping communicator. */
    MPI_OK(MPI_Comm_idup(MPI_COMM_WORLD, &b, &r[1]));
    MPI_OK(MPI_Comm_idup(half, &hdup, &r[2]));
    /* A blocking creation while they are pending. */
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &bdup));
    MPI_OK(MPI_Waitall(3, r, MPI_STATUSES_IGNORE));
    if (lt_rank == 1)
        CHECK(v == 0, "rank 1 got %d from rank 0", v);

    MPI_OK(MPI_Comm_compare(a, MPI_COMM_WORLD, &res));
    CHECK(res == MPI_CONGRUENT, "idup of WORLD is congruent (%d)", res);
    MPI_OK(MPI_Comm_compare(hdup, half, &res));
    CHECK(res == MPI_CONGRUENT, "idup of half is congruent (%d)", res);
    MPI_OK(MPI_Comm_compare(a, b, &res));
    CHECK(res == MPI_CONGRUENT, "a and b congruent, not identical (%d)", res);

    /* Separate contexts: the same (source, tag) on four communicators,
     * received in the opposite order, each gets its own message. */
    if (lt_size > 1) {
        int next = (lt_rank + 1) % lt_size, prev = (lt_rank + lt_size - 1) % lt_size;
        int got[4] = {0, 0, 0, 0};
        MPI_Comm cs[4] = {a, b, bdup, MPI_COMM_WORLD};
        MPI_Request rr[4], sr[4];
        int vals[4];
        for (i = 0; i < 4; i++) {
            vals[i] = 100 * i + lt_rank;
            MPI_OK(MPI_Isend(&vals[i], 1, MPI_INT, next, 9, cs[i], &sr[i]));
        }
        for (i = 3; i >= 0; i--)
            MPI_OK(MPI_Irecv(&got[i], 1, MPI_INT, prev, 9, cs[i], &rr[i]));
        MPI_OK(MPI_Waitall(4, rr, MPI_STATUSES_IGNORE));
        MPI_OK(MPI_Waitall(4, sr, MPI_STATUSES_IGNORE));
        for (i = 0; i < 4; i++)
            CHECK(got[i] == 100 * i + prev, "comm %d got %d", i, got[i]);
    }
    /* Collectives on each. */
    MPI_OK(MPI_Allreduce(&lt_rank, &sum, 1, MPI_INT, MPI_SUM, a));
    CHECK(sum == lt_size * (lt_size - 1) / 2, "allreduce on a");
    MPI_OK(MPI_Barrier(hdup));
    MPI_OK(MPI_Allreduce(&lt_rank, &sum, 1, MPI_INT, MPI_MAX, hdup));
    {
        int hs, want = -1;
        MPI_Comm_size(hdup, &hs);
        for (i = 0; i < lt_size; i++)
            if (i % 2 == lt_rank % 2)
                want = i;
        CHECK(sum == want, "max over my half: %d want %d", sum, want);
    }
    /* Many in flight, then all waited: contexts never collide. */
    {
        enum { N = 20 };
        MPI_Comm many[N];
        MPI_Request mr[N];
        for (i = 0; i < N; i++)
            MPI_OK(MPI_Comm_idup(i % 2 ? half : MPI_COMM_WORLD, &many[i], &mr[i]));
        MPI_OK(MPI_Waitall(N, mr, MPI_STATUSES_IGNORE));
        for (i = 0; i < N; i++) {
            MPI_OK(MPI_Allreduce(&lt_rank, &sum, 1, MPI_INT, MPI_SUM, many[i]));
            MPI_OK(MPI_Comm_free(&many[i]));
        }
    }
    MPI_OK(MPI_Comm_free(&a));
    MPI_OK(MPI_Comm_free(&b));
    MPI_OK(MPI_Comm_free(&hdup));
    MPI_OK(MPI_Comm_free(&bdup));
    MPI_OK(MPI_Comm_free(&half));
    return lt_finish();
}
