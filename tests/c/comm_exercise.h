/*
 * Shared by the comm_*.c programs: checks that a communicator holds the
 * expected world ranks and that point-to-point and collectives on it work.
 * Include after lt.h.
 */
#ifndef LANAI_COMM_EXERCISE_H
#define LANAI_COMM_EXERCISE_H

/* World ranks of every member of `g`, in group order (caller frees). */
static inline int *world_ranks_of(MPI_Group g, int *n_out)
{
    MPI_Group world;
    int n = 0, i;
    int *in, *out;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_size(g, &n);
    in = malloc(sizeof(int) * (size_t)(n + 1));
    out = malloc(sizeof(int) * (size_t)(n + 1));
    for (i = 0; i < n; i++)
        in[i] = i;
    MPI_OK(MPI_Group_translate_ranks(g, n, in, world, out));
    MPI_Group_free(&world);
    free(in);
    *n_out = n;
    return out;
}

/*
 * `expect[i]` is the world rank of comm rank i (n members). Checks size,
 * rank, group, a ring of Sendrecv, ANY_SOURCE receives at rank 0,
 * allreduce, bcast from the last rank, and a barrier.
 */
static inline void exercise(MPI_Comm comm, const int *expect, int n,
                            const char *what)
{
    int size = -1, rank = -1, i, gn = 0;
    int *got;
    MPI_Group g;
    long sum = 0, want_sum = 0, maxv = -1, b;

    if (comm == MPI_COMM_NULL) {
        CHECK(0, "%s: unexpected MPI_COMM_NULL", what);
        return;
    }
    MPI_OK(MPI_Comm_size(comm, &size));
    MPI_OK(MPI_Comm_rank(comm, &rank));
    CHECK(size == n, "%s: size %d, expected %d", what, size, n);
    if (size != n || rank < 0 || rank >= n)
        return;
    CHECK(expect[rank] == lt_rank, "%s: rank %d is world %d, expected %d",
          what, rank, lt_rank, expect[rank]);

    MPI_OK(MPI_Comm_group(comm, &g));
    got = world_ranks_of(g, &gn);
    CHECK(gn == n, "%s: group size %d", what, gn);
    for (i = 0; i < n && i < gn; i++)
        CHECK(got[i] == expect[i], "%s: group member %d is world %d, expected %d",
              what, i, got[i], expect[i]);
    free(got);
    MPI_OK(MPI_Group_free(&g));

    {
        int next = (rank + 1) % n, prev = (rank + n - 1) % n;
        int out = 1000 + lt_rank, in = -1;
        MPI_Status st;
        MPI_OK(MPI_Sendrecv(&out, 1, MPI_INT, next, 7, &in, 1, MPI_INT, prev,
                            7, comm, &st));
        CHECK(in == 1000 + expect[prev], "%s: ring got %d from %d, expected %d",
              what, in, prev, 1000 + expect[prev]);
        CHECK(st.MPI_SOURCE == prev, "%s: ring source %d, expected %d", what,
              st.MPI_SOURCE, prev);
    }

    if (rank == 0) {
        for (i = 1; i < n; i++) {
            int v = -1;
            MPI_Status st;
            MPI_OK(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 8, comm, &st));
            CHECK(st.MPI_SOURCE > 0 && st.MPI_SOURCE < n &&
                      v == expect[st.MPI_SOURCE],
                  "%s: any-source got %d from %d", what, v, st.MPI_SOURCE);
        }
    } else {
        int v = lt_rank;
        MPI_OK(MPI_Send(&v, 1, MPI_INT, 0, 8, comm));
    }

    {
        long mine = lt_rank + 1;
        for (i = 0; i < n; i++)
            want_sum += expect[i] + 1;
        MPI_OK(MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, comm));
        CHECK(sum == want_sum, "%s: allreduce sum %ld, expected %ld", what, sum,
              want_sum);
        MPI_OK(MPI_Allreduce(&mine, &maxv, 1, MPI_LONG, MPI_MAX, comm));
        long want_max = 0;
        for (i = 0; i < n; i++)
            if (expect[i] + 1 > want_max)
                want_max = expect[i] + 1;
        CHECK(maxv == want_max, "%s: allreduce max %ld, expected %ld", what,
              maxv, want_max);
    }

    b = (rank == n - 1) ? 5000 + lt_rank : -1;
    MPI_OK(MPI_Bcast(&b, 1, MPI_LONG, n - 1, comm));
    CHECK(b == 5000 + expect[n - 1], "%s: bcast got %ld, expected %d", what, b,
          5000 + expect[n - 1]);
    MPI_OK(MPI_Barrier(comm));
}

#endif
