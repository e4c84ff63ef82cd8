/*
 * Intercommunicators: MPI_Intercomm_create from two halves of WORLD (even /
 * odd ranks, and rank 0 / the rest in reversed key order), the queries
 * (test_inter, remote_size, remote_group, group, rank, size, compare),
 * point-to-point both ways (specific and ANY_SOURCE, status checked), the
 * blocking collectives with MPI_ROOT / MPI_PROC_NULL roots, Comm_dup and
 * Intercomm_merge with both `high` orders. Every expected value is
 * computed here from the split rule. Needs 2 or more ranks (1: trivially
 * passes).
 */
#include "lt.h"

static int nworld;

/* The split rule: colour and key of world rank w in mode m. */
static int color_of(int m, int w) { return m == 0 ? w % 2 : (w == 0 ? 0 : 1); }
static int key_of(int m, int w) { return m == 0 ? w : nworld - w; }

/* World ranks of group `col` in local-rank order (key, then world rank). */
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

/* Translates ranks 0..n-1 of `g` to world ranks and compares with `want`. */
static void check_group(MPI_Group g, const int *want, int n, const char *what)
{
    MPI_Group wg;
    int gs = -1, i;
    int *r = malloc(sizeof(int) * (size_t)n), *t = malloc(sizeof(int) * (size_t)n);
    MPI_OK(MPI_Group_size(g, &gs));
    CHECK(gs == n, "%s size %d, want %d", what, gs, n);
    MPI_OK(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    for (i = 0; i < n; i++)
        r[i] = i;
    MPI_OK(MPI_Group_translate_ranks(g, n, r, wg, t));
    for (i = 0; i < n; i++)
        CHECK(t[i] == want[i], "%s rank %d is world %d, want %d", what, i, t[i], want[i]);
    MPI_OK(MPI_Group_free(&wg));
    free(r);
    free(t);
}

static void p2p(MPI_Comm inter, int me, int lrank, int nl, const int *remote, int nr)
{
    /* Round 1: local i sends to remote i % nr; receive with ANY_SOURCE. */
    int val = 1000 * me + lrank, got, expect = 0, i;
    MPI_Request rq;
    MPI_Status st;
    unsigned seen = 0;
    MPI_OK(MPI_Isend(&val, 1, MPI_INT, lrank % nr, 5, inter, &rq));
    for (i = 0; i < nr; i++)
        if (i % nl == lrank)
            expect++;
    for (i = 0; i < expect; i++) {
        MPI_OK(MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 5, inter, &st));
        CHECK(st.MPI_SOURCE >= 0 && st.MPI_SOURCE < nr && st.MPI_SOURCE % nl == lrank,
              "ANY_SOURCE status source %d unexpected", st.MPI_SOURCE);
        CHECK(st.MPI_TAG == 5, "status tag %d", st.MPI_TAG);
        if (st.MPI_SOURCE >= 0 && st.MPI_SOURCE < nr) {
            CHECK(got == 1000 * remote[st.MPI_SOURCE] + st.MPI_SOURCE,
                  "from %d got %d", st.MPI_SOURCE, got);
            CHECK(!(seen & (1u << st.MPI_SOURCE)), "twice from %d", st.MPI_SOURCE);
            seen |= 1u << st.MPI_SOURCE;
        }
    }
    MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));

    /* Round 2: everyone to every remote rank, received by specific source. */
    {
        int *out = malloc(sizeof(int) * (size_t)nr);
        MPI_Request *rs = malloc(sizeof(MPI_Request) * (size_t)nr);
        MPI_Status *sts = malloc(sizeof(MPI_Status) * (size_t)nr);
        for (i = 0; i < nr; i++) {
            out[i] = 7 * me + 3 * i;
            MPI_OK(MPI_Isend(&out[i], 1, MPI_INT, i, 6, inter, &rs[i]));
        }
        for (i = nr - 1; i >= 0; i--) {
            MPI_OK(MPI_Recv(&got, 1, MPI_INT, i, 6, inter, &st));
            CHECK(st.MPI_SOURCE == i, "specific source %d, status says %d", i, st.MPI_SOURCE);
            CHECK(got == 7 * remote[i] + 3 * lrank, "from %d got %d", i, got);
        }
        MPI_OK(MPI_Waitall(nr, rs, sts));
        free(out);
        free(rs);
        free(sts);
    }
}

static void collectives(MPI_Comm inter, int me, int col, int lrank, const int *local, int nl,
                        const int *remote, int nr)
{
    int g, i, k;
    MPI_OK(MPI_Barrier(inter));
    for (g = 0; g < 2; g++) {
        int in_root_group = (col == g);
        int groot_n = in_root_group ? nl : nr; /* size of group g */
        int root_l = groot_n - 1;              /* its last rank is the root */
        int root_arg = in_root_group ? (lrank == root_l ? MPI_ROOT : MPI_PROC_NULL) : root_l;
        int root_world = in_root_group ? local[root_l] : remote[root_l];

        /* Bcast */
        int b[5];
        for (k = 0; k < 5; k++)
            b[k] = (root_arg == MPI_ROOT) ? 7 * root_world + k : -1;
        MPI_OK(MPI_Bcast(b, 5, MPI_INT, root_arg, inter));
        if (!in_root_group)
            for (k = 0; k < 5; k++)
                CHECK(b[k] == 7 * root_world + k, "bcast from group %d: b[%d]=%d", g, k, b[k]);
        else if (root_arg == MPI_PROC_NULL)
            CHECK(b[0] == -1, "bcast touched a PROC_NULL buffer");

        /* Reduce: root is rank 0 of group g. */
        {
            int rarg = in_root_group ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
            int s[3] = {me, 1, 2 * lrank}, r[3] = {-1, -1, -1};
            double ds = me + 0.5, dr = -1;
            MPI_OK(MPI_Reduce(s, r, 3, MPI_INT, MPI_SUM, rarg, inter));
            MPI_OK(MPI_Reduce(&ds, &dr, 1, MPI_DOUBLE, MPI_MAX, rarg, inter));
            if (rarg == MPI_ROOT) {
                int sw = 0, s2 = 0, mx = 0;
                for (i = 0; i < nr; i++) {
                    sw += remote[i];
                    s2 += 2 * i;
                    if (remote[i] > mx)
                        mx = remote[i];
                }
                CHECK(r[0] == sw && r[1] == nr && r[2] == s2,
                      "reduce to group %d: %d %d %d, want %d %d %d", g, r[0], r[1], r[2], sw, nr, s2);
                CHECK(dr == mx + 0.5, "reduce max %g want %g", dr, mx + 0.5);
            }
        }

        /* Gather to rank 0 of group g. */
        {
            int rarg = in_root_group ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
            int s[2] = {me, lrank};
            int *r = malloc(sizeof(int) * 2 * (size_t)(nr + 1));
            for (i = 0; i < 2 * nr + 2; i++)
                r[i] = -1;
            MPI_OK(MPI_Gather(s, 2, MPI_INT, r, 2, MPI_INT, rarg, inter));
            if (rarg == MPI_ROOT) {
                for (i = 0; i < nr; i++)
                    CHECK(r[2 * i] == remote[i] && r[2 * i + 1] == i,
                          "gather block %d: %d %d", i, r[2 * i], r[2 * i + 1]);
                CHECK(r[2 * nr] == -1, "gather wrote past the blocks");
            }
            free(r);
        }

        /* Scatter from the last rank of group g. */
        {
            int *s = malloc(sizeof(int) * 2 * (size_t)nr), r[2] = {-1, -1};
            for (i = 0; i < nr; i++) {
                s[2 * i] = 100 * i + me;
                s[2 * i + 1] = i;
            }
            MPI_OK(MPI_Scatter(s, 2, MPI_INT, r, 2, MPI_INT, root_arg, inter));
            if (!in_root_group)
                CHECK(r[0] == 100 * lrank + root_world && r[1] == lrank,
                      "scatter from group %d: %d %d", g, r[0], r[1]);
            free(s);
        }
    }

    /* Allreduce: each group gets the other group's sums. */
    {
        int s[2] = {me, 1}, r[2] = {-1, -1}, sw = 0;
        long ls = (long)me * 3, lr = 0, lw = 0;
        for (i = 0; i < nr; i++)
            sw += remote[i];
        MPI_OK(MPI_Allreduce(s, r, 2, MPI_INT, MPI_SUM, inter));
        CHECK(r[0] == sw && r[1] == nr, "allreduce %d %d want %d %d", r[0], r[1], sw, nr);
        MPI_OK(MPI_Allreduce(&ls, &lr, 1, MPI_LONG, MPI_MIN, inter));
        lw = 3L * remote[0];
        for (i = 0; i < nr; i++)
            if (3L * remote[i] < lw)
                lw = 3L * remote[i];
        CHECK(lr == lw, "allreduce min %ld want %ld", lr, lw);
    }

    /* Allgather: group c sends c+1 ints. */
    {
        int sc = col + 1, rc = 2 - col, s[2], *r = malloc(sizeof(int) * (size_t)(rc * nr));
        for (k = 0; k < sc; k++)
            s[k] = 10 * me + k;
        MPI_OK(MPI_Allgather(s, sc, MPI_INT, r, rc, MPI_INT, inter));
        for (i = 0; i < nr; i++)
            for (k = 0; k < rc; k++)
                CHECK(r[i * rc + k] == 10 * remote[i] + k, "allgather [%d][%d]=%d", i, k,
                      r[i * rc + k]);
        free(r);
    }

    /* Alltoall. */
    {
        int *s = malloc(sizeof(int) * (size_t)nr), *r = malloc(sizeof(int) * (size_t)nr);
        for (i = 0; i < nr; i++) {
            s[i] = 1000 * me + i;
            r[i] = -1;
        }
        MPI_OK(MPI_Alltoall(s, 1, MPI_INT, r, 1, MPI_INT, inter));
        for (i = 0; i < nr; i++)
            CHECK(r[i] == 1000 * remote[i] + lrank, "alltoall from %d: %d", i, r[i]);
        free(s);
        free(r);
    }
    MPI_OK(MPI_Barrier(inter));
}

static void run(int m)
{
    int me = lt_rank, col = color_of(m, me), lists[2][64], n[2], i;
    int *local, *remote, nl, nr, lrank = -1, flag = -1, v = -1;
    MPI_Comm lc, inter, dup, merged;
    MPI_Group g;

    n[0] = group_list(m, 0, lists[0]);
    n[1] = group_list(m, 1, lists[1]);
    local = lists[col];
    remote = lists[1 - col];
    nl = n[col];
    nr = n[1 - col];
    for (i = 0; i < nl; i++)
        if (local[i] == me)
            lrank = i;

    MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, col, key_of(m, me), &lc));
    MPI_OK(MPI_Intercomm_create(lc, 0, MPI_COMM_WORLD, remote[0], 77 + m, &inter));

    MPI_OK(MPI_Comm_test_inter(inter, &flag));
    CHECK(flag == 1, "test_inter says %d", flag);
    MPI_OK(MPI_Comm_test_inter(lc, &flag));
    CHECK(flag == 0, "test_inter on the local comm says %d", flag);
    MPI_OK(MPI_Comm_size(inter, &v));
    CHECK(v == nl, "size %d want %d", v, nl);
    MPI_OK(MPI_Comm_rank(inter, &v));
    CHECK(v == lrank, "rank %d want %d", v, lrank);
    MPI_OK(MPI_Comm_remote_size(inter, &v));
    CHECK(v == nr, "remote size %d want %d", v, nr);
    MPI_OK(MPI_Comm_remote_group(inter, &g));
    check_group(g, remote, nr, "remote group");
    MPI_OK(MPI_Group_free(&g));
    MPI_OK(MPI_Comm_group(inter, &g));
    check_group(g, local, nl, "local group");
    MPI_OK(MPI_Group_free(&g));
    MPI_OK(MPI_Comm_compare(inter, inter, &v));
    CHECK(v == MPI_IDENT, "compare with itself %d", v);
    MPI_OK(MPI_Comm_compare(inter, lc, &v));
    CHECK(v == MPI_UNEQUAL, "compare with the local comm %d", v);

    p2p(inter, me, lrank, nl, remote, nr);
    collectives(inter, me, col, lrank, local, nl, remote, nr);

    /* Dup: same groups, new context. */
    MPI_OK(MPI_Comm_dup(inter, &dup));
    MPI_OK(MPI_Comm_test_inter(dup, &flag));
    CHECK(flag == 1, "dup test_inter %d", flag);
    MPI_OK(MPI_Comm_remote_size(dup, &v));
    CHECK(v == nr, "dup remote size %d", v);
    MPI_OK(MPI_Comm_compare(inter, dup, &v));
    CHECK(v == MPI_CONGRUENT, "compare with dup %d", v);
    p2p(dup, me, lrank, nl, remote, nr);
    collectives(dup, me, col, lrank, local, nl, remote, nr);
    MPI_OK(MPI_Comm_free(&dup));
    CHECK(dup == MPI_COMM_NULL, "free left the handle");

    /* Merge: the group with high = 0 comes first. */
    for (i = 0; i < 2; i++) {
        int high = (i == 0) ? col : !col; /* i == 0: group 0 first */
        int first = (i == 0) ? 0 : 1, want_rank, all[64], k, s = 1, sum = 0;
        MPI_OK(MPI_Intercomm_merge(inter, high, &merged));
        MPI_OK(MPI_Comm_test_inter(merged, &flag));
        CHECK(flag == 0, "merged test_inter %d", flag);
        MPI_OK(MPI_Comm_size(merged, &v));
        CHECK(v == nworld, "merged size %d", v);
        want_rank = (col == first) ? lrank : n[first] + lrank;
        MPI_OK(MPI_Comm_rank(merged, &v));
        CHECK(v == want_rank, "merge(high=%d) rank %d want %d", high, v, want_rank);
        for (k = 0; k < n[first]; k++)
            all[k] = lists[first][k];
        for (k = 0; k < n[1 - first]; k++)
            all[n[first] + k] = lists[1 - first][k];
        MPI_OK(MPI_Comm_group(merged, &g));
        check_group(g, all, nworld, "merged group");
        MPI_OK(MPI_Group_free(&g));
        MPI_OK(MPI_Allreduce(&s, &sum, 1, MPI_INT, MPI_SUM, merged));
        CHECK(sum == nworld, "allreduce on merged %d", sum);
        MPI_OK(MPI_Comm_free(&merged));
    }

    MPI_OK(MPI_Comm_free(&inter));
    MPI_OK(MPI_Comm_free(&lc));
}

int main(int argc, char **argv)
{
    lt_init("intercomm", &argc, &argv);
    nworld = lt_size;
    if (nworld >= 2 && nworld <= 32) {
        run(0);
        run(1);
    }
    return lt_finish();
}
