/*
 * Intercommunicator collectives on non-contiguous derived datatypes.
 *
 * The world splits into even and odd ranks joined by an intercommunicator.
 * Every message is a whole number of "triples" (three ints), described on
 * each side by one of four types with the same signature: plain MPI_INT, a
 * strided vector (ints 0,2,4 of 6), an indexed type (ints 1,2,5 of 8) and a
 * struct (ints 0,3,4 of 7). Each rank picks its send and receive types by
 * operation, round and rank, so vector-to-contiguous, struct-to-indexed and
 * so on all occur, on either side of the root. Every buffer starts filled
 * with a sentinel; afterwards the whole buffer is compared with an
 * expectation built independently from the ranks: data at the type's
 * positions, the sentinel in every hole, gap and unused slot. Reductions use
 * one type at all ranks (as the standard asks); one allreduce uses a user
 * operation on the vector type. Each round runs blocking, then nonblocking
 * (everything started before one MPI_Waitall), with each group as the root
 * group. Needs 2 or more ranks (1: trivially passes).
 */
#include "lt.h"

#define NOPS 15
#define NBUF 2048 /* ints per buffer */
#define SENT (-77777)

typedef struct {
    MPI_Datatype dt;
    int per, ext; /* ints of data and of extent per instance */
    int off[3];   /* positions of the data ints in one instance */
    const char *name;
} Ty;

static Ty TY[4];
static MPI_Op uop;
static int uop_bad_type;

/* Buffer position of logical int i of a message described with t. */
static int pos(const Ty *t, int i) { return (i / t->per) * t->ext + t->off[i % t->per]; }
/* Instances of t that hold `tr` triples. */
static int inst(const Ty *t, int tr) { return tr * 3 / t->per; }

/* Values: element k of what world rank w sends for index j, and the
 * reduction input of world rank w at element i. */
static int V(int w, int j, int k) { return 10000 * w + 100 * j + k; }
static int R(int w, int i) { return 100 * w + i + 1; }

/* Triples member a of one group and member b of the other exchange. */
static int cnt(int a, int b) { return (a + b) % 3; }

typedef struct {
    MPI_Comm inter;
    int me, col, L, nl, nr;
} Ctx;

/* World rank of member j of the remote group / of group g. */
static int rw(const Ctx *c, int j) { return 2 * j + (1 - c->col); }
static int gw(int g, int j) { return 2 * j + g; }
static int gsize(int nworld, int g) { return g == 0 ? (nworld + 1) / 2 : nworld / 2; }

/* One operation's buffers: `got` is compared with `want` at the end. */
typedef struct {
    int send[NBUF], got[NBUF], want[NBUF];
    int c1[64], d1[64], c2[64], d2[64];
    MPI_Datatype t1[64], t2[64];
    const char *what;
} Slot;

static void sentinel(int *p)
{
    int i;
    for (i = 0; i < NBUF; i++)
        p[i] = SENT;
}

static void reset(Slot *s, const char *what)
{
    sentinel(s->send);
    sentinel(s->got);
    sentinel(s->want);
    s->what = what;
}

/* Root argument for a collective rooted at local rank `r` of group g. */
static int root_arg(const Ctx *c, int g, int r)
{
    if (c->col == g)
        return c->L == r ? MPI_ROOT : MPI_PROC_NULL;
    return r;
}

/* The type this rank uses for side `side` (0 send, 1 receive) of operation
 * o in round r: varies with everything so that all pairings occur. */
static const Ty *pick(const Ctx *c, int o, int r, int side)
{
    return &TY[(o + r + c->col + c->L + side) % 4];
}

/* Puts logical ints [0, 3*tr) of a message described by t, starting at
 * logical triple d of the buffer at int offset base, with values
 * f(w, j, k) = V(w, j, k). */
static void putV(int *buf, int base, const Ty *t, int d, int tr, int w, int j)
{
    int k;
    for (k = 0; k < 3 * tr; k++)
        buf[base + pos(t, 3 * d + k)] = V(w, j, k);
}

/* The user operation: a + b + 1 on each data int of any of the four
 * types (holes are left alone), so a result over n contributions is their
 * sum plus n - 1. Counts calls with a datatype that is none of them. */
static void uop_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    const int *a = in;
    int *b = inout, i, n;
    const Ty *t = NULL;
    for (i = 0; i < 4; i++)
        if (*dt == TY[i].dt)
            t = &TY[i];
    if (!t) {
        uop_bad_type++;
        return;
    }
    n = *len * t->per;
    for (i = 0; i < n; i++)
        b[pos(t, i)] += a[pos(t, i)] + 1;
}

/* Starts (nb) or runs every collective of round r with root group g. */
static void round_ops(const Ctx *c, Slot *S, int g, int r, int nb, MPI_Request *rq, int nworld)
{
    MPI_Comm ic = c->inter;
    int me = c->me, L = c->L, nl = c->nl, nr = c->nr, i, j, k, o = 0;
    int ng = gsize(nworld, g), last = ng - 1;
    for (i = 0; i < NOPS; i++)
        rq[i] = MPI_REQUEST_NULL;
#define GO(blocking, nonblocking)                                             \
    do {                                                                      \
        if (nb)                                                               \
            MPI_OK(nonblocking);                                              \
        else                                                                  \
            MPI_OK(blocking);                                                 \
    } while (0)

    /* 0: Bcast of 2 triples from local rank 0 of group g (MPICH 4.0's
     * Ibcast on an intercommunicator needs the root to be rank 0). */
    {
        Slot *s = &S[o];
        const Ty *ts = pick(c, o, r, 0), *tr = pick(c, o, r, 1);
        int a = root_arg(c, g, 0);
        reset(s, "Bcast");
        if (a == MPI_ROOT) {
            putV(s->got, 0, ts, 0, 2, me, 0);
            putV(s->want, 0, ts, 0, 2, me, 0);
            GO(MPI_Bcast(s->got, inst(ts, 2), ts->dt, a, ic),
               MPI_Ibcast(s->got, inst(ts, 2), ts->dt, a, ic, &rq[o]));
        } else {
            if (a != MPI_PROC_NULL)
                putV(s->want, 0, tr, 0, 2, gw(g, 0), 0);
            GO(MPI_Bcast(s->got, inst(tr, 2), tr->dt, a, ic),
               MPI_Ibcast(s->got, inst(tr, 2), tr->dt, a, ic, &rq[o]));
        }
        o++;
    }
    /* Reductions use the user operation: MPICH defines the predefined
     * ones on basic datatypes only. */
    /* 1: Reduce of 2 triples to local rank 0 of group g. */
    {
        Slot *s = &S[o];
        const Ty *t = &TY[(o + r) % 4];
        int a = root_arg(c, g, 0);
        reset(s, "Reduce");
        for (k = 0; k < 6; k++) {
            s->send[pos(t, k)] = R(me, k);
            if (a == MPI_ROOT) {
                int sum = nr - 1;
                for (j = 0; j < nr; j++)
                    sum += R(rw(c, j), k);
                s->want[pos(t, k)] = sum;
            }
        }
        GO(MPI_Reduce(s->send, s->got, inst(t, 2), t->dt, uop, a, ic),
           MPI_Ireduce(s->send, s->got, inst(t, 2), t->dt, uop, a, ic, &rq[o]));
        o++;
    }
    /* 2: Allreduce of 2 triples. */
    {
        Slot *s = &S[o];
        const Ty *t = &TY[(o + r) % 4];
        reset(s, "Allreduce");
        for (k = 0; k < 6; k++) {
            int sum = nr - 1;
            s->send[pos(t, k)] = R(me, k);
            for (j = 0; j < nr; j++)
                sum += R(rw(c, j), k);
            s->want[pos(t, k)] = sum;
        }
        GO(MPI_Allreduce(s->send, s->got, inst(t, 2), t->dt, uop, ic),
           MPI_Iallreduce(s->send, s->got, inst(t, 2), t->dt, uop, ic, &rq[o]));
        o++;
    }
    /* 3: Allreduce of 2 vector instances (every round). */
    {
        Slot *s = &S[o];
        const Ty *t = &TY[1];
        reset(s, "Allreduce(user op, vector)");
        for (k = 0; k < 6; k++) {
            int sum = nr - 1;
            s->send[pos(t, k)] = R(me, k);
            for (j = 0; j < nr; j++)
                sum += R(rw(c, j), k);
            s->want[pos(t, k)] = sum;
        }
        GO(MPI_Allreduce(s->send, s->got, 2, t->dt, uop, ic),
           MPI_Iallreduce(s->send, s->got, 2, t->dt, uop, ic, &rq[o]));
        o++;
    }
    /* 4: Gather of 2 triples each to local rank 0 of group g. */
    {
        Slot *s = &S[o];
        const Ty *ts = pick(c, o, r, 0), *tr = pick(c, o, r, 1);
        int a = root_arg(c, g, 0);
        reset(s, "Gather");
        putV(s->send, 0, ts, 0, 2, me, 0);
        if (a == MPI_ROOT)
            for (j = 0; j < nr; j++)
                putV(s->want, 0, tr, 2 * j, 2, rw(c, j), 0);
        GO(MPI_Gather(s->send, inst(ts, 2), ts->dt, s->got, inst(tr, 2), tr->dt, a, ic),
           MPI_Igather(s->send, inst(ts, 2), ts->dt, s->got, inst(tr, 2), tr->dt, a, ic,
                       &rq[o]));
        o++;
    }
    /* 5: Gatherv to the last rank of group g: member j sends j%2+1
     * triples, placed at triple 3j+1 (gaps keep the sentinel). */
    {
        Slot *s = &S[o];
        const Ty *ts = pick(c, o, r, 0), *tr = pick(c, o, r, 1);
        int a = root_arg(c, g, last);
        reset(s, "Gatherv");
        putV(s->send, 0, ts, 0, L % 2 + 1, me, 1);
        for (j = 0; j < nr; j++) {
            s->c1[j] = inst(tr, j % 2 + 1);
            s->d1[j] = inst(tr, 3 * j + 1);
            if (a == MPI_ROOT)
                putV(s->want, 0, tr, 3 * j + 1, j % 2 + 1, rw(c, j), 1);
        }
        GO(MPI_Gatherv(s->send, inst(ts, L % 2 + 1), ts->dt, s->got, s->c1, s->d1, tr->dt, a,
                       ic),
           MPI_Igatherv(s->send, inst(ts, L % 2 + 1), ts->dt, s->got, s->c1, s->d1, tr->dt, a,
                        ic, &rq[o]));
        o++;
    }
    /* 6: Scatter of 2 triples each from the last rank of group g. */
    {
        Slot *s = &S[o];
        const Ty *ts = pick(c, o, r, 0), *tr = pick(c, o, r, 1);
        int a = root_arg(c, g, last);
        reset(s, "Scatter");
        if (a == MPI_ROOT)
            for (j = 0; j < nr; j++)
                putV(s->send, 0, ts, 2 * j, 2, me, j);
        if (a >= 0)
            putV(s->want, 0, tr, 0, 2, gw(g, last), L);
        GO(MPI_Scatter(s->send, inst(ts, 2), ts->dt, s->got, inst(tr, 2), tr->dt, a, ic),
           MPI_Iscatter(s->send, inst(ts, 2), ts->dt, s->got, inst(tr, 2), tr->dt, a, ic,
                        &rq[o]));
        o++;
    }
    /* 7: Scatterv from local rank 0 of group g: member j gets j%2+1
     * triples from triple 3j. */
    {
        Slot *s = &S[o];
        const Ty *ts = pick(c, o, r, 0), *tr = pick(c, o, r, 1);
        int a = root_arg(c, g, 0);
        reset(s, "Scatterv");
        for (j = 0; j < nr; j++) {
            s->c1[j] = inst(ts, j % 2 + 1);
            s->d1[j] = inst(ts, 3 * j);
            if (a == MPI_ROOT)
                putV(s->send, 0, ts, 3 * j, j % 2 + 1, me, j);
        }
        if (a >= 0)
            putV(s->want, 0, tr, 0, L % 2 + 1, gw(g, 0), L);
        GO(MPI_Scatterv(s->send, s->c1, s->d1, ts->dt, s->got, inst(tr, L % 2 + 1), tr->dt, a,
                        ic),
           MPI_Iscatterv(s->send, s->c1, s->d1, ts->dt, s->got, inst(tr, L % 2 + 1), tr->dt, a,
                         ic, &rq[o]));
        o++;
    }
    /* 8: Allgather: group c sends c+1 triples. */
    {
        Slot *s = &S[o];
        const Ty *ts = pick(c, o, r, 0), *tr = pick(c, o, r, 1);
        int sc = c->col + 1, rc = 2 - c->col;
        reset(s, "Allgather");
        putV(s->send, 0, ts, 0, sc, me, 2);
        for (j = 0; j < nr; j++)
            putV(s->want, 0, tr, rc * j, rc, rw(c, j), 2);
        GO(MPI_Allgather(s->send, inst(ts, sc), ts->dt, s->got, inst(tr, rc), tr->dt, ic),
           MPI_Iallgather(s->send, inst(ts, sc), ts->dt, s->got, inst(tr, rc), tr->dt, ic,
                          &rq[o]));
        o++;
    }
    /* 9: Allgatherv: member j sends j%3+1 triples, placed at triple
     * 4(nr-1-j)+1 (reversed, with gaps). */
    {
        Slot *s = &S[o];
        const Ty *ts = pick(c, o, r, 0), *tr = pick(c, o, r, 1);
        reset(s, "Allgatherv");
        putV(s->send, 0, ts, 0, L % 3 + 1, me, 3);
        for (j = 0; j < nr; j++) {
            s->c1[j] = inst(tr, j % 3 + 1);
            s->d1[j] = inst(tr, 4 * (nr - 1 - j) + 1);
            putV(s->want, 0, tr, 4 * (nr - 1 - j) + 1, j % 3 + 1, rw(c, j), 3);
        }
        GO(MPI_Allgatherv(s->send, inst(ts, L % 3 + 1), ts->dt, s->got, s->c1, s->d1, tr->dt,
                          ic),
           MPI_Iallgatherv(s->send, inst(ts, L % 3 + 1), ts->dt, s->got, s->c1, s->d1, tr->dt,
                           ic, &rq[o]));
        o++;
    }
    /* 10: Alltoall of 2 triples per pair. */
    {
        Slot *s = &S[o];
        const Ty *ts = pick(c, o, r, 0), *tr = pick(c, o, r, 1);
        reset(s, "Alltoall");
        for (j = 0; j < nr; j++) {
            putV(s->send, 0, ts, 2 * j, 2, me, j);
            putV(s->want, 0, tr, 2 * j, 2, rw(c, j), L);
        }
        GO(MPI_Alltoall(s->send, inst(ts, 2), ts->dt, s->got, inst(tr, 2), tr->dt, ic),
           MPI_Ialltoall(s->send, inst(ts, 2), ts->dt, s->got, inst(tr, 2), tr->dt, ic, &rq[o]));
        o++;
    }
    /* 11: Alltoallv: cnt(a, b) triples from a to b, sent from triple 3j,
     * received at triple 3(nr-1-j)+1. */
    {
        Slot *s = &S[o];
        const Ty *ts = pick(c, o, r, 0), *tr = pick(c, o, r, 1);
        reset(s, "Alltoallv");
        for (j = 0; j < nr; j++) {
            int d = 3 * (nr - 1 - j) + 1;
            s->c1[j] = inst(ts, cnt(L, j));
            s->d1[j] = inst(ts, 3 * j);
            putV(s->send, 0, ts, 3 * j, cnt(L, j), me, j);
            s->c2[j] = inst(tr, cnt(j, L));
            s->d2[j] = inst(tr, d);
            putV(s->want, 0, tr, d, cnt(j, L), rw(c, j), L);
        }
        GO(MPI_Alltoallv(s->send, s->c1, s->d1, ts->dt, s->got, s->c2, s->d2, tr->dt, ic),
           MPI_Ialltoallv(s->send, s->c1, s->d1, ts->dt, s->got, s->c2, s->d2, tr->dt, ic,
                          &rq[o]));
        o++;
    }
    /* 12: Alltoallw: a type per peer; blocks 32 ints apart (bytes). */
    {
        Slot *s = &S[o];
        reset(s, "Alltoallw");
        for (j = 0; j < nr; j++) {
            const Ty *ts = &TY[(j + L + r) % 4], *tr = &TY[(j + L + r + 1) % 4];
            int sb = 32 * j, rb = 32 * (nr - 1 - j) + 3;
            s->c1[j] = inst(ts, cnt(L, j));
            s->d1[j] = sb * (int)sizeof(int);
            s->t1[j] = ts->dt;
            putV(s->send, sb, ts, 0, cnt(L, j), me, j);
            s->c2[j] = inst(tr, cnt(j, L));
            s->d2[j] = rb * (int)sizeof(int);
            s->t2[j] = tr->dt;
            putV(s->want, rb, tr, 0, cnt(j, L), rw(c, j), L);
        }
        GO(MPI_Alltoallw(s->send, s->c1, s->d1, s->t1, s->got, s->c2, s->d2, s->t2, ic),
           MPI_Ialltoallw(s->send, s->c1, s->d1, s->t1, s->got, s->c2, s->d2, s->t2, ic,
                          &rq[o]));
        o++;
    }
    /* 13: Reduce_scatter_block: the vectors hold nl*nr triples; each
     * member gets nr triples of the other group's sum. */
    {
        Slot *s = &S[o];
        const Ty *t = &TY[(o + r) % 4];
        reset(s, "Reduce_scatter_block");
        for (i = 0; i < 3 * nl * nr; i++)
            s->send[pos(t, i)] = R(me, i);
        for (k = 0; k < 3 * nr; k++) {
            int sum = nr - 1;
            for (j = 0; j < nr; j++)
                sum += R(rw(c, j), 3 * nr * L + k);
            s->want[pos(t, k)] = sum;
        }
        GO(MPI_Reduce_scatter_block(s->send, s->got, inst(t, nr), t->dt, uop, ic),
           MPI_Ireduce_scatter_block(s->send, s->got, inst(t, nr), t->dt, uop, ic, &rq[o]));
        o++;
    }
    /* 14: Reduce_scatter with uneven blocks summing to nl*nr triples. */
    {
        Slot *s = &S[o];
        const Ty *t = &TY[(o + r) % 4];
        int off = 0;
        reset(s, "Reduce_scatter");
        for (i = 0; i < nl; i++)
            s->c2[i] = nr;
        if (nl >= 2) {
            s->c2[0]++;
            s->c2[nl - 1]--;
        }
        for (i = 0; i < L; i++)
            off += s->c2[i];
        for (i = 0; i < nl; i++)
            s->c1[i] = inst(t, s->c2[i]);
        for (i = 0; i < 3 * nl * nr; i++)
            s->send[pos(t, i)] = R(me, i);
        for (k = 0; k < 3 * s->c2[L]; k++) {
            int sum = nr - 1;
            for (j = 0; j < nr; j++)
                sum += R(rw(c, j), 3 * off + k);
            s->want[pos(t, k)] = sum;
        }
        GO(MPI_Reduce_scatter(s->send, s->got, s->c1, t->dt, uop, ic),
           MPI_Ireduce_scatter(s->send, s->got, s->c1, t->dt, uop, ic, &rq[o]));
        o++;
    }
#undef GO
}

static void check_slots(Slot *S, int n, const char *mode, int g, int r, int nb)
{
    int o, i;
    for (o = 0; o < n; o++) {
        int bad = 0;
        for (i = 0; i < NBUF && bad < 3; i++)
            if (S[o].got[i] != S[o].want[i]) {
                CHECK(0, "%s (%s%s, root group %d, round %d): int %d is %d, expected %d",
                      S[o].what, mode, nb ? "nonblocking" : "blocking", g, r, i,
                      S[o].got[i], S[o].want[i]);
                bad++;
            }
    }
}

/* Persistent collectives run the nonblocking ones at each start: an
 * alltoall from the vector type into the indexed one and an allreduce with
 * the user operation on the struct type, each started twice with new
 * send data in between. */
static void persistent(const Ctx *c, Slot *S)
{
    const Ty *tv = &TY[1], *tx = &TY[2], *ts = &TY[3];
    int nr = c->nr, L = c->L, me = c->me, j, k, it;
    MPI_Request rq[2];
    MPI_Status st[2];
    MPI_Info info = MPI_INFO_NULL;
    reset(&S[0], "Alltoall_init");
    reset(&S[1], "Allreduce_init(user op, struct)");
    MPI_OK(MPI_Alltoall_init(S[0].send, 2, tv->dt, S[0].got, 2, tx->dt, c->inter, info, &rq[0]));
    MPI_OK(MPI_Allreduce_init(S[1].send, S[1].got, 2, ts->dt, uop, c->inter, info, &rq[1]));
    for (it = 0; it < 2; it++) {
        for (j = 0; j < nr; j++) {
            putV(S[0].send, 0, tv, 2 * j, 2, me + 100 * it, j);
            putV(S[0].want, 0, tx, 2 * j, 2, rw(c, j) + 100 * it, L);
        }
        for (k = 0; k < 6; k++) {
            int sum = nr - 1;
            S[1].send[pos(ts, k)] = R(me, k) + it;
            for (j = 0; j < nr; j++)
                sum += R(rw(c, j), k) + it;
            S[1].want[pos(ts, k)] = sum;
        }
        MPI_OK(MPI_Startall(2, rq));
        MPI_OK(MPI_Waitall(2, rq, st));
        check_slots(S, 2, "persistent ", -1, it, 1);
    }
    MPI_OK(MPI_Request_free(&rq[0]));
    MPI_OK(MPI_Request_free(&rq[1]));
}

static void make_types(void)
{
    MPI_Datatype v, x, st;
    int bl[2] = {2, 1}, di[2] = {1, 5};
    int sbl[2] = {1, 2};
    MPI_Aint sdi[2] = {0, 3 * sizeof(int)};
    MPI_Datatype sty[2] = {MPI_INT, MPI_INT};

    TY[0] = (Ty){MPI_INT, 1, 1, {0, 0, 0}, "int"};

    MPI_OK(MPI_Type_vector(3, 1, 2, MPI_INT, &v));
    MPI_OK(MPI_Type_create_resized(v, 0, 6 * sizeof(int), &TY[1].dt));
    MPI_OK(MPI_Type_free(&v));
    TY[1].per = 3, TY[1].ext = 6, TY[1].off[0] = 0, TY[1].off[1] = 2, TY[1].off[2] = 4;
    TY[1].name = "vector";

    MPI_OK(MPI_Type_indexed(2, bl, di, MPI_INT, &x));
    MPI_OK(MPI_Type_create_resized(x, 0, 8 * sizeof(int), &TY[2].dt));
    MPI_OK(MPI_Type_free(&x));
    TY[2].per = 3, TY[2].ext = 8, TY[2].off[0] = 1, TY[2].off[1] = 2, TY[2].off[2] = 5;
    TY[2].name = "indexed";

    MPI_OK(MPI_Type_create_struct(2, sbl, sdi, sty, &st));
    MPI_OK(MPI_Type_create_resized(st, 0, 7 * sizeof(int), &TY[3].dt));
    MPI_OK(MPI_Type_free(&st));
    TY[3].per = 3, TY[3].ext = 7, TY[3].off[0] = 0, TY[3].off[1] = 3, TY[3].off[2] = 4;
    TY[3].name = "struct";

    for (int i = 1; i < 4; i++)
        MPI_OK(MPI_Type_commit(&TY[i].dt));
}

int main(int argc, char **argv)
{
    int nworld, g, r, nb, i;
    Ctx c;
    MPI_Comm lc;
    Slot *S;
    MPI_Request rq[NOPS];

    lt_init("intercomm_derived", &argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &nworld);
    if (nworld < 2)
        return lt_finish();
    MPI_Comm_rank(MPI_COMM_WORLD, &c.me);
    make_types();
    MPI_OK(MPI_Op_create(uop_fn, 1, &uop));

    c.col = c.me % 2;
    c.L = c.me / 2;
    MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, c.col, c.me, &lc));
    MPI_OK(MPI_Intercomm_create(lc, 0, MPI_COMM_WORLD, 1 - c.col, 77, &c.inter));
    MPI_OK(MPI_Comm_size(c.inter, &c.nl));
    MPI_OK(MPI_Comm_remote_size(c.inter, &c.nr));
    CHECK(c.nl == gsize(nworld, c.col) && c.nr == gsize(nworld, 1 - c.col),
          "group sizes %d/%d", c.nl, c.nr);
    {
        int lr;
        MPI_OK(MPI_Comm_rank(c.inter, &lr));
        CHECK(lr == c.L, "local rank %d, expected %d", lr, c.L);
    }

    S = malloc(NOPS * sizeof(Slot));
    if (!S) {
        CHECK(0, "out of memory");
        return lt_finish();
    }
    for (r = 0; r < 4; r++)
        for (g = 0; g < 2; g++)
            for (nb = 0; nb < 2; nb++) {
                MPI_Status sts[NOPS];
                round_ops(&c, S, g, r, nb, rq, nworld);
                if (nb)
                    MPI_OK(MPI_Waitall(NOPS, rq, sts));
                check_slots(S, NOPS, "", g, r, nb);
            }
    persistent(&c, S);
    CHECK(uop_bad_type == 0, "the user operation saw another datatype %d time(s)",
          uop_bad_type);

    free(S);
    MPI_OK(MPI_Op_free(&uop));
    for (i = 1; i < 4; i++)
        MPI_OK(MPI_Type_free(&TY[i].dt));
    MPI_OK(MPI_Comm_free(&c.inter));
    MPI_OK(MPI_Comm_free(&lc));
    return lt_finish();
}
