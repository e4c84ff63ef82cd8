/*
 * MPI_Comm_dup/dup_with_info/idup, compare, names, error-handler
 * inheritance, isolation between communicators, many dup/free cycles
 * (context ids are recycled and never collide), and concurrent creation on
 * overlapping communicators.
 */
#include "lt.h"
#include "comm_exercise.h"

#define CYCLES 200
#define HELD 20

static void check_name(MPI_Comm c, const char *want)
{
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    MPI_OK(MPI_Comm_get_name(c, name, &len));
    CHECK(strcmp(name, want) == 0 && len == (int)strlen(want),
          "name \"%s\" (%d), expected \"%s\"", name, len, want);
}

/* Same tag, same peers, several communicators at once: each message must
 * land on its own communicator. Messages are sent in reverse order. */
static void isolation(MPI_Comm *cs, int k, const char *what)
{
    int i, n, rank;
    MPI_Request *rq = malloc(sizeof(MPI_Request) * (size_t)k);
    int *in = malloc(sizeof(int) * (size_t)k);
    MPI_Comm_size(cs[0], &n);
    MPI_Comm_rank(cs[0], &rank);
    for (i = 0; i < k; i++)
        MPI_OK(MPI_Irecv(&in[i], 1, MPI_INT, (rank + n - 1) % n, 3, cs[i], &rq[i]));
    for (i = k - 1; i >= 0; i--) {
        int v = 100 * i + rank;
        MPI_OK(MPI_Send(&v, 1, MPI_INT, (rank + 1) % n, 3, cs[i]));
    }
    MPI_OK(MPI_Waitall(k, rq, MPI_STATUSES_IGNORE));
    for (i = 0; i < k; i++)
        CHECK(in[i] == 100 * i + (rank + n - 1) % n, "%s: comm %d got %d", what,
              i, in[i]);
    free(rq);
    free(in);
}

int main(int argc, char **argv)
{
    int n, r, i, res;
    int *world;
    MPI_Comm d, d2, held[HELD + 1];
    MPI_Errhandler eh;

    lt_init("comm_dup", &argc, &argv);
    n = lt_size;
    r = lt_rank;
    world = malloc(sizeof(int) * (size_t)n);
    for (i = 0; i < n; i++)
        world[i] = i;

    check_name(MPI_COMM_WORLD, "MPI_COMM_WORLD");
    check_name(MPI_COMM_SELF, "MPI_COMM_SELF");

    /* The dup inherits the handler. */
    MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
    MPI_OK(MPI_Comm_get_errhandler(d, &eh));
    CHECK(eh == MPI_ERRORS_RETURN, "dup did not inherit MPI_ERRORS_RETURN");
    MPI_Errhandler_free(&eh);
    exercise(d, world, n, "dup");
    MPI_OK(MPI_Comm_compare(MPI_COMM_WORLD, d, &res));
    CHECK(res == MPI_CONGRUENT, "compare(world, dup) = %d", res);
    MPI_OK(MPI_Comm_compare(d, d, &res));
    CHECK(res == MPI_IDENT, "compare(dup, dup) = %d", res);
    MPI_OK(MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_SELF, &res));
    CHECK(res == (n == 1 ? MPI_CONGRUENT : MPI_UNEQUAL), "compare(world, self) = %d", res);
    check_name(d, "");
    MPI_OK(MPI_Comm_set_name(d, "my dup"));
    check_name(d, "my dup");
    check_name(MPI_COMM_WORLD, "MPI_COMM_WORLD");
    {
        int flag = -1;
        MPI_OK(MPI_Comm_test_inter(d, &flag));
        CHECK(flag == 0, "test_inter on an intracommunicator gave %d", flag);
        MPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN);
        int rs = 0, ec = MPI_Comm_remote_size(d, &rs), cls = -1;
        MPI_Error_class(ec, &cls);
        /* MPICH as Debian builds it skips this argument check. */
        CHECK(cls == MPI_ERR_COMM || lt_running_on_mpich(), "remote_size on an intracommunicator: class %d", cls);
    }

    /* dup of a dup, dup_with_info, idup. */
    MPI_OK(MPI_Comm_dup(d, &d2));
    exercise(d2, world, n, "dup of dup");
    MPI_OK(MPI_Comm_compare(d, d2, &res));
    CHECK(res == MPI_CONGRUENT, "compare(dup, dup2) = %d", res);
    MPI_OK(MPI_Comm_free(&d2));
    MPI_OK(MPI_Comm_dup_with_info(MPI_COMM_WORLD, MPI_INFO_NULL, &d2));
    exercise(d2, world, n, "dup_with_info");
    MPI_OK(MPI_Comm_free(&d2));
    {
        MPI_Request rq;
        MPI_OK(MPI_Comm_idup(MPI_COMM_WORLD, &d2, &rq));
        MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        CHECK(rq == MPI_REQUEST_NULL, "idup request not freed by wait");
        exercise(d2, world, n, "idup");
        MPI_OK(MPI_Comm_free(&d2));
    }

    /* Many at once, then isolation between them and world. */
    held[0] = MPI_COMM_WORLD;
    for (i = 1; i <= HELD; i++)
        MPI_OK(MPI_Comm_dup(i % 2 ? d : MPI_COMM_WORLD, &held[i]));
    isolation(held, HELD + 1, "held");
    for (i = 1; i <= HELD; i++)
        MPI_OK(MPI_Comm_free(&held[i]));

    /* Cycles: ids are recycled; each new comm works and sees no stray
     * messages. */
    for (i = 0; i < CYCLES; i++) {
        long v = i + r, s = -1, want = (long)i * n + (long)n * (n - 1) / 2;
        MPI_OK(MPI_Comm_dup(i % 3 ? MPI_COMM_WORLD : d, &d2));
        MPI_OK(MPI_Allreduce(&v, &s, 1, MPI_LONG, MPI_SUM, d2));
        CHECK(s == want, "cycle %d: sum %ld, expected %ld", i, s, want);
        if (i % 50 == 0) {
            MPI_Comm pair[2] = {d2, d};
            isolation(pair, 2, "cycle");
        }
        MPI_OK(MPI_Comm_free(&d2));
        CHECK(d2 == MPI_COMM_NULL, "free did not null the handle");
    }

    /* Concurrent creation: halves dup themselves while world dups too; the
     * lower half dups world first, the upper half its own half first. */
    {
        int lower = r < n / 2, hn, j = 0;
        MPI_Comm half, hdup, wdup, both[3];
        int *hexp = malloc(sizeof(int) * (size_t)n);
        MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, lower, r, &half));
        if (lower) {
            MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &wdup));
            MPI_OK(MPI_Comm_dup(half, &hdup));
        } else {
            MPI_OK(MPI_Comm_dup(half, &hdup));
            MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &wdup));
        }
        for (i = 0; i < n; i++)
            if ((i < n / 2) == lower)
                hexp[j++] = i;
        hn = j;
        exercise(hdup, hexp, hn, "half dup");
        exercise(wdup, world, n, "world dup");
        both[0] = wdup;
        both[1] = MPI_COMM_WORLD;
        both[2] = d;
        isolation(both, 3, "concurrent world");
        both[0] = hdup;
        both[1] = half;
        isolation(both, 2, "concurrent half");
        /* Interleave traffic on the half and world dups with one tag. */
        {
            int hr, out1 = 7000 + r, out2 = 8000 + r, in1 = -1, in2 = -1;
            MPI_Request q[2];
            MPI_Comm_rank(hdup, &hr);
            MPI_OK(MPI_Irecv(&in1, 1, MPI_INT, (hr + hn - 1) % hn, 9, hdup, &q[0]));
            MPI_OK(MPI_Irecv(&in2, 1, MPI_INT, (r + n - 1) % n, 9, wdup, &q[1]));
            MPI_OK(MPI_Send(&out2, 1, MPI_INT, (r + 1) % n, 9, wdup));
            MPI_OK(MPI_Send(&out1, 1, MPI_INT, (hr + 1) % hn, 9, hdup));
            MPI_OK(MPI_Waitall(2, q, MPI_STATUSES_IGNORE));
            CHECK(in1 == 7000 + hexp[(hr + hn - 1) % hn], "half dup got %d", in1);
            CHECK(in2 == 8000 + (r + n - 1) % n, "world dup got %d", in2);
        }
        MPI_OK(MPI_Comm_free(&hdup));
        MPI_OK(MPI_Comm_free(&wdup));
        MPI_OK(MPI_Comm_free(&half));
        free(hexp);
    }

    /* Freeing a predefined communicator is an error. */
    {
        MPI_Comm w = MPI_COMM_WORLD;
        int ec = MPI_Comm_free(&w);
        CHECK(ec != MPI_SUCCESS, "freeing MPI_COMM_WORLD succeeded");
    }

    MPI_OK(MPI_Comm_free(&d));
    free(world);
    return lt_finish();
}
