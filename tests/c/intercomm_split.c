/*
 * MPI_Comm_split and MPI_Comm_create on an intercommunicator (two halves
 * of WORLD as in intercomm.c). Split: colour = world rank % 3, except that
 * group 1 passes MPI_UNDEFINED for colour 2; key = -world rank. Each
 * result is an intercommunicator between the members of one colour in the
 * two groups, MPI_COMM_NULL where the other side has none. Create: each
 * group keeps its members of even local rank. Sizes, ranks and the remote
 * members (seen through messages and collectives on the results) are checked against
 * values computed here. Needs 2 or more ranks (1: trivially passes).
 */
#include "lt.h"

static int nworld;

static int color_of(int m, int w) { return m == 0 ? w % 2 : (w == 0 ? 0 : 1); }
static int key_of(int m, int w) { return m == 0 ? w : nworld - w; }

static int group_list(int m, int col, int *out)
{
    int n = 0, w, i, j;
    for (w = 0; w < nworld; w++)
        if (color_of(m, w) == col)
            out[n++] = w;
    for (i = 1; i < n; i++)
        for (j = i; j > 0 && key_of(m, out[j]) < key_of(m, out[j - 1]); j--) {
            int t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return n;
}

/* MPICH 4.0.2 (the reference) hangs in communication on the results of
 * an intercommunicator split with more than one colour; there the program
 * splits into one colour, which still checks its own logic. */
static int one_colour;

/* The split colour of world rank w in group col. */
static int split_colour(int col, int w)
{
    if (one_colour)
        return 0;
    return (col == 1 && w % 3 == 2) ? MPI_UNDEFINED : w % 3;
}

/* Members of `list` (n of them, group col) with colour `colour`, in
 * descending world rank (key = -world rank). */
static int of_colour(const int *list, int n, int col, int colour, int *out)
{
    int k = 0, i, j;
    for (i = 0; i < n; i++)
        if (split_colour(col, list[i]) == colour)
            out[k++] = list[i];
    for (i = 1; i < k; i++)
        for (j = i; j > 0 && out[j] > out[j - 1]; j--) {
            int t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return k;
}

static void fill_neg(int *p, int n)
{
    int i;
    for (i = 0; i < n; i++)
        p[i] = -1;
}

static void split(int me, int col, const int *local, int nl, const int *remote, int nr,
                  MPI_Comm inter)
{
    MPI_Comm s;
    int colour = split_colour(col, me), mine[64], theirs[64], nm, nt, i, v;
    nm = of_colour(local, nl, col, colour, mine);
    nt = of_colour(remote, nr, 1 - col, colour, theirs);
    MPI_OK(MPI_Comm_split(inter, colour, -me, &s));
    if (colour == MPI_UNDEFINED || nt == 0) {
        CHECK(s == MPI_COMM_NULL, "split colour %d: want MPI_COMM_NULL", colour);
        if (s != MPI_COMM_NULL)
            MPI_Comm_free(&s);
        return;
    }
    CHECK(s != MPI_COMM_NULL, "split colour %d: got MPI_COMM_NULL", colour);
    if (s == MPI_COMM_NULL)
        return;
    MPI_OK(MPI_Comm_test_inter(s, &v));
    CHECK(v == 1, "split result is not an intercommunicator");
    MPI_OK(MPI_Comm_size(s, &v));
    CHECK(v == nm, "split size %d want %d", v, nm);
    MPI_OK(MPI_Comm_remote_size(s, &v));
    CHECK(v == nt, "split remote size %d want %d", v, nt);
    MPI_OK(MPI_Comm_rank(s, &v));
    for (i = 0; i < nm; i++)
        if (mine[i] == me)
            CHECK(v == i, "split rank %d want %d", v, i);
    {
        /* Point-to-point names the remote members. */
        int *got = malloc(sizeof(int) * (size_t)nt);
        MPI_Request *rq = malloc(sizeof(MPI_Request) * (size_t)nt);
        for (i = 0; i < nt; i++)
            MPI_OK(MPI_Isend(&me, 1, MPI_INT, i, 7, s, &rq[i]));
        for (i = 0; i < nt; i++) {
            got[i] = -1;
            MPI_OK(MPI_Recv(&got[i], 1, MPI_INT, i, 7, s, MPI_STATUS_IGNORE));
            CHECK(got[i] == theirs[i], "split remote %d is world %d want %d", i, got[i],
                  theirs[i]);
        }
        for (i = 0; i < nt; i++)
            MPI_OK(MPI_Wait(&rq[i], MPI_STATUS_IGNORE));
        if (!one_colour) {
            fill_neg(got, nt);
            MPI_OK(MPI_Allgather(&me, 1, MPI_INT, got, 1, MPI_INT, s));
            for (i = 0; i < nt; i++)
                CHECK(got[i] == theirs[i], "split allgather %d: %d want %d", i, got[i], theirs[i]);
        }
        free(rq);
        free(got);
    }
    MPI_OK(MPI_Comm_free(&s));
}

static void create(int me, int lrank, int nl, const int *remote, int nr, MPI_Comm inter)
{
    MPI_Group g, sub;
    MPI_Comm s;
    int ev[64], n = 0, i, v, rn = (nr + 1) / 2;
    for (i = 0; i < nl; i += 2)
        ev[n++] = i;
    MPI_OK(MPI_Comm_group(inter, &g));
    MPI_OK(MPI_Group_incl(g, n, ev, &sub));
    MPI_OK(MPI_Comm_create(inter, sub, &s));
    if (lrank % 2) {
        CHECK(s == MPI_COMM_NULL, "create: odd local rank got a communicator");
    } else {
        CHECK(s != MPI_COMM_NULL, "create: even local rank got MPI_COMM_NULL");
        if (s != MPI_COMM_NULL) {
            int sum = -1, want = 0;
            MPI_OK(MPI_Comm_remote_size(s, &v));
            CHECK(v == rn, "create remote size %d want %d", v, rn);
            MPI_OK(MPI_Comm_rank(s, &v));
            CHECK(v == lrank / 2, "create rank %d want %d", v, lrank / 2);
            MPI_OK(MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, s));
            for (i = 0; i < nr; i += 2)
                want += remote[i];
            CHECK(sum == want, "create allreduce %d want %d", sum, want);
            MPI_OK(MPI_Comm_free(&s));
        }
    }
    MPI_OK(MPI_Group_free(&sub));
    MPI_OK(MPI_Group_free(&g));
}

static void run(int m)
{
    int me = lt_rank, col = color_of(m, me), lists[2][64], n[2], i, lrank = -1;
    MPI_Comm lc, inter;
    n[0] = group_list(m, 0, lists[0]);
    n[1] = group_list(m, 1, lists[1]);
    for (i = 0; i < n[col]; i++)
        if (lists[col][i] == me)
            lrank = i;
    MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, col, key_of(m, me), &lc));
    MPI_OK(MPI_Intercomm_create(lc, 0, MPI_COMM_WORLD, lists[1 - col][0], 61 + m, &inter));
    split(me, col, lists[col], n[col], lists[1 - col], n[1 - col], inter);
    create(me, lrank, n[col], lists[1 - col], n[1 - col], inter);
    MPI_OK(MPI_Comm_free(&inter));
    MPI_OK(MPI_Comm_free(&lc));
}

int main(int argc, char **argv)
{
    lt_init("intercomm_split", &argc, &argv);
    nworld = lt_size;
    one_colour = lt_running_on_mpich();
    if (nworld >= 2 && nworld <= 32) {
        run(0);
        run(1);
    }
    return lt_finish();
}
