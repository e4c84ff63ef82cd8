/*
 * MPI_Comm_create (incl, excl, range groups; disjoint groups per process;
 * from a sub-communicator) and MPI_Comm_create_group.
 */
#include "lt.h"
#include "comm_exercise.h"

/* Checks `c` against group `g` of world ranks: a communicator for members,
 * MPI_COMM_NULL for the others. Frees `c`. */
static void check_created(MPI_Comm *c, MPI_Group g, const char *what)
{
    int gn = 0, gr = MPI_UNDEFINED;
    int *w = world_ranks_of(g, &gn);
    MPI_Group_rank(g, &gr);
    if (gr == MPI_UNDEFINED) {
        CHECK(*c == MPI_COMM_NULL, "%s: non-member got a communicator", what);
    } else {
        exercise(*c, w, gn, what);
        if (*c != MPI_COMM_NULL)
            MPI_OK(MPI_Comm_free(c));
    }
    free(w);
}

int main(int argc, char **argv)
{
    int n, r, i, k;
    int ranks[256];
    MPI_Group wg, g;
    MPI_Comm c;

    lt_init("comm_create", &argc, &argv);
    n = lt_size;
    r = lt_rank;
    MPI_OK(MPI_Comm_group(MPI_COMM_WORLD, &wg));

    /* Evens. */
    k = 0;
    for (i = 0; i < n; i += 2)
        ranks[k++] = i;
    MPI_OK(MPI_Group_incl(wg, k, ranks, &g));
    MPI_OK(MPI_Comm_create(MPI_COMM_WORLD, g, &c));
    check_created(&c, g, "incl evens");
    MPI_OK(MPI_Group_free(&g));

    /* Everyone but rank 0 (empty at n = 1: nobody gets a communicator). */
    ranks[0] = 0;
    MPI_OK(MPI_Group_excl(wg, 1, ranks, &g));
    MPI_OK(MPI_Comm_create(MPI_COMM_WORLD, g, &c));
    check_created(&c, g, "excl 0");
    MPI_OK(MPI_Group_free(&g));

    /* Reversed by a range. */
    {
        int range[1][3] = {{n - 1, 0, -1}};
        int res = -1;
        MPI_OK(MPI_Group_range_incl(wg, 1, range, &g));
        MPI_OK(MPI_Comm_create(MPI_COMM_WORLD, g, &c));
        MPI_OK(MPI_Comm_compare(MPI_COMM_WORLD, c, &res));
        CHECK(res == (n == 1 ? MPI_CONGRUENT : MPI_SIMILAR), "reversed compare %d", res);
        check_created(&c, g, "range reversed");
        MPI_OK(MPI_Group_free(&g));
    }

    /* Disjoint groups: each process passes its own parity's group. */
    {
        int range[1][3] = {{r % 2, n - 1, 2}};
        if (range[0][1] < range[0][0])
            range[0][1] = range[0][0];
        MPI_OK(MPI_Group_range_incl(wg, 1, range, &g));
        MPI_OK(MPI_Comm_create(MPI_COMM_WORLD, g, &c));
        check_created(&c, g, "disjoint parity");
        MPI_OK(MPI_Group_free(&g));
    }

    /* From a sub-communicator: the parity comm without its rank 0. */
    {
        MPI_Comm par;
        MPI_Group pg;
        MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, r % 2, r, &par));
        MPI_OK(MPI_Comm_group(par, &pg));
        ranks[0] = 0;
        MPI_OK(MPI_Group_excl(pg, 1, ranks, &g));
        MPI_OK(MPI_Comm_create(par, g, &c));
        check_created(&c, g, "from sub-communicator");
        MPI_OK(MPI_Group_free(&g));
        MPI_OK(MPI_Group_free(&pg));
        MPI_OK(MPI_Comm_free(&par));
    }

    /* create_group: halves create concurrently, only members calling. */
    {
        int lower = r < n / 2, lo = lower ? 0 : n / 2, hi = lower ? n / 2 - 1 : n - 1;
        int range[1][3] = {{lo, hi, 1}};
        MPI_OK(MPI_Group_range_incl(wg, 1, range, &g));
        MPI_OK(MPI_Comm_create_group(MPI_COMM_WORLD, g, 11, &c));
        check_created(&c, g, "create_group half");
        /* Twice in a row with the same group and tag. */
        MPI_OK(MPI_Comm_create_group(MPI_COMM_WORLD, g, 11, &c));
        check_created(&c, g, "create_group half again");
        MPI_OK(MPI_Group_free(&g));
    }

    /* create_group by everyone, reversed. */
    {
        int range[1][3] = {{n - 1, 0, -1}};
        MPI_OK(MPI_Group_range_incl(wg, 1, range, &g));
        MPI_OK(MPI_Comm_create_group(MPI_COMM_WORLD, g, 12, &c));
        check_created(&c, g, "create_group all");
        MPI_OK(MPI_Group_free(&g));
    }

    /* create_group by pairs (0,1), (2,3), ... only. */
    if (r < n - n % 2) {
        ranks[0] = r - r % 2;
        ranks[1] = ranks[0] + 1;
        MPI_OK(MPI_Group_incl(wg, 2, ranks, &g));
        MPI_OK(MPI_Comm_create_group(MPI_COMM_WORLD, g, 13, &c));
        check_created(&c, g, "create_group pair");
        MPI_OK(MPI_Group_free(&g));
    }

    MPI_OK(MPI_Group_free(&wg));
    return lt_finish();
}
