/* Correct collectives with one rank late by 1.5 s, a different rank each
 * round: the checks for ranks that disagree (a rank that has waited a
 * second shows its call, and compares messages waiting under the call's
 * number; engine/call_check.rs) must find nothing, on every path.
 *
 *   coll_late BYTES
 *
 * Rounds: MPI_Bcast from 0, MPI_Gather to 0, MPI_Ibcast from 1 and
 * MPI_Iallreduce in place, each of BYTES bytes; every result is checked. */
#include "lt.h"

int main(int argc, char **argv)
{
    lt_init("coll_late", &argc, &argv);
    int n = argc > 1 ? atoi(argv[1]) : 8;
    unsigned char *a = malloc((size_t)n * lt_size), *b = malloc((size_t)n * lt_size);
    for (int round = 0; round < 4; round++) {
        if (lt_rank == round % lt_size)
            usleep(1500000);
        memset(a, lt_rank + 1, (size_t)n);
        MPI_Request r;
        int i, root = 1 % lt_size, want;
        switch (round) {
        case 0:
            MPI_OK(MPI_Bcast(a, n, MPI_BYTE, 0, MPI_COMM_WORLD));
            for (i = 0; i < n; i++)
                CHECK(a[i] == 1, "bcast byte %d: %d", i, a[i]);
            break;
        case 1:
            MPI_OK(MPI_Gather(a, n, MPI_BYTE, b, n, MPI_BYTE, 0, MPI_COMM_WORLD));
            for (i = 0; lt_rank == 0 && i < n * lt_size; i++)
                CHECK(b[i] == i / n + 1, "gather byte %d: %d", i, b[i]);
            break;
        case 2:
            MPI_OK(MPI_Ibcast(a, n, MPI_BYTE, root, MPI_COMM_WORLD, &r));
            MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
            for (i = 0; i < n; i++)
                CHECK(a[i] == root + 1, "ibcast byte %d: %d", i, a[i]);
            break;
        default:
            MPI_OK(MPI_Iallreduce(MPI_IN_PLACE, a, n, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD, &r));
            MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
            for (want = 0, i = 0; i < lt_size; i++)
                want |= i + 1;
            for (i = 0; i < n; i++)
                CHECK(a[i] == want, "iallreduce byte %d: %d, want %d", i, a[i], want);
        }
    }
    free(a);
    free(b);
    return lt_finish();
}
