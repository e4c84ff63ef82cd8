/* Every collective beyond barrier/bcast/reduce/allreduce, blocking and
 * nonblocking: gather(v), scatter(v), allgather(v), alltoall(v,w),
 * reduce_scatter(_block), scan, exscan, with MPI_IN_PLACE, every root,
 * zero counts, v-variant gaps left untouched, several nonblocking
 * collectives outstanding at once, and argument errors. Expected values
 * come from rank formulas computed locally. Works at any size. */
#include "lt.h"

#define SENT (-7777) /* sentinel: must survive where MPI writes nothing */

static int blocking_mode; /* 1: MPI_Xxx, 0: MPI_Ixxx + MPI_Wait */

static void wait_req(MPI_Request *r)
{
    MPI_OK(MPI_Wait(r, MPI_STATUS_IGNORE));
    CHECK(*r == MPI_REQUEST_NULL, "request not nulled by MPI_Wait");
}

/* Call the blocking form, or the nonblocking form followed by MPI_Wait. */
#define COLL(name, ...)                                                       \
    do {                                                                      \
        if (blocking_mode) {                                                  \
            MPI_OK(MPI_##name(__VA_ARGS__));                                  \
        } else {                                                              \
            MPI_Request r_ = MPI_REQUEST_NULL;                                \
            MPI_OK(MPI_I##name(__VA_ARGS__, &r_));                            \
            wait_req(&r_);                                                    \
        }                                                                     \
    } while (0)
/* MPI_Ialltoall etc. are spelled with a lower-case letter after the I. */
#define MPI_IGather MPI_Igather
#define MPI_IGatherv MPI_Igatherv
#define MPI_IScatter MPI_Iscatter
#define MPI_IScatterv MPI_Iscatterv
#define MPI_IAllgather MPI_Iallgather
#define MPI_IAllgatherv MPI_Iallgatherv
#define MPI_IAlltoall MPI_Ialltoall
#define MPI_IAlltoallv MPI_Ialltoallv
#define MPI_IAlltoallw MPI_Ialltoallw
#define MPI_IReduce_scatter MPI_Ireduce_scatter
#define MPI_IReduce_scatter_block MPI_Ireduce_scatter_block
#define MPI_IScan MPI_Iscan
#define MPI_IExscan MPI_Iexscan
#define MPI_IBcast MPI_Ibcast
#define MPI_IReduce MPI_Ireduce
#define MPI_IAllreduce MPI_Iallreduce

static const int counts_to_try[] = {0, 1, 5, 300};
#define NCOUNTS 4

/* Element i of rank r's contribution (root/peer folded in by callers). */
static int val(int r, int i) { return r * 100000 + i * 7 + 3; }

/* A layout of `lt_size` blocks with counts `cnt[r]`, placed in reverse rank
 * order with a 2-element gap before each block; returns the extent. */
static int gap_layout(const int *cnt, int *displs)
{
    int r, at = 0;
    for (r = lt_size - 1; r >= 0; r--) {
        at += 2;
        displs[r] = at;
        at += cnt[r];
    }
    return at + 1;
}

/* ---- gather / gatherv -------------------------------------------------- */

static void test_gather(void)
{
    int root, c, i, r, inplace;
    for (root = 0; root < lt_size; root++)
        for (c = 0; c < NCOUNTS; c++)
            for (inplace = 0; inplace < 2; inplace++) {
                int n = counts_to_try[c];
                int *sb = malloc(sizeof(int) * (n + 1));
                int *rb = malloc(sizeof(int) * (n * lt_size + 1));
                const void *sp = sb;
                for (i = 0; i < n; i++)
                    sb[i] = val(lt_rank, i) + root;
                for (i = 0; i < n * lt_size + 1; i++)
                    rb[i] = SENT;
                if (inplace && lt_rank == root) {
                    sp = MPI_IN_PLACE;
                    for (i = 0; i < n; i++)
                        rb[root * n + i] = val(root, i) + root;
                }
                COLL(Gather, sp, n, MPI_INT, rb, n, MPI_INT, root, MPI_COMM_WORLD);
                for (r = 0; r < lt_size && lt_rank == root; r++)
                    for (i = 0; i < n; i++)
                        CHECK(rb[r * n + i] == val(r, i) + root,
                              "Gather root %d n %d inplace %d: [%d][%d]=%d", root, n, inplace,
                              r, i, rb[r * n + i]);
                if (lt_rank != root)
                    for (i = 0; i < n * lt_size; i++)
                        CHECK(rb[i] == SENT, "Gather wrote a non-root's recvbuf");
                CHECK(rb[n * lt_size] == SENT, "Gather wrote past the end");
                free(sb);
                free(rb);
            }
}

static void test_gatherv(void)
{
    int root, i, r, inplace;
    int *cnt = malloc(sizeof(int) * lt_size), *dis = malloc(sizeof(int) * lt_size);
    int ext, *rb, sb[8];
    for (r = 0; r < lt_size; r++)
        cnt[r] = (r * 5 + 1) % 4; /* 1,2,3,0,1,... */
    ext = gap_layout(cnt, dis);
    rb = malloc(sizeof(int) * ext);
    for (root = 0; root < lt_size; root++)
        for (inplace = 0; inplace < 2; inplace++) {
            const void *sp = sb;
            for (i = 0; i < cnt[lt_rank]; i++)
                sb[i] = val(lt_rank, i) - root;
            for (i = 0; i < ext; i++)
                rb[i] = SENT;
            if (inplace && lt_rank == root) {
                sp = MPI_IN_PLACE;
                for (i = 0; i < cnt[root]; i++)
                    rb[dis[root] + i] = val(root, i) - root;
            }
            COLL(Gatherv, sp, cnt[lt_rank], MPI_INT, rb, cnt, dis, MPI_INT, root,
                 MPI_COMM_WORLD);
            if (lt_rank == root) {
                int *want = malloc(sizeof(int) * ext);
                for (i = 0; i < ext; i++)
                    want[i] = SENT;
                for (r = 0; r < lt_size; r++)
                    for (i = 0; i < cnt[r]; i++)
                        want[dis[r] + i] = val(r, i) - root;
                for (i = 0; i < ext; i++)
                    CHECK(rb[i] == want[i], "Gatherv root %d inplace %d: [%d]=%d want %d", root,
                          inplace, i, rb[i], want[i]);
                free(want);
            } else {
                for (i = 0; i < ext; i++)
                    CHECK(rb[i] == SENT, "Gatherv wrote a non-root's recvbuf");
            }
        }
    free(rb);
    free(cnt);
    free(dis);
}

/* ---- scatter / scatterv ------------------------------------------------ */

static void test_scatter(void)
{
    int root, c, i, inplace;
    for (root = 0; root < lt_size; root++)
        for (c = 0; c < NCOUNTS; c++)
            for (inplace = 0; inplace < 2; inplace++) {
                int n = counts_to_try[c];
                double *sb = malloc(sizeof(double) * (n * lt_size + 1));
                double *rb = malloc(sizeof(double) * (n + 1));
                void *rp = rb;
                int r;
                for (r = 0; r < lt_size; r++)
                    for (i = 0; i < n; i++)
                        sb[r * n + i] = lt_rank == root ? val(r, i) * 0.5 + root : -1.0;
                for (i = 0; i < n + 1; i++)
                    rb[i] = SENT;
                if (inplace && lt_rank == root)
                    rp = MPI_IN_PLACE;
                COLL(Scatter, sb, n, MPI_DOUBLE, rp, n, MPI_DOUBLE, root, MPI_COMM_WORLD);
                if (rp == MPI_IN_PLACE) {
                    for (i = 0; i < n; i++)
                        CHECK(rb[i] == SENT, "Scatter in place wrote the unused recvbuf");
                } else {
                    for (i = 0; i < n; i++)
                        CHECK(rb[i] == val(lt_rank, i) * 0.5 + root,
                              "Scatter root %d n %d: [%d]=%g", root, n, i, rb[i]);
                }
                CHECK(rb[n] == SENT, "Scatter wrote past the end");
                for (r = 0; r < lt_size && lt_rank == root; r++)
                    for (i = 0; i < n; i++)
                        CHECK(sb[r * n + i] == val(r, i) * 0.5 + root,
                              "Scatter changed the root's sendbuf");
                free(sb);
                free(rb);
            }
}

static void test_scatterv(void)
{
    int root, i, r, inplace;
    int *cnt = malloc(sizeof(int) * lt_size), *dis = malloc(sizeof(int) * lt_size);
    int ext, *sb, rb[8];
    for (r = 0; r < lt_size; r++)
        cnt[r] = (r * 3 + 2) % 5; /* 2,0,3,1,4,... */
    ext = gap_layout(cnt, dis);
    sb = malloc(sizeof(int) * ext);
    for (root = 0; root < lt_size; root++)
        for (inplace = 0; inplace < 2; inplace++) {
            void *rp = rb;
            for (i = 0; i < ext; i++)
                sb[i] = SENT;
            for (r = 0; r < lt_size; r++)
                for (i = 0; i < cnt[r]; i++)
                    sb[dis[r] + i] = val(r, i) + 11 * root;
            for (i = 0; i < 8; i++)
                rb[i] = SENT;
            if (inplace && lt_rank == root)
                rp = MPI_IN_PLACE;
            COLL(Scatterv, sb, cnt, dis, MPI_INT, rp, cnt[lt_rank], MPI_INT, root,
                 MPI_COMM_WORLD);
            for (i = 0; i < 8; i++) {
                int want = (rp != MPI_IN_PLACE && i < cnt[lt_rank]) ? val(lt_rank, i) + 11 * root
                                                                    : SENT;
                CHECK(rb[i] == want, "Scatterv root %d inplace %d: [%d]=%d want %d", root,
                      inplace, i, rb[i], want);
            }
        }
    free(sb);
    free(cnt);
    free(dis);
}

/* ---- allgather / allgatherv -------------------------------------------- */

static void test_allgather(void)
{
    int c, i, r, inplace;
    for (c = 0; c < NCOUNTS; c++)
        for (inplace = 0; inplace < 2; inplace++) {
            int n = counts_to_try[c];
            long *sb = malloc(sizeof(long) * (n + 1));
            long *rb = malloc(sizeof(long) * (n * lt_size + 1));
            const void *sp = sb;
            for (i = 0; i < n; i++)
                sb[i] = val(lt_rank, i) * 3L;
            for (i = 0; i < n * lt_size + 1; i++)
                rb[i] = SENT;
            if (inplace) {
                sp = MPI_IN_PLACE;
                for (i = 0; i < n; i++)
                    rb[lt_rank * n + i] = val(lt_rank, i) * 3L;
            }
            COLL(Allgather, sp, n, MPI_LONG, rb, n, MPI_LONG, MPI_COMM_WORLD);
            for (r = 0; r < lt_size; r++)
                for (i = 0; i < n; i++)
                    CHECK(rb[r * n + i] == val(r, i) * 3L, "Allgather n %d inplace %d: [%d][%d]",
                          n, inplace, r, i);
            CHECK(rb[n * lt_size] == SENT, "Allgather wrote past the end");
            free(sb);
            free(rb);
        }
}

static void test_allgatherv(void)
{
    int i, r, inplace, shift;
    int *cnt = malloc(sizeof(int) * lt_size), *dis = malloc(sizeof(int) * lt_size);
    for (shift = 0; shift < 3; shift++)
        for (inplace = 0; inplace < 2; inplace++) {
            int ext, *rb, *want, sb[8];
            const void *sp = sb;
            for (r = 0; r < lt_size; r++)
                cnt[r] = (r + shift) % 3 == 0 ? 0 : (r * 2 + shift) % 7;
            ext = gap_layout(cnt, dis);
            rb = malloc(sizeof(int) * ext);
            want = malloc(sizeof(int) * ext);
            for (i = 0; i < ext; i++)
                rb[i] = want[i] = SENT;
            for (r = 0; r < lt_size; r++)
                for (i = 0; i < cnt[r]; i++)
                    want[dis[r] + i] = val(r, i) ^ shift;
            for (i = 0; i < cnt[lt_rank]; i++)
                sb[i] = val(lt_rank, i) ^ shift;
            if (inplace) {
                sp = MPI_IN_PLACE;
                for (i = 0; i < cnt[lt_rank]; i++)
                    rb[dis[lt_rank] + i] = sb[i];
            }
            COLL(Allgatherv, sp, cnt[lt_rank], MPI_INT, rb, cnt, dis, MPI_INT, MPI_COMM_WORLD);
            /* MPICH 4.0.2 ignores displs on a one-rank communicator. */
            for (i = 0; i < ext && !(lt_size == 1 && !inplace && lt_running_on_mpich()); i++)
                CHECK(rb[i] == want[i], "Allgatherv shift %d inplace %d: [%d]=%d want %d", shift,
                      inplace, i, rb[i], want[i]);
            free(rb);
            free(want);
        }
    free(cnt);
    free(dis);
}

/* ---- alltoall / alltoallv / alltoallw ---------------------------------- */

/* Element i of the block that rank s sends to rank d. */
static int a2a(int s, int d, int i) { return s * 1000000 + d * 1000 + i; }

static void test_alltoall(void)
{
    int c, i, p, inplace;
    for (c = 0; c < NCOUNTS; c++)
        for (inplace = 0; inplace < 2; inplace++) {
            int n = counts_to_try[c];
            int *sb = malloc(sizeof(int) * (n * lt_size + 1));
            int *rb = malloc(sizeof(int) * (n * lt_size + 1));
            const void *sp = sb;
            for (p = 0; p < lt_size; p++)
                for (i = 0; i < n; i++)
                    sb[p * n + i] = a2a(lt_rank, p, i);
            for (i = 0; i < n * lt_size + 1; i++)
                rb[i] = SENT;
            if (inplace) {
                sp = MPI_IN_PLACE;
                memcpy(rb, sb, sizeof(int) * n * lt_size);
            }
            COLL(Alltoall, sp, n, MPI_INT, rb, n, MPI_INT, MPI_COMM_WORLD);
            for (p = 0; p < lt_size; p++)
                for (i = 0; i < n; i++)
                    CHECK(rb[p * n + i] == a2a(p, lt_rank, i),
                          "Alltoall n %d inplace %d: from %d [%d]=%d", n, inplace, p, i,
                          rb[p * n + i]);
            CHECK(rb[n * lt_size] == SENT, "Alltoall wrote past the end");
            free(sb);
            free(rb);
        }
}

/* Elements rank s sends to rank d in the v/w tests; symmetric in s and d
 * so each side knows the other's count. */
static int vcount(int s, int d) { return (s + d) % 4 == 3 ? 0 : (s * d + s + d) % 5 + 1; }

static void test_alltoallv(void)
{
    int i, p, inplace;
    int *scnt = malloc(sizeof(int) * lt_size), *sdis = malloc(sizeof(int) * lt_size);
    int *rcnt = malloc(sizeof(int) * lt_size), *rdis = malloc(sizeof(int) * lt_size);
    int sext, rext, *sb, *rb, *want;
    for (p = 0; p < lt_size; p++) {
        scnt[p] = vcount(lt_rank, p);
        rcnt[p] = vcount(p, lt_rank);
    }
    sext = gap_layout(scnt, sdis);
    rext = gap_layout(rcnt, rdis);
    sb = malloc(sizeof(int) * sext);
    rb = malloc(sizeof(int) * rext);
    want = malloc(sizeof(int) * rext);
    for (inplace = 0; inplace < 2; inplace++) {
        const void *sp = sb;
        for (i = 0; i < sext; i++)
            sb[i] = SENT;
        for (p = 0; p < lt_size; p++)
            for (i = 0; i < scnt[p]; i++)
                sb[sdis[p] + i] = a2a(lt_rank, p, i);
        for (i = 0; i < rext; i++)
            rb[i] = want[i] = SENT;
        for (p = 0; p < lt_size; p++)
            for (i = 0; i < rcnt[p]; i++)
                want[rdis[p] + i] = a2a(p, lt_rank, i);
        if (inplace) {
            /* The send data is the receive buffer, laid out by rcnt/rdis. */
            sp = MPI_IN_PLACE;
            for (p = 0; p < lt_size; p++)
                for (i = 0; i < rcnt[p]; i++)
                    rb[rdis[p] + i] = a2a(lt_rank, p, i);
        }
        COLL(Alltoallv, sp, scnt, sdis, MPI_INT, rb, rcnt, rdis, MPI_INT, MPI_COMM_WORLD);
        for (i = 0; i < rext; i++)
            CHECK(rb[i] == want[i], "Alltoallv inplace %d: [%d]=%d want %d", inplace, i, rb[i],
                  want[i]);
    }
    free(sb);
    free(rb);
    free(want);
    free(scnt);
    free(sdis);
    free(rcnt);
    free(rdis);
}

/* Alltoallw: the block between s and d is ints when s+d is even, doubles
 * otherwise; displacements are in bytes, 8-aligned, with gaps. */
static void test_alltoallw(void)
{
    int i, p, inplace;
    size_t n = (size_t)lt_size;
    int *scnt = malloc(sizeof(int) * n), *sdis = malloc(sizeof(int) * n);
    int *rcnt = malloc(sizeof(int) * n), *rdis = malloc(sizeof(int) * n);
    MPI_Datatype *st = malloc(sizeof(MPI_Datatype) * n), *rt = malloc(sizeof(MPI_Datatype) * n);
    int sbytes = 0, rbytes = 0;
    unsigned char *sb, *rb, *want;
    for (p = 0; p < lt_size; p++) {
        int even = (lt_rank + p) % 2 == 0;
        scnt[p] = rcnt[p] = vcount(lt_rank, p); /* vcount is symmetric */
        st[p] = rt[p] = even ? MPI_INT : MPI_DOUBLE;
    }
    for (p = lt_size - 1; p >= 0; p--) { /* reverse order, 8-byte gap */
        sbytes += 8;
        sdis[p] = sbytes;
        sbytes += 8 * scnt[p];
        rbytes += 16;
        rdis[p] = rbytes;
        rbytes += 8 * rcnt[p];
    }
    sbytes += 8;
    rbytes += 8;
    sb = malloc(sbytes);
    rb = malloc(rbytes);
    want = malloc(rbytes);
    /* MPICH 4.0.2's in-place Alltoallw corrupts data and its nonblocking
     * form asserts in the unpack code, so only Lanai runs that case. */
    for (inplace = 0; inplace < (lt_running_on_mpich() ? 1 : 2); inplace++) {
        const void *sp = sb;
        unsigned char *fill = inplace ? rb : sb;
        int *fdis = inplace ? rdis : sdis;
        memset(sb, 0xAB, sbytes);
        memset(rb, 0xCD, rbytes);
        memset(want, 0xCD, rbytes);
        for (p = 0; p < lt_size; p++)
            for (i = 0; i < vcount(p, lt_rank); i++) {
                if (rt[p] == MPI_INT) {
                    int v = a2a(p, lt_rank, i);
                    memcpy(want + rdis[p] + 4 * i, &v, 4);
                } else {
                    double v = a2a(p, lt_rank, i) + 0.25;
                    memcpy(want + rdis[p] + 8 * i, &v, 8);
                }
            }
        for (p = 0; p < lt_size; p++)
            for (i = 0; i < scnt[p]; i++) {
                if (st[p] == MPI_INT) {
                    int v = a2a(lt_rank, p, i);
                    memcpy(fill + fdis[p] + 4 * i, &v, 4);
                } else {
                    double v = a2a(lt_rank, p, i) + 0.25;
                    memcpy(fill + fdis[p] + 8 * i, &v, 8);
                }
            }
        if (inplace)
            sp = MPI_IN_PLACE;
        COLL(Alltoallw, sp, scnt, sdis, st, rb, rcnt, rdis, rt, MPI_COMM_WORLD);
        for (i = 0; i < rbytes; i++)
            if (rb[i] != want[i]) {
                CHECK(0, "Alltoallw inplace %d: byte %d is 0x%02x, want 0x%02x", inplace, i,
                      rb[i], want[i]);
                break;
            }
    }
    free(sb);
    free(rb);
    free(want);
    free(scnt);
    free(sdis);
    free(rcnt);
    free(rdis);
    free(st);
    free(rt);
}

/* ---- reduce_scatter(_block) -------------------------------------------- */

/* Element k of rank r's input vector. */
static int rsv(int r, int k) { return (r + 1) * 3 + k % 11 - 4; }

static void test_reduce_scatter_block(void)
{
    int c, i, r, inplace;
    for (c = 0; c < NCOUNTS; c++)
        for (inplace = 0; inplace < 2; inplace++) {
            int n = counts_to_try[c];
            int *sb = malloc(sizeof(int) * (n * lt_size + 1));
            int *rb = malloc(sizeof(int) * (n * lt_size + 1));
            const void *sp = sb;
            for (i = 0; i < n * lt_size; i++)
                sb[i] = rsv(lt_rank, i);
            for (i = 0; i < n * lt_size + 1; i++)
                rb[i] = SENT;
            if (inplace) {
                sp = MPI_IN_PLACE;
                memcpy(rb, sb, sizeof(int) * n * lt_size);
            }
            COLL(Reduce_scatter_block, sp, rb, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            for (i = 0; i < n; i++) {
                int want = 0, k = lt_rank * n + i;
                for (r = 0; r < lt_size; r++)
                    want += rsv(r, k);
                CHECK(rb[i] == want, "Reduce_scatter_block n %d inplace %d: [%d]=%d want %d", n,
                      inplace, i, rb[i], want);
            }
            if (!inplace)
                for (i = n; i < n * lt_size + 1; i++)
                    CHECK(rb[i] == SENT, "Reduce_scatter_block wrote past its block");
            free(sb);
            free(rb);
        }
    /* MAX on doubles, exact values so the check is bitwise. */
    {
        int n = 3;
        double *sb = malloc(sizeof(double) * n * lt_size), rb[3];
        for (i = 0; i < n * lt_size; i++)
            sb[i] = (double)((lt_rank * 37 + i * 11) % 17) + 0.5;
        COLL(Reduce_scatter_block, sb, rb, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        for (i = 0; i < n; i++) {
            double want = -1;
            int k = lt_rank * n + i;
            for (r = 0; r < lt_size; r++) {
                double v = (double)((r * 37 + k * 11) % 17) + 0.5;
                if (v > want)
                    want = v;
            }
            CHECK(rb[i] == want, "Reduce_scatter_block MAX: [%d]=%g want %g", i, rb[i], want);
        }
        free(sb);
    }
}

static void test_reduce_scatter(void)
{
    int i, r, inplace, shift;
    int *cnt = malloc(sizeof(int) * lt_size);
    for (shift = 0; shift < 3; shift++)
        for (inplace = 0; inplace < 2; inplace++) {
            int total = 0, off = 0, *sb, *rb;
            const void *sp;
            for (r = 0; r < lt_size; r++) {
                cnt[r] = (r + shift) % 3 == 1 ? 0 : (r * 3 + shift) % 6 + 1;
                if (r < lt_rank)
                    off += cnt[r];
                total += cnt[r];
            }
            sb = malloc(sizeof(int) * (total + 1));
            rb = malloc(sizeof(int) * (total + 1));
            sp = sb;
            for (i = 0; i < total; i++)
                sb[i] = rsv(lt_rank, i) * (shift + 1);
            for (i = 0; i < total + 1; i++)
                rb[i] = SENT;
            if (inplace) {
                sp = MPI_IN_PLACE;
                memcpy(rb, sb, sizeof(int) * total);
            }
            COLL(Reduce_scatter, sp, rb, cnt, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            for (i = 0; i < cnt[lt_rank]; i++) {
                int want = 0;
                for (r = 0; r < lt_size; r++)
                    want += rsv(r, off + i) * (shift + 1);
                CHECK(rb[i] == want, "Reduce_scatter shift %d inplace %d: [%d]=%d want %d",
                      shift, inplace, i, rb[i], want);
            }
            if (!inplace)
                for (i = cnt[lt_rank]; i < total + 1; i++)
                    CHECK(rb[i] == SENT, "Reduce_scatter wrote past its block");
            free(sb);
            free(rb);
        }
    free(cnt);
}

/* ---- scan / exscan ----------------------------------------------------- */

static void test_scans(void)
{
    int c, i, r, inplace, ex;
    for (ex = 0; ex < 2; ex++)
        for (c = 0; c < NCOUNTS; c++)
            for (inplace = 0; inplace < 2; inplace++) {
                int n = counts_to_try[c];
                long *sb = malloc(sizeof(long) * (n + 1));
                long *rb = malloc(sizeof(long) * (n + 1));
                const void *sp = sb;
                for (i = 0; i < n; i++)
                    sb[i] = (long)(lt_rank + 1) * (i + 2);
                for (i = 0; i < n + 1; i++)
                    rb[i] = SENT;
                if (inplace) {
                    sp = MPI_IN_PLACE;
                    memcpy(rb, sb, sizeof(long) * n);
                }
                if (ex)
                    COLL(Exscan, sp, rb, n, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
                else
                    COLL(Scan, sp, rb, n, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
                for (i = 0; i < n; i++) {
                    long want = 0;
                    int upto = ex ? lt_rank - 1 : lt_rank;
                    for (r = 0; r <= upto; r++)
                        want += (long)(r + 1) * (i + 2);
                    if (ex && lt_rank == 0) /* unchanged: the input, or the sentinel */
                        want = inplace ? sb[i] : SENT;
                    CHECK(rb[i] == want, "%s n %d inplace %d: [%d]=%ld want %ld",
                          ex ? "Exscan" : "Scan", n, inplace, i, rb[i], want);
                }
                CHECK(rb[n] == SENT, "scan wrote past the end");
                free(sb);
                free(rb);
            }
    /* PROD and MAX on doubles with exact values: bitwise checks. */
    {
        double x = 1.0 + (lt_rank % 3) * 0.5, y, m, want = 1.0, wmax = 0;
        MPI_OK(MPI_Scan(&x, &y, 1, MPI_DOUBLE, MPI_PROD, MPI_COMM_WORLD));
        for (r = 0; r <= lt_rank; r++)
            want *= 1.0 + (r % 3) * 0.5;
        CHECK(y == want, "Scan PROD: %g want %g", y, want);
        x = (double)((lt_rank * 5) % 7);
        m = -1;
        MPI_OK(MPI_Exscan(&x, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
        for (r = 0; r < lt_rank; r++)
            if ((double)((r * 5) % 7) > wmax)
                wmax = (double)((r * 5) % 7);
        if (lt_rank > 0)
            CHECK(m == wmax, "Exscan MAX: %g want %g", m, wmax);
        else
            CHECK(m == -1, "Exscan wrote rank 0's recvbuf");
    }
}

/* ---- the nonblocking forms of the basic four --------------------------- */

static void test_basic_nonblocking(void)
{
    int root, i, n = 9;
    int b[9], s[9], t[9];
    MPI_Request r;
    MPI_OK(MPI_Ibarrier(MPI_COMM_WORLD, &r));
    wait_req(&r);
    for (root = 0; root < lt_size; root++) {
        for (i = 0; i < n; i++)
            b[i] = lt_rank == root ? val(root, i) : SENT;
        MPI_OK(MPI_Ibcast(b, n, MPI_INT, root, MPI_COMM_WORLD, &r));
        wait_req(&r);
        for (i = 0; i < n; i++)
            CHECK(b[i] == val(root, i), "Ibcast root %d: [%d]=%d", root, i, b[i]);
        for (i = 0; i < n; i++) {
            s[i] = lt_rank * 10 + i;
            t[i] = SENT;
        }
        MPI_OK(MPI_Ireduce(s, t, n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD, &r));
        wait_req(&r);
        for (i = 0; i < n; i++) {
            int want = lt_rank == root ? 10 * lt_size * (lt_size - 1) / 2 + lt_size * i : SENT;
            CHECK(t[i] == want, "Ireduce root %d: [%d]=%d want %d", root, i, t[i], want);
        }
    }
    for (i = 0; i < n; i++)
        t[i] = lt_rank + i;
    MPI_OK(MPI_Iallreduce(MPI_IN_PLACE, t, n, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &r));
    wait_req(&r);
    for (i = 0; i < n; i++)
        CHECK(t[i] == lt_size - 1 + i, "Iallreduce MAX in place: [%d]=%d", i, t[i]);
}

/* ---- several nonblocking collectives in flight ------------------------- */

#define NB 9
static void test_many_outstanding(int round)
{
    int n = 4 + round * 50, i, p, root = (round + 1) % lt_size;
    MPI_Request req[NB];
    int *bc = malloc(sizeof(int) * n), *ar = malloc(sizeof(int) * n);
    int *gs = malloc(sizeof(int) * n), *gr = malloc(sizeof(int) * n * lt_size);
    int *as = malloc(sizeof(int) * n * lt_size), *arv = malloc(sizeof(int) * n * lt_size);
    int *ag = malloc(sizeof(int) * n * lt_size);
    long sc, scr = SENT, exr = SENT;
    int *rs = malloc(sizeof(int) * n * lt_size), rsr[4] = {SENT, SENT, SENT, SENT};
    int order[NB], k;

    for (i = 0; i < n; i++) {
        bc[i] = lt_rank == root ? val(root, i) + round : SENT;
        ar[i] = lt_rank + i;
        gs[i] = val(lt_rank, i) - round;
    }
    for (i = 0; i < n * lt_size; i++) {
        gr[i] = arv[i] = ag[i] = SENT;
        as[i] = a2a(lt_rank, i / n, i % n);
        rs[i] = rsv(lt_rank, i);
    }
    sc = lt_rank + 1;
    MPI_OK(MPI_Ibcast(bc, n, MPI_INT, root, MPI_COMM_WORLD, &req[0]));
    MPI_OK(MPI_Iallreduce(MPI_IN_PLACE, ar, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req[1]));
    MPI_OK(MPI_Igather(gs, n, MPI_INT, gr, n, MPI_INT, root, MPI_COMM_WORLD, &req[2]));
    MPI_OK(MPI_Ialltoall(as, n, MPI_INT, arv, n, MPI_INT, MPI_COMM_WORLD, &req[3]));
    MPI_OK(MPI_Ibarrier(MPI_COMM_WORLD, &req[4]));
    MPI_OK(MPI_Iscan(&sc, &scr, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, &req[5]));
    MPI_OK(MPI_Iallgather(gs, n, MPI_INT, ag, n, MPI_INT, MPI_COMM_WORLD, &req[6]));
    MPI_OK(MPI_Iexscan(&sc, &exr, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, &req[7]));
    MPI_OK(MPI_Ireduce_scatter_block(rs, rsr, n < 4 ? n : 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                                     &req[8]));
    /* Complete in a different order than posted: reversed in Waitall, or
     * one by one from the middle out. */
    if (round % 2 == 0) {
        MPI_Request rev[NB];
        for (k = 0; k < NB; k++)
            rev[k] = req[NB - 1 - k];
        MPI_OK(MPI_Waitall(NB, rev, MPI_STATUSES_IGNORE));
        for (k = 0; k < NB; k++)
            CHECK(rev[k] == MPI_REQUEST_NULL, "Waitall left request %d", k);
    } else {
        for (k = 0; k < NB; k++)
            order[k] = (k * 4 + 3) % NB; /* 3,7,2,6,1,5,0,4,8 */
        for (k = 0; k < NB; k++)
            wait_req(&req[order[k]]);
    }
    for (i = 0; i < n; i++) {
        CHECK(bc[i] == val(root, i) + round, "outstanding Ibcast [%d]", i);
        CHECK(ar[i] == lt_size * (lt_size - 1) / 2 + lt_size * i, "outstanding Iallreduce [%d]",
              i);
    }
    for (p = 0; p < lt_size; p++)
        for (i = 0; i < n; i++) {
            int g = gr[p * n + i];
            CHECK(g == (lt_rank == root ? val(p, i) - round : SENT), "outstanding Igather [%d][%d]",
                  p, i);
            CHECK(arv[p * n + i] == a2a(p, lt_rank, i), "outstanding Ialltoall [%d][%d]", p, i);
            CHECK(ag[p * n + i] == val(p, i) - round, "outstanding Iallgather [%d][%d]", p, i);
        }
    CHECK(scr == (long)(lt_rank + 1) * (lt_rank + 2) / 2, "outstanding Iscan %ld", scr);
    CHECK(exr == (lt_rank == 0 ? SENT : (long)lt_rank * (lt_rank + 1) / 2),
          "outstanding Iexscan %ld", exr);
    for (i = 0; i < (n < 4 ? n : 4); i++) {
        int want = 0, r;
        for (r = 0; r < lt_size; r++)
            want += rsv(r, lt_rank * (n < 4 ? n : 4) + i);
        CHECK(rsr[i] == want, "outstanding Ireduce_scatter_block [%d]=%d want %d", i, rsr[i],
              want);
    }
    free(bc);
    free(ar);
    free(gs);
    free(gr);
    free(as);
    free(arv);
    free(ag);
    free(rs);
}

/* MPI_Test polling completes a nonblocking collective too. */
static void test_polling(void)
{
    int flag = 0, x = lt_rank + 1, y = 0, spins = 0;
    MPI_Request r;
    MPI_OK(MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r));
    while (!flag) {
        MPI_OK(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
        spins++;
    }
    CHECK(r == MPI_REQUEST_NULL, "Test did not null the request");
    CHECK(y == lt_size * (lt_size + 1) / 2, "polled Iallreduce %d", y);
}

/* ---- zero counts with NULL buffers -------------------------------------- */

static void test_zero_null(void)
{
    /* NULL send buffers; the receive buffer is a distinct dummy, since
     * MPICH reports NULL == NULL as aliased buffers. */
    int *z = calloc((size_t)lt_size, sizeof(int)), d = SENT;
    MPI_OK(MPI_Gather(NULL, 0, MPI_INT, &d, 0, MPI_INT, 0, MPI_COMM_WORLD));
    MPI_OK(MPI_Scatter(NULL, 0, MPI_INT, &d, 0, MPI_INT, 0, MPI_COMM_WORLD));
    MPI_OK(MPI_Allgather(NULL, 0, MPI_INT, &d, 0, MPI_INT, MPI_COMM_WORLD));
    MPI_OK(MPI_Alltoall(NULL, 0, MPI_INT, &d, 0, MPI_INT, MPI_COMM_WORLD));
    MPI_OK(MPI_Allgatherv(NULL, 0, MPI_INT, &d, z, z, MPI_INT, MPI_COMM_WORLD));
    MPI_OK(MPI_Alltoallv(NULL, z, z, MPI_INT, &d, z, z, MPI_INT, MPI_COMM_WORLD));
    MPI_OK(MPI_Reduce_scatter_block(NULL, &d, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    MPI_OK(MPI_Reduce_scatter(NULL, &d, z, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    MPI_OK(MPI_Scan(NULL, &d, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    MPI_OK(MPI_Exscan(NULL, &d, 0, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(d == SENT, "a zero-count collective wrote its receive buffer");
    free(z);
}

/* ---- argument errors (every rank makes the same bad call) -------------- */

static void expect_class(int rc, int want, const char *what)
{
    int cls = -1;
    if (want == MPI_SUCCESS) {
        CHECK(rc == MPI_SUCCESS, "%s: returned %d, want MPI_SUCCESS", what, rc);
        return;
    }
    if (rc == MPI_SUCCESS) {
        CHECK(0, "%s: returned MPI_SUCCESS, want error class %d", what, want);
        return;
    }
    MPI_Error_class(rc, &cls);
    CHECK(cls == want, "%s: error class %d, want %d", what, cls, want);
}

static void test_errors(void)
{
    int b[4] = {0, 0, 0, 0}, r[64], cnt[64], dis[64], i;
    MPI_Request req;
    for (i = 0; i < 64; i++) {
        cnt[i] = 1;
        dis[i] = i;
    }
    MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    expect_class(MPI_Gather(b, 1, MPI_INT, r, 1, MPI_INT, lt_size, MPI_COMM_WORLD), MPI_ERR_ROOT,
                 "Gather root == size");
    expect_class(MPI_Scatter(b, 1, MPI_INT, r, 1, MPI_INT, -2, MPI_COMM_WORLD), MPI_ERR_ROOT,
                 "Scatter root -2");
    expect_class(MPI_Igatherv(b, 1, MPI_INT, r, cnt, dis, MPI_INT, lt_size + 1, MPI_COMM_WORLD,
                              &req),
                 MPI_ERR_ROOT, "Igatherv root size+1");
    expect_class(MPI_Allgather(b, -1, MPI_INT, r, -1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_COUNT,
                 "Allgather count -1");
    expect_class(MPI_Alltoall(b, -3, MPI_INT, r, -3, MPI_INT, MPI_COMM_WORLD), MPI_ERR_COUNT,
                 "Alltoall count -3");
    if (!lt_running_on_mpich()) /* MPICH 4.0.2 does not check it and crashes */
        expect_class(MPI_Scan(b, r, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_COUNT,
                     "Scan count -1");
    expect_class(MPI_Reduce_scatter_block(b, r, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD),
                 MPI_ERR_OP, "Reduce_scatter_block MPI_OP_NULL");
    expect_class(MPI_Iscan(b, r, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD, &req), MPI_ERR_OP,
                 "Iscan MPI_OP_NULL");
    /* MPICH 4.0.2 reports the (op, type) pair as MPI_ERR_OP. */
    expect_class(MPI_Exscan(b, r, 1, MPI_DATATYPE_NULL, MPI_SUM, MPI_COMM_WORLD),
                 lt_running_on_mpich() ? MPI_ERR_OP : MPI_ERR_TYPE, "Exscan MPI_DATATYPE_NULL");
    expect_class(MPI_Allgather(b, 1, MPI_DATATYPE_NULL, r, 1, MPI_DATATYPE_NULL, MPI_COMM_WORLD),
                 MPI_ERR_TYPE, "Allgather MPI_DATATYPE_NULL");
    expect_class(MPI_Alltoall(b, 1, MPI_INT, NULL, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_BUFFER,
                 "Alltoall NULL recvbuf");
    expect_class(MPI_Scan(NULL, r, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_BUFFER,
                 "Scan NULL sendbuf");
    expect_class(MPI_Allgather(b, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, MPI_COMM_WORLD),
                 MPI_ERR_BUFFER, "Allgather MPI_IN_PLACE as recvbuf");
    MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

int main(int argc, char **argv)
{
    int round;
    lt_init("coll_more", &argc, &argv);
    for (blocking_mode = 1; blocking_mode >= 0; blocking_mode--) {
        test_gather();
        test_gatherv();
        test_scatter();
        test_scatterv();
        test_allgather();
        test_allgatherv();
        test_alltoall();
        test_alltoallv();
        test_alltoallw();
        test_reduce_scatter_block();
        test_reduce_scatter();
        test_scans();
    }
    test_basic_nonblocking();
    for (round = 0; round < 4; round++)
        test_many_outstanding(round);
    test_polling();
    test_zero_null();
    test_errors();
    return lt_finish();
}
