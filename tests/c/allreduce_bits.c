/* Prints a digest of float allreduce results whose bits depend on the
 * combine order (magnitudes far apart), for sizes up to 64 doubles, then
 * up to 64 KiB (where a crowded node reduces to rank 0 and broadcasts),
 * then past 1 MiB (staged through the shared slots in chunks, more
 * chunks than slots), in place too, also nonblocking and on a split
 * communicator. pytest runs it under several LANAI_ALLREDUCE algorithms
 * (the shared-memory device path included) and requires the same digest:
 * reductions are bitwise reproducible whatever the algorithm. Every rank
 * checks it got the same bits as rank 0.
 * usage: allreduce_bits [nb]   nb: the nonblocking calls alone, after one
 *                              blocking allreduce that sets the device up,
 *                              then several collectives in flight at once */
#include "lt.h"

static unsigned long long digest_of(const double *v, int n, unsigned long long h)
{
    const unsigned char *b = (const unsigned char *)v;
    for (size_t i = 0; i < (size_t)n * sizeof(double); i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

#define MAXN 140000 /* 1.1 MB of doubles: 17 chunks of 64 KiB */

static unsigned long long run(MPI_Comm comm, int nonblocking, unsigned long long h)
{
    static const double mags[5] = {1e16, 1.0, -1e16, 3.25, 1e-3};
    static const int sizes[] = {1, 3, 7, 15, 31, 63, 100, 1000, 4100, 8192, 20001, MAXN};
    static double in[MAXN], out[MAXN], root0[MAXN];
    int rank, n, i, k;
    MPI_Comm_rank(comm, &rank);
    for (k = 0; k < (int)(sizeof sizes / sizeof sizes[0]); k++) {
        n = sizes[k];
        for (i = 0; i < n; i++)
            in[i] = mags[(rank + i) % 5] * (1.0 + rank * 1e-9 + i * 1e-12);
        if (nonblocking) {
            MPI_Request r;
            MPI_OK(MPI_Iallreduce(in, out, n, MPI_DOUBLE, MPI_SUM, comm, &r));
            MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
        } else if (k % 2) {
            for (i = 0; i < n; i++)
                out[i] = in[i];
            MPI_OK(MPI_Allreduce(MPI_IN_PLACE, out, n, MPI_DOUBLE, MPI_SUM, comm));
        } else {
            MPI_OK(MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, comm));
        }
        for (i = 0; i < n; i++)
            root0[i] = out[i];
        MPI_OK(MPI_Bcast(root0, n, MPI_DOUBLE, 0, comm));
        CHECK(memcmp(root0, out, n * sizeof(double)) == 0, "rank %d differs from rank 0 (n=%d)", rank, n);
        h = digest_of(out, n, h);
    }
    return h;
}

/* Several collectives in flight, waited for last to first: on a crowded
 * node rank 0 starts an allreduce's broadcast only when its reduce is
 * done, after the calls posted later; a staged allreduce of more chunks
 * than slots shares the slots with a staged reduce posted after it.
 * Every result is checked exactly. */
static void in_flight(MPI_Comm comm)
{
    enum { N1 = 8192, N2 = 4100, NB = 5000, N3 = 70001 };
    static long in1[N1], out1[N1], in2[N2], out2[N2], b[NB], in3[N3], out3[N3], red[N2];
    int rank, size, i, round;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (round = 0; round < 20; round++) {
        MPI_Request r[6];
        for (i = 0; i < N1; i++)
            in1[i] = (long)rank * 1000 + i + round;
        for (i = 0; i < N2; i++)
            in2[i] = (long)rank * 7 - i;
        for (i = 0; i < NB; i++)
            b[i] = rank == size - 1 ? i * 3L + round : -1;
        for (i = 0; i < N3; i++)
            in3[i] = (long)(rank + 1) * (i % 1000) - round;
        MPI_OK(MPI_Iallreduce(in1, out1, N1, MPI_LONG, MPI_SUM, comm, &r[0]));
        MPI_OK(MPI_Ibcast(b, NB, MPI_LONG, size - 1, comm, &r[1]));
        MPI_OK(MPI_Iallreduce(in3, out3, N3, MPI_LONG, MPI_SUM, comm, &r[4]));
        MPI_OK(MPI_Ireduce(in2, red, N2, MPI_LONG, MPI_SUM, round % size, comm, &r[5]));
        MPI_OK(MPI_Iallreduce(in2, out2, N2, MPI_LONG, MPI_SUM, comm, &r[2]));
        MPI_OK(MPI_Ibarrier(comm, &r[3]));
        for (i = 5; i >= 0; i--)
            MPI_OK(MPI_Wait(&r[i], MPI_STATUS_IGNORE));
        long s = (long)size * (size - 1) / 2;
        for (i = 0; i < N3; i++)
            CHECK(out3[i] == (s + size) * (i % 1000) - (long)size * round, "round %d out3[%d] %ld", round, i, out3[i]);
        if (rank == round % size)
            for (i = 0; i < N2; i++)
                CHECK(red[i] == s * 7 - (long)size * i, "round %d reduce [%d] %ld", round, i, red[i]);
        for (i = 0; i < N1; i++)
            CHECK(out1[i] == s * 1000 + (long)size * (i + round), "round %d out1[%d] %ld", round, i, out1[i]);
        for (i = 0; i < N2; i++)
            CHECK(out2[i] == s * 7 - (long)size * i, "round %d out2[%d] %ld", round, i, out2[i]);
        for (i = 0; i < NB; i++)
            CHECK(b[i] == i * 3L + round, "round %d b[%d] %ld", round, i, b[i]);
    }
    /* Freed with an allreduce pending: MPI finishes it first. */
    MPI_Comm d;
    MPI_Request r;
    MPI_OK(MPI_Comm_dup(comm, &d));
    MPI_OK(MPI_Allreduce(in1, out1, N1, MPI_LONG, MPI_SUM, d));
    MPI_OK(MPI_Iallreduce(in2, out2, N2, MPI_LONG, MPI_SUM, d, &r));
    MPI_OK(MPI_Comm_free(&d));
    MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    for (i = 0; i < N2; i++)
        CHECK(out2[i] == (long)size * (size - 1) / 2 * 7 - (long)size * i, "freed: out2[%d] %ld", i, out2[i]);
}

int main(int argc, char **argv)
{
    MPI_Comm half;
    unsigned long long h = 1469598103934665603ULL, hh;
    lt_init("allreduce_bits", &argc, &argv);
    /* A barrier first, so the device is set up before the blocking calls. */
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    if (argc > 1 && strcmp(argv[1], "nb") == 0) {
        double one = 1.0, all;
        MPI_OK(MPI_Allreduce(&one, &all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
        CHECK(all == lt_size, "warm-up sum %g", all);
        h = run(MPI_COMM_WORLD, 1, h);
        in_flight(MPI_COMM_WORLD);
        if (lt_rank == 0)
            printf("DIGEST %016llx\n", h);
        fflush(stdout);
        return lt_finish();
    }
    h = run(MPI_COMM_WORLD, 0, h);
    h = run(MPI_COMM_WORLD, 1, h);
    MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, lt_rank % 2, lt_rank, &half));
    hh = run(half, 0, 1469598103934665603ULL);
    if (lt_rank == 0)
        printf("DIGEST %016llx\n", h);
    if (lt_rank < 2)
        printf("HALF%d %016llx\n", lt_rank, hh);
    fflush(stdout);
    MPI_OK(MPI_Comm_free(&half));
    return lt_finish();
}
