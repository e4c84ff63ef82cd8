/* MPI_Intercomm_create_from_groups: the even and the odd ranks of
 * MPI_COMM_WORLD's group, joined by their first members, without any
 * parent communicator; two calls with different string tags in a row. */
#include "lt.h"

static void check(MPI_Comm ic, int nodd, int neven, int offset)
{
    int flag = 0, rsize = -1, sum = -1, want = 0, r;
    int mine = lt_rank % 2;
    MPI_OK(MPI_Comm_test_inter(ic, &flag));
    CHECK(flag, "an intercommunicator");
    MPI_OK(MPI_Comm_remote_size(ic, &rsize));
    CHECK(rsize == (mine ? neven : nodd), "remote size %d", rsize);
    /* Allreduce on an intercommunicator gives the remote group's sum. */
    {
        int v = lt_rank + offset;
        MPI_OK(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, ic));
        for (r = 0; r < lt_size; r++)
            if (r % 2 != mine)
                want += r + offset;
        CHECK(sum == want, "allreduce across: %d want %d", sum, want);
    }
}

int main(int argc, char **argv)
{
    MPI_Group world, even, odd, mine, other;
    MPI_Comm ic1, ic2;
    int ranks[64], n = 0, m = 0, r, oddr[64];
    lt_init("intercomm_groups", &argc, &argv);
    if (lt_size < 2) {
        /* Needs two non-empty groups. */
        return lt_finish();
    }
    for (r = 0; r < lt_size; r++) {
        if (r % 2 == 0)
            ranks[n++] = r;
        else
            oddr[m++] = r;
    }
    MPI_OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    MPI_OK(MPI_Group_incl(world, n, ranks, &even));
    MPI_OK(MPI_Group_incl(world, m, oddr, &odd));
    mine = lt_rank % 2 ? odd : even;
    other = lt_rank % 2 ? even : odd;
    MPI_OK(MPI_Intercomm_create_from_groups(mine, 0, other, 0, "lanai-test-a", MPI_INFO_NULL,
                                            MPI_ERRORS_RETURN, &ic1));
    MPI_OK(MPI_Intercomm_create_from_groups(mine, 0, other, 0, "lanai-test-b", MPI_INFO_NULL,
                                            MPI_ERRORS_ARE_FATAL, &ic2));
    check(ic1, m, n, 0);
    check(ic2, m, n, 100);
    {
        MPI_Errhandler eh;
        MPI_OK(MPI_Comm_get_errhandler(ic1, &eh));
        CHECK(eh == MPI_ERRORS_RETURN, "the errhandler argument is set");
        MPI_OK(MPI_Errhandler_free(&eh));
    }
    MPI_OK(MPI_Comm_free(&ic1));
    MPI_OK(MPI_Comm_free(&ic2));
    MPI_OK(MPI_Group_free(&even));
    MPI_OK(MPI_Group_free(&odd));
    MPI_OK(MPI_Group_free(&world));
    return lt_finish();
}
