/* Correct collectives with one rank late by 1.5 s, a different rank each
 * round: the checks for ranks that disagree (a rank that has waited a
 * second shows its call, and compares messages waiting under the call's
 * number; engine/call_check.rs) must find nothing, on every path.
 *
 *   coll_late BYTES
 *
 * Rounds: MPI_Bcast from 0, MPI_Gather to 0, MPI_Ibcast from 1 and
 * MPI_Iallreduce in place, each of BYTES bytes; then MPI_Gatherv,
 * MPI_Igatherv and MPI_Scatterv whose blocks differ by rank (BYTES + 7 r),
 * MPI_Alltoallv with blocks that differ by pair, and MPI_Scan. Every
 * result is checked. */
#include "lt.h"

int main(int argc, char **argv)
{
    lt_init("coll_late", &argc, &argv);
    int n = argc > 1 ? atoi(argv[1]) : 8;
    size_t most = (size_t)(n + 7 * lt_size) * lt_size;
    unsigned char *a = malloc(most), *b = malloc(most);
    int *cnt = malloc(sizeof(int) * lt_size), *dsp = malloc(sizeof(int) * lt_size);
    int *rcnt = malloc(sizeof(int) * lt_size), *rdsp = malloc(sizeof(int) * lt_size);
    for (int i = 0, at = 0; i < lt_size; at += cnt[i], i++) {
        cnt[i] = n + 7 * i;
        dsp[i] = at;
    }
    for (int round = 0; round < 9; round++) {
        if (lt_rank == round % lt_size)
            usleep(1500000);
        memset(a, lt_rank + 1, most);
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
        case 4:
        case 5:
            if (round == 4) {
                MPI_OK(MPI_Gatherv(a, cnt[lt_rank], MPI_BYTE, b, cnt, dsp, MPI_BYTE, 0,
                                   MPI_COMM_WORLD));
            } else {
                MPI_OK(MPI_Igatherv(a, cnt[lt_rank], MPI_BYTE, b, cnt, dsp, MPI_BYTE, 0,
                                    MPI_COMM_WORLD, &r));
                MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
            }
            for (int k = 0; lt_rank == 0 && k < lt_size; k++)
                for (i = 0; i < cnt[k]; i++)
                    CHECK(b[dsp[k] + i] == k + 1, "gatherv block %d byte %d: %d", k, i,
                          b[dsp[k] + i]);
            break;
        case 6:
            for (i = 0; i < (int)most; i++)
                b[i] = (unsigned char)(i * 13 + 5);
            memset(a, 0, most);
            MPI_OK(MPI_Scatterv(b, cnt, dsp, MPI_BYTE, a, cnt[lt_rank], MPI_BYTE, 0,
                                MPI_COMM_WORLD));
            for (i = 0; i < cnt[lt_rank]; i++)
                CHECK(a[i] == (unsigned char)((dsp[lt_rank] + i) * 13 + 5),
                      "scatterv byte %d: %d", i, a[i]);
            break;
        case 7: {
            /* Rank i sends n + i + j bytes of value i + 1 to rank j. */
            int at = 0, rat = 0, k;
            for (k = 0; k < lt_size; k++) {
                cnt[k] = n + lt_rank + k;
                dsp[k] = at;
                at += cnt[k];
                rcnt[k] = n + k + lt_rank;
                rdsp[k] = rat;
                rat += rcnt[k];
            }
            MPI_OK(MPI_Alltoallv(a, cnt, dsp, MPI_BYTE, b, rcnt, rdsp, MPI_BYTE, MPI_COMM_WORLD));
            for (k = 0; k < lt_size; k++)
                for (i = 0; i < rcnt[k]; i++)
                    CHECK(b[rdsp[k] + i] == k + 1, "alltoallv from %d byte %d: %d", k, i,
                          b[rdsp[k] + i]);
            break;
        }
        case 8:
            MPI_OK(MPI_Scan(a, b, n, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD));
            for (want = 0, i = 0; i <= lt_rank; i++)
                want |= i + 1;
            for (i = 0; i < n; i++)
                CHECK(b[i] == want, "scan byte %d: %d, want %d", i, b[i], want);
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
    free(cnt);
    free(dsp);
    free(rcnt);
    free(rdsp);
    return lt_finish();
}
