/*
 * MPI_Comm_split and MPI_Comm_split_type: parity and reversed-key splits,
 * ties, MPI_UNDEFINED, nested splits, and COMM_TYPE_SHARED against the
 * block layout of (emulated) nodes. Optional argv[1]: the node count.
 */
#include "lt.h"
#include "comm_exercise.h"

static void check_cmp(MPI_Comm a, MPI_Comm b, int want, const char *what)
{
    int r = -1;
    MPI_OK(MPI_Comm_compare(a, b, &r));
    CHECK(r == want, "%s: compare gave %d, expected %d", what, r, want);
}

int main(int argc, char **argv)
{
    int n, r, i, k;
    int expect[256];
    MPI_Comm c;

    lt_init("comm_split", &argc, &argv);
    n = lt_size;
    r = lt_rank;

    /* By parity, keyed by rank. */
    MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, r % 2, r, &c));
    k = 0;
    for (i = r % 2; i < n; i += 2)
        expect[k++] = i;
    exercise(c, expect, k, "parity");
    check_cmp(MPI_COMM_WORLD, c, n == 1 ? MPI_CONGRUENT : MPI_UNEQUAL, "parity");

    /* Nested: split the parity comm again into its halves, reversed. */
    {
        int pr, ps, j = 0;
        MPI_Comm c2;
        MPI_Comm_rank(c, &pr);
        MPI_Comm_size(c, &ps);
        MPI_OK(MPI_Comm_split(c, pr < ps / 2, -pr, &c2));
        for (i = ps - 1; i >= 0; i--)
            if ((i < ps / 2) == (pr < ps / 2))
                expect[j++] = (r % 2) + 2 * i;
        exercise(c2, expect, j, "nested");
        MPI_OK(MPI_Comm_free(&c2));
        CHECK(c2 == MPI_COMM_NULL, "free did not null the handle");
    }
    MPI_OK(MPI_Comm_free(&c));

    /* One colour, reversed key. */
    MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, 3, n - r, &c));
    for (i = 0; i < n; i++)
        expect[i] = n - 1 - i;
    exercise(c, expect, n, "reversed");
    check_cmp(MPI_COMM_WORLD, c, n == 1 ? MPI_CONGRUENT : MPI_SIMILAR, "reversed");
    MPI_OK(MPI_Comm_free(&c));

    /* Equal keys keep the parent's order. */
    MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, 0, 0, &c));
    for (i = 0; i < n; i++)
        expect[i] = i;
    exercise(c, expect, n, "ties");
    check_cmp(MPI_COMM_WORLD, c, MPI_CONGRUENT, "ties");
    MPI_OK(MPI_Comm_free(&c));

    /* Rank 0 opts out. */
    MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, r == 0 ? MPI_UNDEFINED : 1, r, &c));
    if (r == 0) {
        CHECK(c == MPI_COMM_NULL, "MPI_UNDEFINED colour gave a communicator");
    } else {
        for (i = 1; i < n; i++)
            expect[i - 1] = i;
        exercise(c, expect, n - 1, "undefined");
        MPI_OK(MPI_Comm_free(&c));
    }

    /* Split of MPI_COMM_SELF. */
    MPI_OK(MPI_Comm_split(MPI_COMM_SELF, 0, 0, &c));
    expect[0] = r;
    exercise(c, expect, 1, "self");
    MPI_OK(MPI_Comm_free(&c));

    /* COMM_TYPE_SHARED: nodes are contiguous blocks of world ranks, the
     * first n % K nodes one rank larger. Keyed by -rank: reversed order. */
    {
        int nodes = argc > 1 ? atoi(argv[1]) : 0;
        int sr, ss, leader = -1, lo;
        int *leaders = malloc(sizeof(int) * (size_t)n);
        MPI_Comm sh;
        MPI_OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, -r,
                                   MPI_INFO_NULL, &sh));
        MPI_Comm_rank(sh, &sr);
        MPI_Comm_size(sh, &ss);
        /* The node's lowest world rank is the last rank of sh. */
        lo = (sr == ss - 1) ? r : -1;
        MPI_OK(MPI_Allreduce(&lo, &leader, 1, MPI_INT, MPI_MAX, sh));
        MPI_OK(MPI_Allgather(&leader, 1, MPI_INT, leaders, 1, MPI_INT,
                             MPI_COMM_WORLD));
        if (nodes > 0) {
            int kk = nodes < n ? nodes : n, base = n / kk, extra = n % kk;
            int node = 0, start = 0;
            for (;;) {
                int len = base + (node < extra ? 1 : 0);
                if (r < start + len)
                    break;
                start += len;
                node++;
            }
            int len = base + (node < extra ? 1 : 0);
            for (i = 0; i < len; i++)
                expect[i] = start + len - 1 - i;
            exercise(sh, expect, len, "shared");
            for (i = 0; i < n; i++) {
                int nd = 0, st = 0;
                while (i >= st + base + (nd < extra ? 1 : 0)) {
                    st += base + (nd < extra ? 1 : 0);
                    nd++;
                }
                CHECK(leaders[i] == st, "rank %d: node leader %d, expected %d",
                      i, leaders[i], st);
            }
        } else {
            /* Unknown layout: my node's members are exactly the ranks that
             * report my leader, in reversed order. */
            int j = 0;
            for (i = n - 1; i >= 0; i--)
                if (leaders[i] == leader)
                    expect[j++] = i;
            exercise(sh, expect, j, "shared");
        }
        free(leaders);
        MPI_OK(MPI_Comm_free(&sh));

        MPI_OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_UNDEFINED, 0,
                                   MPI_INFO_NULL, &sh));
        CHECK(sh == MPI_COMM_NULL, "MPI_UNDEFINED split type gave a communicator");
    }

    return lt_finish();
}
