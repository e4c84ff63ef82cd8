/*
 * Intercommunicators, continued: every collective with the standard's
 * intercommunicator semantics, blocking and nonblocking (all of one round
 * started before a single MPI_Waitall), with each group in turn as the
 * root group; the v and w variants with gaps that must stay untouched;
 * reduce-scatter across the groups; a nonblocking barrier that would
 * deadlock if it blocked; and Scan/Exscan refused with MPI_ERR_COMM.
 * LT_SKIP=<mask> leaves out operations by index (debugging). Expected values come
 * from the split rule. Needs 2 or more ranks (1: trivially passes).
 */
#include "lt.h"

#define NOPS 16
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

/* The value sender `w` puts in element `k` of its block for index `j`. */
static int V(int w, int j, int k) { return 10000 * w + 100 * j + k; }

/* Elements member `a` of one group and member `b` of the other exchange. */
static int cnt(int a, int b) { return (a + b) % 3; }

typedef struct {
    MPI_Comm inter;
    int me, col, lrank, nl, nr;
    const int *local, *remote;
} Ctx;

/* One round's buffers, kept until the checks. */
typedef struct {
    int bc[4], red[2], ared[2], gat[64], gatv[256], sca[2], scav[2];
    int ag[64], agv[256], a2a[32], a2av[128], a2aw[128], rs[64], rsb[64];
    int redsend[2], aredsend[2], gsend[2], gvsend[3], scsend[64], scvsend[256];
    int agsend[3], a2asend[32], a2avsend[128], rssend[1024], rsbsend[1024];
    int gatv_c[32], gatv_d[32], scav_c[32], scav_d[32], agv_c[32], agv_d[32];
    int sc[32], sd[32], rc[32], rd[32], wsd[32], wrd[32], rsc[32];
    MPI_Datatype wst[32], wrt[32];
} Bufs;

static void fill(int *p, int n, int v)
{
    int i;
    for (i = 0; i < n; i++)
        p[i] = v;
}

/* Root argument for a collective rooted at local rank `r` of group g. */
static int root_arg(const Ctx *c, int g, int r)
{
    if (c->col == g)
        return c->lrank == r ? MPI_ROOT : MPI_PROC_NULL;
    return r;
}

/* Reduce-scatter counts of a group of n members facing one of m: the
 * totals agree (n * m) and the blocks differ when n >= 2. */
static void rs_counts(int n, int m, int *out)
{
    int i;
    for (i = 0; i < n; i++)
        out[i] = m;
    if (n >= 2) {
        out[0]++;
        out[n - 1]--;
    }
}

/* Starts (nb) or runs every collective of one round, root group g. */
static void start_all(const Ctx *c, Bufs *b, int g, int nb, MPI_Request *rq)
{
    MPI_Comm ic = c->inter;
    int nr = c->nr, nl = c->nl, me = c->me, L = c->lrank, i, k, n = 0;
    int groot_n = c->col == g ? nl : nr, last = groot_n - 1;
    for (i = 0; i < NOPS; i++)
        rq[i] = MPI_REQUEST_NULL;
#define GO(blocking, nonblocking)                                             \
    do {                                                                      \
        if (getenv("LT_SKIP") && (atoi(getenv("LT_SKIP")) >> n & 1))            \
            ;                                                                 \
        else if (nb)                                                               \
            MPI_OK(nonblocking);                                              \
        else                                                                  \
            MPI_OK(blocking);                                                 \
        n++;                                                                  \
    } while (0)

    /* Barrier. */
    GO(MPI_Barrier(ic), MPI_Ibarrier(ic, &rq[n]));
    /* Bcast from rank 0 of group g (MPICH 4.0.2's Ibcast on an
     * intercommunicator delivers nothing when the root is another rank). */
    {
        int a = root_arg(c, g, 0);
        for (k = 0; k < 4; k++)
            b->bc[k] = a == MPI_ROOT ? V(me, 0, k) : -1;
        GO(MPI_Bcast(b->bc, 4, MPI_INT, a, ic), MPI_Ibcast(b->bc, 4, MPI_INT, a, ic, &rq[n]));
    }
    /* Reduce (sum) to rank 0 of group g. */
    {
        int a = root_arg(c, g, 0);
        b->redsend[0] = me;
        b->redsend[1] = L;
        fill(b->red, 2, -1);
        GO(MPI_Reduce(b->redsend, b->red, 2, MPI_INT, MPI_SUM, a, ic),
           MPI_Ireduce(b->redsend, b->red, 2, MPI_INT, MPI_SUM, a, ic, &rq[n]));
    }
    /* Allreduce (max). */
    b->aredsend[0] = me;
    b->aredsend[1] = -L;
    fill(b->ared, 2, -7);
    GO(MPI_Allreduce(b->aredsend, b->ared, 2, MPI_INT, MPI_MAX, ic),
       MPI_Iallreduce(b->aredsend, b->ared, 2, MPI_INT, MPI_MAX, ic, &rq[n]));
    /* Gather to rank 0 of group g: two ints each. */
    {
        int a = root_arg(c, g, 0);
        b->gsend[0] = V(me, 0, 0);
        b->gsend[1] = V(me, 0, 1);
        fill(b->gat, 64, -1);
        GO(MPI_Gather(b->gsend, 2, MPI_INT, b->gat, 2, MPI_INT, a, ic),
           MPI_Igather(b->gsend, 2, MPI_INT, b->gat, 2, MPI_INT, a, ic, &rq[n]));
    }
    /* Gatherv to the last rank of group g: member i sends i%3+1 ints,
     * placed at 4i+1 (gaps stay -1). */
    {
        int a = root_arg(c, g, last), sc = L % 3 + 1;
        for (k = 0; k < sc; k++)
            b->gvsend[k] = V(me, 1, k);
        for (i = 0; i < nr; i++) {
            b->gatv_c[i] = i % 3 + 1;
            b->gatv_d[i] = 4 * i + 1;
        }
        fill(b->gatv, 256, -1);
        GO(MPI_Gatherv(b->gvsend, sc, MPI_INT, b->gatv, b->gatv_c, b->gatv_d, MPI_INT, a, ic),
           MPI_Igatherv(b->gvsend, sc, MPI_INT, b->gatv, b->gatv_c, b->gatv_d, MPI_INT, a, ic,
                        &rq[n]));
    }
    /* Scatter from the last rank of group g: two ints each. */
    {
        int a = root_arg(c, g, last);
        for (i = 0; i < nr; i++)
            for (k = 0; k < 2; k++)
                b->scsend[2 * i + k] = V(me, i, k);
        fill(b->sca, 2, -1);
        GO(MPI_Scatter(b->scsend, 2, MPI_INT, b->sca, 2, MPI_INT, a, ic),
           MPI_Iscatter(b->scsend, 2, MPI_INT, b->sca, 2, MPI_INT, a, ic, &rq[n]));
    }
    /* Scatterv from rank 0 of group g: member i gets i%2+1 ints from 3i. */
    {
        int a = root_arg(c, g, 0);
        for (i = 0; i < nr; i++) {
            b->scav_c[i] = i % 2 + 1;
            b->scav_d[i] = 3 * i;
            for (k = 0; k < 3; k++)
                b->scvsend[3 * i + k] = V(me, i, k);
        }
        fill(b->scav, 2, -1);
        GO(MPI_Scatterv(b->scvsend, b->scav_c, b->scav_d, MPI_INT, b->scav, L % 2 + 1, MPI_INT,
                        a, ic),
           MPI_Iscatterv(b->scvsend, b->scav_c, b->scav_d, MPI_INT, b->scav, L % 2 + 1,
                         MPI_INT, a, ic, &rq[n]));
    }
    /* Allgather: group c sends c+1 ints. */
    {
        int sc = c->col + 1, rc = 2 - c->col;
        for (k = 0; k < sc; k++)
            b->agsend[k] = V(me, 2, k);
        fill(b->ag, 64, -1);
        GO(MPI_Allgather(b->agsend, sc, MPI_INT, b->ag, rc, MPI_INT, ic),
           MPI_Iallgather(b->agsend, sc, MPI_INT, b->ag, rc, MPI_INT, ic, &rq[n]));
    }
    /* Allgatherv: member i sends i%3+1 ints, placed at 4j+2 for remote j. */
    {
        int sc = L % 3 + 1;
        for (k = 0; k < sc; k++)
            b->agsend[k] = V(me, 3, k);
        for (i = 0; i < nr; i++) {
            b->agv_c[i] = i % 3 + 1;
            b->agv_d[i] = 4 * (nr - 1 - i) + 2; /* reversed order */
        }
        fill(b->agv, 256, -1);
        GO(MPI_Allgatherv(b->agsend, sc, MPI_INT, b->agv, b->agv_c, b->agv_d, MPI_INT, ic),
           MPI_Iallgatherv(b->agsend, sc, MPI_INT, b->agv, b->agv_c, b->agv_d, MPI_INT, ic,
                           &rq[n]));
    }
    /* Alltoall: one int per remote member. */
    for (i = 0; i < nr; i++)
        b->a2asend[i] = V(me, i, 0);
    fill(b->a2a, 32, -1);
    GO(MPI_Alltoall(b->a2asend, 1, MPI_INT, b->a2a, 1, MPI_INT, ic),
       MPI_Ialltoall(b->a2asend, 1, MPI_INT, b->a2a, 1, MPI_INT, ic, &rq[n]));
    /* Alltoallv: cnt(L, j) ints to remote j from 3j; received at 3j+1. */
    for (i = 0; i < nr; i++) {
        b->sc[i] = cnt(L, i);
        b->sd[i] = 3 * i;
        b->rc[i] = cnt(i, L);
        b->rd[i] = 3 * i + 1;
        for (k = 0; k < 3; k++)
            b->a2avsend[3 * i + k] = V(me, i, k);
        b->wsd[i] = (int)sizeof(int) * 3 * i;
        b->wrd[i] = (int)sizeof(int) * (3 * (nr - 1 - i) + 1);
        b->wst[i] = MPI_INT;
        b->wrt[i] = MPI_INT;
    }
    fill(b->a2av, 128, -1);
    GO(MPI_Alltoallv(b->a2avsend, b->sc, b->sd, MPI_INT, b->a2av, b->rc, b->rd, MPI_INT, ic),
       MPI_Ialltoallv(b->a2avsend, b->sc, b->sd, MPI_INT, b->a2av, b->rc, b->rd, MPI_INT, ic,
                      &rq[n]));
    /* Alltoallw: the same blocks, byte displacements, reversed on receipt. */
    fill(b->a2aw, 128, -1);
    GO(MPI_Alltoallw(b->a2avsend, b->sc, b->wsd, b->wst, b->a2aw, b->rc, b->wrd, b->wrt, ic),
       MPI_Ialltoallw(b->a2avsend, b->sc, b->wsd, b->wst, b->a2aw, b->rc, b->wrd, b->wrt, ic,
                      &rq[n]));
    /* Reduce_scatter: vectors of nl*nr ints, split by rs_counts. */
    rs_counts(nl, nr, b->rsc);
    for (k = 0; k < nl * nr; k++)
        b->rssend[k] = me + k;
    fill(b->rs, 64, -1);
    GO(MPI_Reduce_scatter(b->rssend, b->rs, b->rsc, MPI_INT, MPI_SUM, ic),
       MPI_Ireduce_scatter(b->rssend, b->rs, b->rsc, MPI_INT, MPI_SUM, ic, &rq[n]));
    /* Reduce_scatter_block: nr ints per local member. */
    for (k = 0; k < nl * nr; k++)
        b->rsbsend[k] = 2 * me - k;
    fill(b->rsb, 64, -1);
    GO(MPI_Reduce_scatter_block(b->rsbsend, b->rsb, nr, MPI_INT, MPI_SUM, ic),
       MPI_Ireduce_scatter_block(b->rsbsend, b->rsb, nr, MPI_INT, MPI_SUM, ic, &rq[n]));
#undef GO
}

static void check_all(const Ctx *c, const Bufs *b, int g, int nb)
{
    int nr = c->nr, nl = c->nl, L = c->lrank, i, k, j;
    const int *R = c->remote;
    int in_g = c->col == g, groot_n = in_g ? nl : nr, last = groot_n - 1;
    int rlast = in_g ? -1 : R[last], r0 = in_g ? -1 : R[0];
    int sw = 0, mx = -1, mn = 0; /* mn: the max of -lrank over the other group */
    for (i = 0; i < nr; i++) {
        sw += R[i];
        if (R[i] > mx)
            mx = R[i];
    }

    /* Bcast */
    for (k = 0; k < 4; k++) {
        int want = in_g ? (L == 0 ? V(c->me, 0, k) : -1) : V(r0, 0, k);
        CHECK(b->bc[k] == want, "nb=%d g=%d bcast[%d]=%d want %d", nb, g, k, b->bc[k], want);
    }
    /* Reduce */
    if (in_g && L == 0) {
        CHECK(b->red[0] == sw && b->red[1] == nr * (nr - 1) / 2,
              "nb=%d g=%d reduce %d %d want %d %d", nb, g, b->red[0], b->red[1], sw,
              nr * (nr - 1) / 2);
    } else
        CHECK(b->red[0] == -1, "nb=%d g=%d reduce wrote at a non-root", nb, g);
    /* Allreduce */
    CHECK(b->ared[0] == mx && b->ared[1] == mn, "nb=%d allreduce %d %d want %d %d", nb,
          b->ared[0], b->ared[1], mx, mn);
    /* Gather */
    if (in_g && L == 0) {
        for (i = 0; i < nr; i++)
            for (k = 0; k < 2; k++)
                CHECK(b->gat[2 * i + k] == V(R[i], 0, k), "nb=%d g=%d gather[%d][%d]=%d", nb, g,
                      i, k, b->gat[2 * i + k]);
        CHECK(b->gat[2 * nr] == -1, "nb=%d gather wrote past the blocks", nb);
    } else
        CHECK(b->gat[0] == -1, "nb=%d gather wrote at a non-root", nb);
    /* Gatherv */
    if (in_g && L == last) {
        for (i = 0; i < nr; i++) {
            CHECK(b->gatv[4 * i] == -1, "nb=%d gatherv gap %d written", nb, 4 * i);
            for (k = 0; k < 3; k++) {
                int want = k < i % 3 + 1 ? V(R[i], 1, k) : -1;
                CHECK(b->gatv[4 * i + 1 + k] == want, "nb=%d g=%d gatherv[%d][%d]=%d want %d",
                      nb, g, i, k, b->gatv[4 * i + 1 + k], want);
            }
        }
    } else
        CHECK(b->gatv[1] == -1, "nb=%d gatherv wrote at a non-root", nb);
    /* Scatter */
    if (!in_g)
        for (k = 0; k < 2; k++)
            CHECK(b->sca[k] == V(rlast, L, k), "nb=%d g=%d scatter[%d]=%d", nb, g, k, b->sca[k]);
    /* Scatterv */
    if (!in_g) {
        for (k = 0; k < 2; k++) {
            int want = k < L % 2 + 1 ? V(r0, L, k) : -1;
            CHECK(b->scav[k] == want, "nb=%d g=%d scatterv[%d]=%d want %d", nb, g, k, b->scav[k],
                  want);
        }
    }
    /* Allgather */
    {
        int rc = 2 - c->col;
        for (i = 0; i < nr; i++)
            for (k = 0; k < rc; k++)
                CHECK(b->ag[i * rc + k] == V(R[i], 2, k), "nb=%d allgather[%d][%d]=%d", nb, i,
                      k, b->ag[i * rc + k]);
        CHECK(b->ag[nr * rc] == -1, "nb=%d allgather wrote past the blocks", nb);
    }
    /* Allgatherv: 4-int slots from 2, in reversed order; the rest -1. */
    CHECK(b->agv[0] == -1 && b->agv[1] == -1, "nb=%d allgatherv wrote before the slots", nb);
    for (i = 0; i < nr; i++) {
        int at = 4 * (nr - 1 - i) + 2;
        for (k = 0; k < 4; k++) {
            int want = k < i % 3 + 1 ? V(R[i], 3, k) : -1;
            CHECK(b->agv[at + k] == want, "nb=%d allgatherv[%d][%d]=%d want %d", nb, i, k,
                  b->agv[at + k], want);
        }
    }
    /* Alltoall */
    for (i = 0; i < nr; i++)
        CHECK(b->a2a[i] == V(R[i], L, 0), "nb=%d alltoall[%d]=%d", nb, i, b->a2a[i]);
    /* Alltoallv and w: 3-int slots from 1 (w reversed); the rest -1. */
    for (i = 0; i < nr; i++) {
        int v0 = 3 * i + 1, w0 = 3 * (nr - 1 - i) + 1;
        for (k = 0; k < 3; k++) {
            int want = k < cnt(i, L) ? V(R[i], L, k) : -1;
            CHECK(b->a2av[v0 + k] == want, "nb=%d alltoallv[%d][%d]=%d want %d", nb, i, k,
                  b->a2av[v0 + k], want);
            CHECK(b->a2aw[w0 + k] == want, "nb=%d alltoallw[%d][%d]=%d want %d", nb, i, k,
                  b->a2aw[w0 + k], want);
        }
    }
    CHECK(b->a2av[0] == -1 && b->a2aw[0] == -1, "nb=%d alltoallv/w wrote element 0", nb);
    /* Reduce_scatter: block L of the other group's summed vectors. */
    {
        int rsc[64], off = 0;
        rs_counts(nl, nr, rsc);
        for (j = 0; j < L; j++)
            off += rsc[j];
        for (k = 0; k < rsc[L]; k++)
            CHECK(b->rs[k] == sw + nr * (off + k), "nb=%d reduce_scatter[%d]=%d want %d", nb, k,
                  b->rs[k], sw + nr * (off + k));
        CHECK(b->rs[rsc[L]] == -1, "nb=%d reduce_scatter wrote past its block", nb);
        for (k = 0; k < nr; k++)
            CHECK(b->rsb[k] == 2 * sw - nr * (L * nr + k), "nb=%d reduce_scatter_block[%d]=%d",
                  nb, k, b->rsb[k]);
        CHECK(b->rsb[nr] == -1, "nb=%d reduce_scatter_block wrote past its block", nb);
    }
}

/* A nonblocking barrier that returns at once: group 0's rank 0 starts it
 * and then sends synchronously to group 1's rank 0, which receives before
 * it starts the barrier; a blocking barrier would deadlock. */
static void barrier_overlap(const Ctx *c, int m)
{
    MPI_Request rq;
    int v = -1, lists[64];
    int other0;
    group_list(m, 1 - c->col, lists);
    other0 = lists[0];
    if (c->col == 0 && c->lrank == 0) {
        v = 4242;
        MPI_OK(MPI_Ibarrier(c->inter, &rq));
        MPI_OK(MPI_Ssend(&v, 1, MPI_INT, other0, 5, MPI_COMM_WORLD));
        MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    } else if (c->col == 1 && c->lrank == 0) {
        MPI_OK(MPI_Recv(&v, 1, MPI_INT, other0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(v == 4242, "overlap message %d", v);
        MPI_OK(MPI_Ibarrier(c->inter, &rq));
        MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    } else {
        MPI_OK(MPI_Ibarrier(c->inter, &rq));
        MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    }
}

static void scans_refused(const Ctx *c)
{
    int s = 1, r = 0, rc, cls = -1;
    MPI_Request rq;
    MPI_OK(MPI_Comm_set_errhandler(c->inter, MPI_ERRORS_RETURN));
    rc = MPI_Scan(&s, &r, 1, MPI_INT, MPI_SUM, c->inter);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COMM, "MPI_Scan on an intercommunicator: class %d", cls);
    rc = MPI_Exscan(&s, &r, 1, MPI_INT, MPI_SUM, c->inter);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COMM, "MPI_Exscan on an intercommunicator: class %d", cls);
    rc = MPI_Iscan(&s, &r, 1, MPI_INT, MPI_SUM, c->inter, &rq);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COMM, "MPI_Iscan on an intercommunicator: class %d", cls);
    MPI_OK(MPI_Comm_set_errhandler(c->inter, MPI_ERRORS_ARE_FATAL));
}

static void run(int m)
{
    int me = lt_rank, col = color_of(m, me), lists[2][64], n[2], i, g, nb;
    MPI_Comm lc;
    Ctx c;
    Bufs *b = malloc(sizeof(Bufs));
    MPI_Request *rq = malloc(sizeof(MPI_Request) * NOPS);
    MPI_Status sts[NOPS];

    n[0] = group_list(m, 0, lists[0]);
    n[1] = group_list(m, 1, lists[1]);
    c.me = me;
    c.col = col;
    c.local = lists[col];
    c.remote = lists[1 - col];
    c.nl = n[col];
    c.nr = n[1 - col];
    c.lrank = -1;
    for (i = 0; i < c.nl; i++)
        if (c.local[i] == me)
            c.lrank = i;

    MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, col, key_of(m, me), &lc));
    MPI_OK(MPI_Intercomm_create(lc, 0, MPI_COMM_WORLD, c.remote[0], 91 + m, &c.inter));

    for (g = 0; g < 2; g++)
        for (nb = 0; nb < 2; nb++) {
            start_all(&c, b, g, nb, rq);
            if (nb)
                MPI_OK(MPI_Waitall(NOPS, rq, sts));
            check_all(&c, b, g, nb);
        }
    barrier_overlap(&c, m);
    scans_refused(&c);
    MPI_OK(MPI_Comm_free(&c.inter));
    MPI_OK(MPI_Comm_free(&lc));
    free(b);
    free(rq);
}

int main(int argc, char **argv)
{
    lt_init("intercomm_more", &argc, &argv);
    nworld = lt_size;
    if (nworld >= 2 && nworld <= 32) {
        run(0);
        run(1);
    }
    return lt_finish();
}
