/*
 * Non-contiguous derived datatypes in every collective, blocking and
 * nonblocking, in the v/w forms, the reduce-scatters and scans, the
 * neighbour collectives, and persistent point-to-point; plus the large-count
 * (_c) datatype constructors where the library has them.
 *
 * Two layouts with holes are used: a vector of 2 ints with stride 2 (extent
 * 3 ints) and a struct {int; double} resized to 24 bytes. Every byte of a
 * receive buffer is checked: data bytes against a pattern computed locally
 * from the sending rank and instance, hole bytes (and instances nothing was
 * received into) must keep their sentinel. Reductions use the vector of
 * MPI_INT with MPI_SUM, which MPICH accepts too.
 */
#define _GNU_SOURCE
#include "lt.h"
#include <dlfcn.h>
#include <stddef.h>

#define SENT 0xEE

/* A datatype and where its data bytes lie in one instance. */
typedef struct {
    MPI_Datatype t;
    const char *name;
    int extent;
    int nseg;
    int off[2];
    int len[2];
} ty_t;

static ty_t VEC, RS, CONT2;

static unsigned char pat(int v, int j) { return (unsigned char)(v * 7 + j * 13 + 1); }

static int tagof(int rank, int k) { return rank * 64 + k + 1; }

static char *alloc(const ty_t *T, int n)
{
    char *b = malloc((size_t)(n > 0 ? n : 1) * T->extent);
    memset(b, SENT, (size_t)(n > 0 ? n : 1) * T->extent);
    return b;
}

/* Instance k of buf carries tag v. */
static void put(char *buf, const ty_t *T, int k, int v)
{
    int s, b, j = 0;
    for (s = 0; s < T->nseg; s++)
        for (b = 0; b < T->len[s]; b++)
            buf[(size_t)k * T->extent + T->off[s] + b] = (char)pat(v, j++);
}

/* n instances of buf: instance k carries tag exp[k], or is untouched when
 * exp[k] < 0; holes are untouched everywhere. */
static void check_at(int line, const char *what, const char *buf, const ty_t *T, int n,
                     const int *exp)
{
    int k, s, b, bad = 0;
    for (k = 0; k < n && !bad; k++) {
        const unsigned char *p = (const unsigned char *)buf + (size_t)k * T->extent;
        unsigned char want[64];
        int j = 0;
        memset(want, SENT, sizeof want);
        for (s = 0; s < T->nseg; s++)
            for (b = 0; b < T->len[s]; b++, j++)
                if (exp[k] >= 0)
                    want[T->off[s] + b] = pat(exp[k], j);
        for (b = 0; b < T->extent; b++)
            if (p[b] != want[b]) {
                lt_fail_at(line, "%s (%s): instance %d byte %d is 0x%02x, want 0x%02x (tag %d)",
                           what, T->name, k, b, p[b], want[b], exp[k]);
                bad = 1;
                break;
            }
    }
}
#define check(what, buf, T, n, exp) check_at(__LINE__, what, buf, T, n, exp)

static void wait_mode(MPI_Request *rq, int mode)
{
    int flag = 0;
    if (mode == 0) {
        MPI_OK(MPI_Wait(rq, MPI_STATUS_IGNORE));
        return;
    }
    while (!flag)
        MPI_OK(MPI_Test(rq, &flag, MPI_STATUS_IGNORE));
    CHECK(*rq == MPI_REQUEST_NULL, "Test did not free the request");
}

static void make_types(void)
{
    MPI_Datatype s;
    int bl[2] = {1, 1};
    MPI_Aint d[2] = {0, 8};
    MPI_Datatype ts[2] = {MPI_INT, MPI_DOUBLE};

    MPI_OK(MPI_Type_vector(2, 1, 2, MPI_INT, &VEC.t));
    MPI_OK(MPI_Type_commit(&VEC.t));
    VEC.name = "vector";
    VEC.extent = 12;
    VEC.nseg = 2;
    VEC.off[0] = 0, VEC.len[0] = 4, VEC.off[1] = 8, VEC.len[1] = 4;

    MPI_OK(MPI_Type_create_struct(2, bl, d, ts, &s));
    MPI_OK(MPI_Type_create_resized(s, 0, 24, &RS.t));
    MPI_OK(MPI_Type_commit(&RS.t));
    MPI_OK(MPI_Type_free(&s));
    RS.name = "resized struct";
    RS.extent = 24;
    RS.nseg = 2;
    RS.off[0] = 0, RS.len[0] = 4, RS.off[1] = 8, RS.len[1] = 8;

    MPI_OK(MPI_Type_contiguous(2, MPI_INT, &CONT2.t));
    MPI_OK(MPI_Type_commit(&CONT2.t));
    CONT2.name = "contiguous";
    CONT2.extent = 8;
    CONT2.nseg = 1;
    CONT2.off[0] = 0, CONT2.len[0] = 8;
}

/* ---- rooted and all-to-all collectives with equal blocks ---------------- */

static void bcast(const ty_t *T, int root, int nb)
{
    int n = 3, k, exp[3];
    char *b = alloc(T, n);
    MPI_Request rq;
    if (lt_rank == root)
        for (k = 0; k < n; k++)
            put(b, T, k, tagof(root, k));
    if (nb) {
        MPI_OK(MPI_Ibcast(b, n, T->t, root, MPI_COMM_WORLD, &rq));
        wait_mode(&rq, nb - 1);
    } else {
        MPI_OK(MPI_Bcast(b, n, T->t, root, MPI_COMM_WORLD));
    }
    for (k = 0; k < n; k++)
        exp[k] = tagof(root, k);
    check(nb ? "Ibcast" : "Bcast", b, T, n, exp);
    free(b);
}

static void gather(const ty_t *T, int root, int nb)
{
    int c = 2, k, r, n = c * lt_size;
    char *s = alloc(T, c), *b = alloc(T, n);
    int *exp = malloc(sizeof(int) * n);
    MPI_Request rq;
    for (k = 0; k < c; k++)
        put(s, T, k, tagof(lt_rank, k));
    if (nb) {
        MPI_OK(MPI_Igather(s, c, T->t, b, c, T->t, root, MPI_COMM_WORLD, &rq));
        wait_mode(&rq, nb - 1);
    } else {
        MPI_OK(MPI_Gather(s, c, T->t, b, c, T->t, root, MPI_COMM_WORLD));
    }
    for (r = 0; r < lt_size; r++)
        for (k = 0; k < c; k++)
            exp[r * c + k] = lt_rank == root ? tagof(r, k) : -1;
    check(nb ? "Igather" : "Gather", b, T, n, exp);
    free(s), free(b), free(exp);
}

static void scatter(const ty_t *T, int root, int nb)
{
    int c = 2, k, r, n = c * lt_size, exp[2];
    char *s = alloc(T, n), *b = alloc(T, c);
    MPI_Request rq;
    if (lt_rank == root)
        for (r = 0; r < lt_size; r++)
            for (k = 0; k < c; k++)
                put(s, T, r * c + k, tagof(r, k));
    if (nb) {
        MPI_OK(MPI_Iscatter(s, c, T->t, b, c, T->t, root, MPI_COMM_WORLD, &rq));
        wait_mode(&rq, nb - 1);
    } else {
        MPI_OK(MPI_Scatter(s, c, T->t, b, c, T->t, root, MPI_COMM_WORLD));
    }
    for (k = 0; k < c; k++)
        exp[k] = tagof(lt_rank, k);
    check(nb ? "Iscatter" : "Scatter", b, T, c, exp);
    free(s), free(b);
}

static void allgather(const ty_t *T, int nb)
{
    int c = 2, k, r, n = c * lt_size;
    char *s = alloc(T, c), *b = alloc(T, n);
    int *exp = malloc(sizeof(int) * n);
    MPI_Request rq;
    for (k = 0; k < c; k++)
        put(s, T, k, tagof(lt_rank, k));
    if (nb) {
        MPI_OK(MPI_Iallgather(s, c, T->t, b, c, T->t, MPI_COMM_WORLD, &rq));
        wait_mode(&rq, nb - 1);
    } else {
        MPI_OK(MPI_Allgather(s, c, T->t, b, c, T->t, MPI_COMM_WORLD));
    }
    for (r = 0; r < lt_size; r++)
        for (k = 0; k < c; k++)
            exp[r * c + k] = tagof(r, k);
    check(nb ? "Iallgather" : "Allgather", b, T, n, exp);
    free(s), free(b), free(exp);
}

static void alltoall(const ty_t *T, int nb)
{
    int c = 2, k, r, n = c * lt_size;
    char *s = alloc(T, n), *b = alloc(T, n);
    int *exp = malloc(sizeof(int) * n);
    MPI_Request rq;
    for (r = 0; r < lt_size; r++)
        for (k = 0; k < c; k++)
            put(s, T, r * c + k, tagof(lt_rank, r * c + k));
    if (nb) {
        MPI_OK(MPI_Ialltoall(s, c, T->t, b, c, T->t, MPI_COMM_WORLD, &rq));
        wait_mode(&rq, nb - 1);
    } else {
        MPI_OK(MPI_Alltoall(s, c, T->t, b, c, T->t, MPI_COMM_WORLD));
    }
    for (r = 0; r < lt_size; r++)
        for (k = 0; k < c; k++)
            exp[r * c + k] = tagof(r, lt_rank * c + k);
    check(nb ? "Ialltoall" : "Alltoall", b, T, n, exp);
    free(s), free(b), free(exp);
}

/* ---- v and w forms -------------------------------------------------------- */

/* Rank r contributes cnt(r) instances; blocks are laid out with a one-
 * instance gap before each, so gaps must stay untouched. */
static int cnt(int r) { return r % 3 + 1; }

static int layout(int *counts, int *displs, int (*f)(int))
{
    int r, at = 0;
    for (r = 0; r < lt_size; r++) {
        counts[r] = f(r);
        displs[r] = at + 1;
        at += 1 + counts[r];
    }
    return at;
}

static void gatherv(const ty_t *T, int root, int nb)
{
    int *counts = malloc(sizeof(int) * lt_size), *displs = malloc(sizeof(int) * lt_size);
    int n = layout(counts, displs, cnt), c = cnt(lt_rank), k, r;
    char *s = alloc(T, c), *b = alloc(T, n);
    int *exp = malloc(sizeof(int) * n);
    MPI_Request rq;
    for (k = 0; k < c; k++)
        put(s, T, k, tagof(lt_rank, k));
    if (nb) {
        MPI_OK(MPI_Igatherv(s, c, T->t, b, counts, displs, T->t, root, MPI_COMM_WORLD, &rq));
        wait_mode(&rq, nb - 1);
    } else {
        MPI_OK(MPI_Gatherv(s, c, T->t, b, counts, displs, T->t, root, MPI_COMM_WORLD));
    }
    for (k = 0; k < n; k++)
        exp[k] = -1;
    if (lt_rank == root)
        for (r = 0; r < lt_size; r++)
            for (k = 0; k < counts[r]; k++)
                exp[displs[r] + k] = tagof(r, k);
    check(nb ? "Igatherv" : "Gatherv", b, T, n, exp);
    free(s), free(b), free(exp), free(counts), free(displs);
}

static void scatterv(const ty_t *T, int root, int nb)
{
    int *counts = malloc(sizeof(int) * lt_size), *displs = malloc(sizeof(int) * lt_size);
    int n = layout(counts, displs, cnt), c = cnt(lt_rank), k, r, exp[3];
    char *s = alloc(T, n), *b = alloc(T, c + 1);
    MPI_Request rq;
    if (lt_rank == root)
        for (r = 0; r < lt_size; r++)
            for (k = 0; k < counts[r]; k++)
                put(s, T, displs[r] + k, tagof(r, k));
    if (nb) {
        MPI_OK(MPI_Iscatterv(s, counts, displs, T->t, b, c, T->t, root, MPI_COMM_WORLD, &rq));
        wait_mode(&rq, nb - 1);
    } else {
        MPI_OK(MPI_Scatterv(s, counts, displs, T->t, b, c, T->t, root, MPI_COMM_WORLD));
    }
    {
        int e[4];
        for (k = 0; k < c; k++)
            e[k] = tagof(lt_rank, k);
        e[c] = -1;
        check(nb ? "Iscatterv" : "Scatterv", b, T, c + 1, e);
    }
    (void)exp;
    free(s), free(b), free(counts), free(displs);
}

static void allgatherv(const ty_t *T, int nb)
{
    int *counts = malloc(sizeof(int) * lt_size), *displs = malloc(sizeof(int) * lt_size);
    int n = layout(counts, displs, cnt), c = cnt(lt_rank), k, r;
    char *s = alloc(T, c), *b = alloc(T, n);
    int *exp = malloc(sizeof(int) * n);
    MPI_Request rq;
    for (k = 0; k < c; k++)
        put(s, T, k, tagof(lt_rank, k));
    if (nb) {
        MPI_OK(MPI_Iallgatherv(s, c, T->t, b, counts, displs, T->t, MPI_COMM_WORLD, &rq));
        wait_mode(&rq, nb - 1);
    } else {
        MPI_OK(MPI_Allgatherv(s, c, T->t, b, counts, displs, T->t, MPI_COMM_WORLD));
    }
    for (k = 0; k < n; k++)
        exp[k] = -1;
    for (r = 0; r < lt_size; r++)
        for (k = 0; k < counts[r]; k++)
            exp[displs[r] + k] = tagof(r, k);
    /* MPICH 4.0 ignores the displacement of a lone process's own block. */
    if (!(lt_size == 1 && lt_running_on_mpich()))
        check(nb ? "Iallgatherv" : "Allgatherv", b, T, n, exp);
    free(s), free(b), free(exp), free(counts), free(displs);
}

/* Instances rank a sends to rank b in the alltoallv test. */
static int pair(int a, int b) { return (a + 2 * b) % 3 + 1; }
static int me_;
static int to_(int r) { return pair(me_, r); }
static int from_(int r) { return pair(r, me_); }

static void alltoallv(const ty_t *T, int nb)
{
    int *sc = malloc(sizeof(int) * lt_size), *sd = malloc(sizeof(int) * lt_size);
    int *rc = malloc(sizeof(int) * lt_size), *rd = malloc(sizeof(int) * lt_size);
    int ns, nr, k, r, *exp;
    char *s, *b;
    MPI_Request rq;
    me_ = lt_rank;
    ns = layout(sc, sd, to_);
    nr = layout(rc, rd, from_);
    s = alloc(T, ns), b = alloc(T, nr);
    exp = malloc(sizeof(int) * nr);
    for (r = 0; r < lt_size; r++)
        for (k = 0; k < sc[r]; k++)
            put(s, T, sd[r] + k, tagof(lt_rank, r * 4 + k));
    if (nb) {
        MPI_OK(MPI_Ialltoallv(s, sc, sd, T->t, b, rc, rd, T->t, MPI_COMM_WORLD, &rq));
        wait_mode(&rq, nb - 1);
    } else {
        MPI_OK(MPI_Alltoallv(s, sc, sd, T->t, b, rc, rd, T->t, MPI_COMM_WORLD));
    }
    for (k = 0; k < nr; k++)
        exp[k] = -1;
    for (r = 0; r < lt_size; r++)
        for (k = 0; k < rc[r]; k++)
            exp[rd[r] + k] = tagof(r, lt_rank * 4 + k);
    check(nb ? "Ialltoallv" : "Alltoallv", b, T, nr, exp);
    free(s), free(b), free(exp), free(sc), free(sd), free(rc), free(rd);
}

/* Alltoallw: the block between ranks a and b has type VEC or CONT2 (same
 * signature, different layouts) by the parity of a + b, 2 instances, at
 * byte displacements with a 16-byte gap before each block. */
static void alltoallw(int nb)
{
    const ty_t *ty[2] = {&VEC, &CONT2};
    int c = 2, k, r, at = 0, bad = 0;
    int *cnts = malloc(sizeof(int) * lt_size), *dis = malloc(sizeof(int) * lt_size);
    MPI_Datatype *ts = malloc(sizeof(MPI_Datatype) * lt_size);
    char *s, *b;
    MPI_Request rq;
    for (r = 0; r < lt_size; r++) {
        const ty_t *T = ty[(lt_rank + r) % 2];
        cnts[r] = c;
        dis[r] = at + 16;
        ts[r] = T->t;
        at += 16 + c * T->extent;
    }
    s = malloc(at), b = malloc(at);
    memset(s, SENT, at), memset(b, SENT, at);
    for (r = 0; r < lt_size; r++)
        for (k = 0; k < c; k++)
            put(s + dis[r], ty[(lt_rank + r) % 2], k, tagof(lt_rank, r * 4 + k));
    if (nb) {
        MPI_OK(MPI_Ialltoallw(s, cnts, dis, ts, b, cnts, dis, ts, MPI_COMM_WORLD, &rq));
        wait_mode(&rq, nb - 1);
    } else {
        MPI_OK(MPI_Alltoallw(s, cnts, dis, ts, b, cnts, dis, ts, MPI_COMM_WORLD));
    }
    for (r = 0; r < lt_size && !bad; r++) {
        int exp[2];
        const unsigned char *gap = (const unsigned char *)b + dis[r] - 16;
        for (k = 0; k < 16; k++)
            if (gap[k] != SENT)
                bad = 1;
        CHECK(!bad, "Alltoallw: gap before block %d was written", r);
        for (k = 0; k < c; k++)
            exp[k] = tagof(r, lt_rank * 4 + k);
        check(nb ? "Ialltoallw" : "Alltoallw", b + dis[r], ty[(lt_rank + r) % 2], c, exp);
    }
    free(s), free(b), free(cnts), free(dis), free(ts);
}

/* ---- reductions on the vector of ints (MPI_SUM) -------------------------- */

/* The ints of n VEC instances: element e (0-based over the data ints) of
 * instance k lies at int index 3k + 2e. */
static int *vec_alloc(int n)
{
    int *v = malloc(sizeof(int) * 3 * (n > 0 ? n : 1)), i;
    for (i = 0; i < 3 * (n > 0 ? n : 1); i++)
        v[i] = -999;
    return v;
}
static int contrib(int rank, int k, int e) { return rank * 100 + k * 2 + e + 1; }
static void vec_fill(int *v, int n, int rank, int base)
{
    int k;
    for (k = 0; k < n; k++) {
        v[3 * k] = contrib(rank, base + k, 0);
        v[3 * k + 2] = contrib(rank, base + k, 1);
    }
}
/* Sum over ranks lo..hi-1 of contrib(rank, k, e). */
static int sum_of(int lo, int hi, int k, int e)
{
    int r, s = 0;
    for (r = lo; r < hi; r++)
        s += contrib(r, k, e);
    return s;
}

static void check_vec_at(int line, const char *what, const int *v, int n, int lo, int hi,
                         int base)
{
    int k;
    for (k = 0; k < n; k++) {
        int want0 = lo < 0 ? -999 : sum_of(lo, hi, base + k, 0);
        int want1 = lo < 0 ? -999 : sum_of(lo, hi, base + k, 1);
        if (v[3 * k] != want0 || v[3 * k + 2] != want1 || v[3 * k + 1] != -999) {
            lt_fail_at(line, "%s: instance %d is (%d,[%d],%d), want (%d,[-999],%d)", what, k,
                       v[3 * k], v[3 * k + 1], v[3 * k + 2], want0, want1);
            return;
        }
    }
}
#define check_vec(what, v, n, lo, hi, base) check_vec_at(__LINE__, what, v, n, lo, hi, base)

static void reductions(int nb)
{
    int c = 2, n = c * lt_size, r, total = 0;
    int *s = vec_alloc(n), *b = vec_alloc(n + 1);
    int *counts = malloc(sizeof(int) * lt_size);
    MPI_Request rq;

    /* Reduce_scatter_block: rank r gets instances r*c .. r*c+c-1 summed. */
    vec_fill(s, n, lt_rank, 0);
    if (nb) {
        MPI_OK(MPI_Ireduce_scatter_block(s, b, c, VEC.t, MPI_SUM, MPI_COMM_WORLD, &rq));
        wait_mode(&rq, nb - 1);
    } else {
        MPI_OK(MPI_Reduce_scatter_block(s, b, c, VEC.t, MPI_SUM, MPI_COMM_WORLD));
    }
    check_vec(nb ? "Ireduce_scatter_block" : "Reduce_scatter_block", b, c, 0, lt_size,
              lt_rank * c);
    check_vec("Reduce_scatter_block past the block", b + 3 * c, 1, -1, 0, 0);

    /* Reduce_scatter with counts 1, 2, 3, 1, ... */
    free(s), free(b);
    for (r = 0; r < lt_size; r++) {
        counts[r] = cnt(r);
        total += counts[r];
    }
    s = vec_alloc(total), b = vec_alloc(total + 1);
    vec_fill(s, total, lt_rank, 0);
    if (nb) {
        MPI_OK(MPI_Ireduce_scatter(s, b, counts, VEC.t, MPI_SUM, MPI_COMM_WORLD, &rq));
        wait_mode(&rq, nb - 1);
    } else {
        MPI_OK(MPI_Reduce_scatter(s, b, counts, VEC.t, MPI_SUM, MPI_COMM_WORLD));
    }
    {
        int before = 0;
        for (r = 0; r < lt_rank; r++)
            before += counts[r];
        check_vec(nb ? "Ireduce_scatter" : "Reduce_scatter", b, counts[lt_rank], 0, lt_size,
                  before);
        check_vec("Reduce_scatter past the block", b + 3 * counts[lt_rank], 1, -1, 0, 0);
    }
    free(s), free(b);

    /* Scan and Exscan over 3 instances. */
    s = vec_alloc(3), b = vec_alloc(3);
    vec_fill(s, 3, lt_rank, 0);
    if (nb) {
        MPI_OK(MPI_Iscan(s, b, 3, VEC.t, MPI_SUM, MPI_COMM_WORLD, &rq));
        wait_mode(&rq, nb - 1);
    } else {
        MPI_OK(MPI_Scan(s, b, 3, VEC.t, MPI_SUM, MPI_COMM_WORLD));
    }
    check_vec(nb ? "Iscan" : "Scan", b, 3, 0, lt_rank + 1, 0);
    free(b);
    b = vec_alloc(3);
    if (nb) {
        MPI_OK(MPI_Iexscan(s, b, 3, VEC.t, MPI_SUM, MPI_COMM_WORLD, &rq));
        wait_mode(&rq, nb - 1);
    } else {
        MPI_OK(MPI_Exscan(s, b, 3, VEC.t, MPI_SUM, MPI_COMM_WORLD));
    }
    if (lt_rank > 0)
        check_vec(nb ? "Iexscan" : "Exscan", b, 3, 0, lt_rank, 0);
    else
        /* Undefined at rank 0, but the holes must stay untouched. */
        CHECK(b[1] == -999 && b[4] == -999, "Exscan wrote a hole at rank 0");

    /* Ireduce and Iallreduce (the blocking forms are covered elsewhere). */
    if (nb) {
        free(b);
        b = vec_alloc(3);
        MPI_OK(MPI_Iallreduce(s, b, 3, VEC.t, MPI_SUM, MPI_COMM_WORLD, &rq));
        wait_mode(&rq, nb - 1);
        check_vec("Iallreduce", b, 3, 0, lt_size, 0);
        free(b);
        b = vec_alloc(3);
        MPI_OK(MPI_Ireduce(s, b, 3, VEC.t, MPI_SUM, lt_size - 1, MPI_COMM_WORLD, &rq));
        wait_mode(&rq, nb - 1);
        if (lt_rank == lt_size - 1)
            check_vec("Ireduce", b, 3, 0, lt_size, 0);
        else
            check_vec("Ireduce at a non-root", b, 3, -1, 0, 0);
    }
    free(s), free(b), free(counts);
}

/* ---- neighbour collectives on a periodic ring ------------------------- */

static void neighbors(const ty_t *T, int nb)
{
    MPI_Comm ring;
    int dims[1] = {lt_size}, periods[1] = {1}, k, exp[4];
    int src[2] = {lt_prev(), lt_next()}; /* cart order: -1 then +1 */
    char *s = alloc(T, 4), *b = alloc(T, 4);
    MPI_Request rq;

    MPI_OK(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring));
    /* Allgather: one instance pair to both neighbours. */
    put(s, T, 0, tagof(lt_rank, 0));
    put(s, T, 1, tagof(lt_rank, 1));
    if (nb) {
        MPI_OK(MPI_Ineighbor_allgather(s, 2, T->t, b, 2, T->t, ring, &rq));
        wait_mode(&rq, nb - 1);
    } else {
        MPI_OK(MPI_Neighbor_allgather(s, 2, T->t, b, 2, T->t, ring));
    }
    for (k = 0; k < 4; k++)
        exp[k] = tagof(src[k / 2], k % 2);
    check(nb ? "Ineighbor_allgather" : "Neighbor_allgather", b, T, 4, exp);

    /* Alltoall: block j (2 instances) goes to neighbour j. */
    free(b);
    b = alloc(T, 4);
    for (k = 0; k < 4; k++)
        put(s, T, k, tagof(lt_rank, 8 + k));
    if (nb) {
        MPI_OK(MPI_Ineighbor_alltoall(s, 2, T->t, b, 2, T->t, ring, &rq));
        wait_mode(&rq, nb - 1);
    } else {
        MPI_OK(MPI_Neighbor_alltoall(s, 2, T->t, b, 2, T->t, ring));
    }
    /* From the previous rank (its +1 neighbour block, 1) and the next
     * rank (its -1 neighbour block, 0). With one or two ranks both
     * neighbours are the same process, in that order. */
    for (k = 0; k < 2; k++) {
        exp[k] = tagof(src[0], 8 + 2 + k);
        exp[2 + k] = tagof(src[1], 8 + k);
    }
    check(nb ? "Ineighbor_alltoall" : "Neighbor_alltoall", b, T, 4, exp);
    MPI_OK(MPI_Comm_free(&ring));
    free(s), free(b);
}

/* ---- persistent point-to-point and completion reporting ------------------ */

static void persistent(void)
{
    int n = 3, round, k, exp[3];
    char *s = alloc(&VEC, n), *b = alloc(&VEC, n);
    MPI_Request rq[2];
    MPI_Status sts[2];
    MPI_OK(MPI_Recv_init(b, n, VEC.t, lt_prev(), 5, MPI_COMM_WORLD, &rq[0]));
    MPI_OK(MPI_Send_init(s, n, VEC.t, lt_next(), 5, MPI_COMM_WORLD, &rq[1]));
    for (round = 0; round < 4; round++) {
        memset(b, SENT, (size_t)n * VEC.extent);
        for (k = 0; k < n; k++)
            put(s, &VEC, k, tagof(lt_rank, round * 4 + k));
        if (round % 2) {
            MPI_OK(MPI_Start(&rq[0]));
            MPI_OK(MPI_Start(&rq[1]));
        } else {
            MPI_OK(MPI_Startall(2, rq));
        }
        if (round == 3) {
            /* Complete according to Request_get_status means unpacked. */
            int flag = 0;
            while (!flag)
                MPI_OK(MPI_Request_get_status(rq[0], &flag, MPI_STATUS_IGNORE));
            for (k = 0; k < n; k++)
                exp[k] = tagof(lt_prev(), round * 4 + k);
            check("persistent receive after Request_get_status", b, &VEC, n, exp);
        }
        MPI_OK(MPI_Waitall(2, rq, sts));
        for (k = 0; k < n; k++)
            exp[k] = tagof(lt_prev(), round * 4 + k);
        check("persistent receive", b, &VEC, n, exp);
    }
    MPI_OK(MPI_Request_free(&rq[0]));
    MPI_OK(MPI_Request_free(&rq[1]));
    free(s), free(b);
}

static void get_status(void)
{
    int n = 2, k, flag = 0, exp[2];
    char *s = alloc(&RS, n), *b = alloc(&RS, n);
    MPI_Request rq[2];
    MPI_Status sts[2];
    for (k = 0; k < n; k++)
        put(s, &RS, k, tagof(lt_rank, 40 + k));
    MPI_OK(MPI_Irecv(b, n, RS.t, lt_prev(), 6, MPI_COMM_WORLD, &rq[0]));
    MPI_OK(MPI_Isend(s, n, RS.t, lt_next(), 6, MPI_COMM_WORLD, &rq[1]));
    while (!flag)
        MPI_OK(MPI_Request_get_status(rq[0], &flag, MPI_STATUS_IGNORE));
    for (k = 0; k < n; k++)
        exp[k] = tagof(lt_prev(), 40 + k);
    check("Irecv after Request_get_status", b, &RS, n, exp);
    MPI_OK(MPI_Waitall(2, rq, sts));
    check("Irecv after Wait", b, &RS, n, exp);

    /* The same for a nonblocking collective. */
    free(b);
    b = alloc(&RS, n);
    if (lt_rank == 0)
        memcpy(b, s, (size_t)n * RS.extent);
    MPI_OK(MPI_Ibcast(b, n, RS.t, 0, MPI_COMM_WORLD, &rq[0]));
    flag = 0;
    while (!flag)
        MPI_OK(MPI_Request_get_status(rq[0], &flag, MPI_STATUS_IGNORE));
    for (k = 0; k < n; k++)
        exp[k] = tagof(0, 40 + k);
    check("Ibcast after Request_get_status", b, &RS, n, exp);
    MPI_OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
    check("Ibcast after Wait", b, &RS, n, exp);
    free(s), free(b);
}

/* ---- the large-count constructors (looked up: MPICH 4.0 lacks them) ------ */

typedef int (*vector_c_fn)(MPI_Count, MPI_Count, MPI_Count, MPI_Datatype, MPI_Datatype *);
typedef int (*struct_c_fn)(MPI_Count, const MPI_Count[], const MPI_Count[],
                           const MPI_Datatype[], MPI_Datatype *);
typedef int (*resized_c_fn)(MPI_Datatype, MPI_Count, MPI_Count, MPI_Datatype *);
typedef int (*indexed_c_fn)(MPI_Count, const MPI_Count[], const MPI_Count[], MPI_Datatype,
                            MPI_Datatype *);
typedef int (*contig_c_fn)(MPI_Count, MPI_Datatype, MPI_Datatype *);
typedef int (*subarray_c_fn)(int, const MPI_Count[], const MPI_Count[], const MPI_Count[], int,
                             MPI_Datatype, MPI_Datatype *);

static void same_type(const char *what, MPI_Datatype a, MPI_Datatype b)
{
    MPI_Aint lba, exa, lbb, exb;
    int sa, sb;
    MPI_OK(MPI_Type_get_extent(a, &lba, &exa));
    MPI_OK(MPI_Type_get_extent(b, &lbb, &exb));
    MPI_OK(MPI_Type_size(a, &sa));
    MPI_OK(MPI_Type_size(b, &sb));
    CHECK(lba == lbb && exa == exb && sa == sb,
          "%s: lb/extent/size %ld/%ld/%d, the int form gives %ld/%ld/%d", what, (long)lba,
          (long)exa, sa, (long)lbb, (long)exb, sb);
}

static void large_count_ctors(void)
{
    vector_c_fn vec_c = (vector_c_fn)dlsym(RTLD_DEFAULT, "MPI_Type_vector_c");
    struct_c_fn struct_c = (struct_c_fn)dlsym(RTLD_DEFAULT, "MPI_Type_create_struct_c");
    resized_c_fn resized_c = (resized_c_fn)dlsym(RTLD_DEFAULT, "MPI_Type_create_resized_c");
    indexed_c_fn indexed_c = (indexed_c_fn)dlsym(RTLD_DEFAULT, "MPI_Type_indexed_c");
    contig_c_fn contig_c = (contig_c_fn)dlsym(RTLD_DEFAULT, "MPI_Type_contiguous_c");
    subarray_c_fn sub_c = (subarray_c_fn)dlsym(RTLD_DEFAULT, "MPI_Type_create_subarray_c");
    MPI_Datatype t, u, s;
    MPI_Count bl[2] = {1, 1}, d[2] = {0, 8}, ibl[2] = {2, 1}, id[2] = {0, 5};
    MPI_Count sizes[2] = {4, 5}, subs[2] = {2, 3}, starts[2] = {1, 2};
    int ibl_i[2] = {2, 1}, id_i[2] = {0, 5};
    int sizes_i[2] = {4, 5}, subs_i[2] = {2, 3}, starts_i[2] = {1, 2};
    MPI_Datatype ts[2] = {MPI_INT, MPI_DOUBLE};
    int k, exp[3];
    char *sb, *rb;

    if (!vec_c || !struct_c || !resized_c || !indexed_c || !contig_c || !sub_c) {
        CHECK(lt_running_on_mpich(), "the _c datatype constructors are missing");
        return;
    }
    /* A vector built with the _c form communicates like VEC. */
    MPI_OK(vec_c(2, 1, 2, MPI_INT, &t));
    MPI_OK(MPI_Type_commit(&t));
    same_type("Type_vector_c", t, VEC.t);
    sb = alloc(&VEC, 3), rb = alloc(&VEC, 3);
    for (k = 0; k < 3; k++)
        put(sb, &VEC, k, tagof(lt_rank, 50 + k));
    MPI_OK(MPI_Sendrecv(sb, 3, t, lt_next(), 7, rb, 3, t, lt_prev(), 7, MPI_COMM_WORLD,
                        MPI_STATUS_IGNORE));
    for (k = 0; k < 3; k++)
        exp[k] = tagof(lt_prev(), 50 + k);
    check("Type_vector_c in Sendrecv", rb, &VEC, 3, exp);
    free(sb), free(rb);
    MPI_OK(MPI_Type_free(&t));

    MPI_OK(struct_c(2, bl, d, ts, &s));
    MPI_OK(resized_c(s, 0, 24, &t));
    same_type("Type_create_struct_c + resized_c", t, RS.t);
    MPI_OK(MPI_Type_free(&t));
    MPI_OK(MPI_Type_free(&s));

    MPI_OK(indexed_c(2, ibl, id, MPI_SHORT, &t));
    MPI_OK(MPI_Type_indexed(2, ibl_i, id_i, MPI_SHORT, &u));
    same_type("Type_indexed_c", t, u);
    MPI_OK(MPI_Type_free(&t));
    MPI_OK(MPI_Type_free(&u));

    MPI_OK(contig_c(5, MPI_DOUBLE, &t));
    MPI_OK(MPI_Type_contiguous(5, MPI_DOUBLE, &u));
    same_type("Type_contiguous_c", t, u);
    MPI_OK(MPI_Type_free(&t));
    MPI_OK(MPI_Type_free(&u));

    MPI_OK(sub_c(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &t));
    MPI_OK(MPI_Type_create_subarray(2, sizes_i, subs_i, starts_i, MPI_ORDER_C, MPI_INT, &u));
    same_type("Type_create_subarray_c", t, u);
    MPI_OK(MPI_Type_free(&t));
    MPI_OK(MPI_Type_free(&u));
}

int main(int argc, char **argv)
{
    const ty_t *types[2];
    int ti, nb, roots[3], ri;

    lt_init("datatype_coll", &argc, &argv);
    make_types();
    types[0] = &VEC, types[1] = &RS;
    roots[0] = 0, roots[1] = lt_size - 1, roots[2] = lt_size / 2;

    for (ti = 0; ti < 2; ti++) {
        const ty_t *T = types[ti];
        for (nb = 0; nb < 3; nb++) {
            for (ri = 0; ri < 3; ri++) {
                bcast(T, roots[ri], nb);
                gather(T, roots[ri], nb);
                scatter(T, roots[ri], nb);
                gatherv(T, roots[ri], nb);
                scatterv(T, roots[ri], nb);
            }
            allgather(T, nb);
            alltoall(T, nb);
            allgatherv(T, nb);
            alltoallv(T, nb);
            neighbors(T, nb);
        }
    }
    for (nb = 0; nb < 3; nb++) {
        alltoallw(nb);
        /* MPICH refuses MPI_SUM on a vector of MPI_INT in these calls. */
        if (!lt_running_on_mpich())
            reductions(nb);
    }
    persistent();
    get_status();
    large_count_ctors();

    MPI_OK(MPI_Type_free(&VEC.t));
    MPI_OK(MPI_Type_free(&RS.t));
    MPI_OK(MPI_Type_free(&CONT2.t));
    return lt_finish();
}
