/* Prints a digest of float allreduce results whose bits depend on the
 * combine order (magnitudes far apart), for sizes up to 64 doubles and
 * then up to 64 KiB (where a crowded node reduces to rank 0 and
 * broadcasts), in place too, also nonblocking and on a split
 * communicator. pytest runs it under several LANAI_ALLREDUCE algorithms
 * (the shared-memory device path included) and requires the same digest:
 * reductions are bitwise reproducible whatever the algorithm. Every rank
 * checks it got the same bits as rank 0. */
#include "lt.h"

static unsigned long long digest_of(const double *v, int n, unsigned long long h)
{
    const unsigned char *b = (const unsigned char *)v;
    for (size_t i = 0; i < (size_t)n * sizeof(double); i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

#define MAXN 8192 /* 64 KiB of doubles */

static unsigned long long run(MPI_Comm comm, int nonblocking, unsigned long long h)
{
    static const double mags[5] = {1e16, 1.0, -1e16, 3.25, 1e-3};
    static const int sizes[] = {1, 3, 7, 15, 31, 63, 100, 1000, 4100, MAXN};
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

int main(int argc, char **argv)
{
    MPI_Comm half;
    unsigned long long h = 1469598103934665603ULL, hh;
    lt_init("allreduce_bits", &argc, &argv);
    /* A barrier first, so the device is set up before the blocking calls. */
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
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
