/* Collectives that go as point-to-point transfers between the callers'
 * buffers (engine/transfers.rs). All-to-alls: blocks from empty to past
 * the TCP eager limit and the single-copy threshold, alltoallv with uneven
 * and empty blocks at scattered displacements, alltoallw with a strided
 * datatype (staged, yet the same path on every rank), several nonblocking
 * ones in flight completed last first, the program's own wildcard
 * receives running meanwhile on the same communicator (they must never
 * see the collective's transfers), MPI_IN_PLACE, and a split communicator.
 * Gathers and scatters: blocks around the threshold and past the eager
 * and single-copy limits, every root, in place at the root, a strided
 * type on the non-roots against bytes at the root, nonblocking ones in
 * flight; gatherv, scatterv and allgatherv with uneven and empty blocks
 * in a gapped layout. Broadcasts from 64 KiB down a binomial tree of
 * transfers: sizes around the threshold and past the limits, every root,
 * a strided type, several in flight. Allgathers past 64 KiB (and on up to
 * 4 members from 2 KiB), in place, several in flight. Every received byte
 * is checked against a value computed here.
 * usage: coll_transfers [rounds] */
#include "lt.h"

/* Byte i of the block rank `from` sends rank `to` in call `call`. */
static unsigned char val(int from, int to, long i, int call)
{
    return (unsigned char)(from * 37 + to * 11 + i * 7 + (i >> 8) * 3 + call * 5 + 1);
}

static void fill(unsigned char *b, int me, int size, long block, int call)
{
    for (int p = 0; p < size; p++)
        for (long i = 0; i < block; i++)
            b[p * block + i] = val(me, p, i, call);
}

/* Block p of `b` is what member p sends member `to`. */
static void check_from(const unsigned char *b, int size, long block, int to, int call, const char *what)
{
    for (int p = 0; p < size; p++)
        for (long i = 0; i < block; i++)
            if (b[p * block + i] != val(p, to, i, call)) {
                CHECK(0, "%s: block %ld from %d, byte %ld: %d, want %d", what, block, p, i,
                      b[p * block + i], val(p, to, i, call));
                return;
            }
}

static void check_blocks(const unsigned char *b, int me, int size, long block, int call, const char *what)
{
    check_from(b, size, block, me, call, what);
}

static void plain(MPI_Comm comm, int call)
{
    int me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    static const long sizes[] = {0, 1, 8, 300, 512, 4096, 40000, 65536, 65537, 300000};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        long block = sizes[k];
        unsigned char *in = malloc(block * size + 1), *out = malloc(block * size + 1);
        fill(in, me, size, block, call + (int)k);
        memset(out, 0xee, block * size + 1);
        MPI_OK(MPI_Alltoall(in, (int)block, MPI_BYTE, out, (int)block, MPI_BYTE, comm));
        check_blocks(out, me, size, block, call + (int)k, "alltoall");
        CHECK(out[block * size] == 0xee, "alltoall %ld wrote past the buffer", block);
        /* The send buffer is the caller's and must come back untouched. */
        for (long i = 0; i < block * size; i++)
            if (in[i] != val(me, (int)(i / (block ? block : 1)), i % (block ? block : 1), call + (int)k)) {
                CHECK(0, "alltoall %ld changed the send buffer at %ld", block, i);
                break;
            }
        free(in);
        free(out);
    }
}

/* Rank `from` sends rank `to` this many bytes: uneven, some empty. */
static int vcount(int from, int to, int call) { return ((from * 5 + to * 3 + call) % 4) * 23000 + (from == to ? 17 : 0); }

static void vector(MPI_Comm comm, int call)
{
    int me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    int *sc = malloc(sizeof(int) * size), *sd = malloc(sizeof(int) * size);
    int *rc = malloc(sizeof(int) * size), *rd = malloc(sizeof(int) * size);
    int send_end = 0, recv_end = 0;
    /* Blocks in reverse rank order, with gaps between them. */
    for (int p = size - 1; p >= 0; p--) {
        sc[p] = vcount(me, p, call);
        sd[p] = send_end + 5;
        send_end = sd[p] + sc[p];
        rc[p] = vcount(p, me, call);
        rd[p] = recv_end + 3;
        recv_end = rd[p] + rc[p];
    }
    unsigned char *in = malloc(send_end + 1), *out = malloc(recv_end + 1);
    for (int p = 0; p < size; p++)
        for (int i = 0; i < sc[p]; i++)
            in[sd[p] + i] = val(me, p, i, call);
    memset(out, 0xee, recv_end + 1);
    MPI_OK(MPI_Alltoallv(in, sc, sd, MPI_BYTE, out, rc, rd, MPI_BYTE, comm));
    for (int p = 0; p < size; p++) {
        for (int i = 0; i < rc[p]; i++)
            if (out[rd[p] + i] != val(p, me, i, call)) {
                CHECK(0, "alltoallv: from %d byte %d: %d, want %d", p, i, out[rd[p] + i], val(p, me, i, call));
                break;
            }
        /* The gap before each block stays as it was. */
        CHECK(out[rd[p] - 1] == 0xee, "alltoallv wrote into the gap before block %d", p);
    }
    free(in);
    free(out);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
}

/* Alltoallw with a vector type: every other int of `n` per block. */
static void strided(MPI_Comm comm, int call)
{
    int me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    const int n = 20000;
    MPI_Datatype every_other;
    MPI_OK(MPI_Type_vector(n, 1, 2, MPI_INT, &every_other));
    MPI_OK(MPI_Type_commit(&every_other));
    int *in = malloc(sizeof(int) * 2 * n * size), *out = malloc(sizeof(int) * 2 * n * size);
    int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size);
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * size);
    for (int p = 0; p < size; p++) {
        counts[p] = 1;
        displs[p] = (int)(sizeof(int) * 2 * n * p);
        types[p] = every_other;
        for (int i = 0; i < 2 * n; i++)
            in[2 * n * p + i] = i % 2 ? -1 : me * 1000003 + p * 1009 + i + call;
    }
    for (int i = 0; i < 2 * n * size; i++)
        out[i] = -7;
    MPI_OK(MPI_Alltoallw(in, counts, displs, types, out, counts, displs, types, comm));
    for (int p = 0; p < size; p++)
        for (int i = 0; i < 2 * n; i++) {
            int want = i % 2 ? -7 : p * 1000003 + me * 1009 + i + call;
            if (out[2 * n * p + i] != want) {
                CHECK(0, "alltoallw: from %d int %d: %d, want %d", p, i, out[2 * n * p + i], want);
                break;
            }
        }
    MPI_OK(MPI_Type_free(&every_other));
    free(in);
    free(out);
    free(counts);
    free(displs);
    free(types);
}

/* Several in flight, completed last first, while the program's own
 * wildcard receives run on the same communicator. */
static void in_flight(MPI_Comm comm, int call)
{
    int me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    enum { K = 4 };
    static const long blocks[K] = {70000, 512, 9000, 0};
    unsigned char *in[K], *out[K];
    MPI_Request req[K];
    /* One wildcard receive per peer, posted before the collectives. */
    int *got = malloc(sizeof(int) * size);
    MPI_Request *p2p = malloc(sizeof(MPI_Request) * 2 * size);
    int np = 0;
    for (int p = 0; p < size; p++) {
        if (p == me)
            continue;
        MPI_OK(MPI_Irecv(&got[np], 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &p2p[np]));
        np++;
    }
    for (int k = 0; k < K; k++) {
        in[k] = malloc(blocks[k] * size + 1);
        out[k] = malloc(blocks[k] * size + 1);
        fill(in[k], me, size, blocks[k], call + k);
        MPI_OK(MPI_Ialltoall(in[k], (int)blocks[k], MPI_BYTE, out[k], (int)blocks[k], MPI_BYTE, comm, &req[k]));
    }
    int token = 1000 + me, ns = 0;
    for (int p = 0; p < size; p++) {
        if (p == me)
            continue;
        MPI_OK(MPI_Isend(&token, 1, MPI_INT, p, 77, comm, &p2p[np + ns]));
        ns++;
    }
    for (int k = K - 1; k >= 0; k--) {
        MPI_OK(MPI_Wait(&req[k], MPI_STATUS_IGNORE));
        check_blocks(out[k], me, size, blocks[k], call + k, "ialltoall in flight");
        free(in[k]);
        free(out[k]);
    }
    MPI_Status *st = malloc(sizeof(MPI_Status) * 2 * size);
    MPI_OK(MPI_Waitall(np + ns, p2p, st));
    for (int i = 0; i < np; i++) {
        CHECK(st[i].MPI_TAG == 77, "a wildcard receive matched tag %d", st[i].MPI_TAG);
        CHECK(got[i] == 1000 + st[i].MPI_SOURCE, "a wildcard receive got %d from %d", got[i], st[i].MPI_SOURCE);
    }
    free(st);
    free(got);
    free(p2p);
}

static void in_place(MPI_Comm comm, int call)
{
    int me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    const long block = 70000;
    unsigned char *b = malloc(block * size);
    fill(b, me, size, block, call);
    MPI_OK(MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b, (int)block, MPI_BYTE, comm));
    check_blocks(b, me, size, block, call, "in-place alltoall");
    free(b);
}

static void rooted(MPI_Comm comm, int call)
{
    int me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    static const long sizes[] = {100, 2047, 2048, 9000, 65537, 300000};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        long block = sizes[k];
        int root = (int)((call + k) % size), c = call * 16 + (int)k;
        unsigned char *one = malloc(block + 1), *all = malloc(block * size + 1);
        /* Gather: member p's block is val(p, root, i). */
        for (long i = 0; i < block; i++)
            one[i] = val(me, root, i, c);
        memset(all, 0xee, block * size + 1);
        int in_place = me == root && k % 2;
        if (in_place)
            memcpy(all + me * block, one, block);
        MPI_OK(MPI_Gather(in_place ? MPI_IN_PLACE : one, (int)block, MPI_BYTE, all, (int)block, MPI_BYTE, root, comm));
        if (me == root) {
            char what[32];
            snprintf(what, sizeof what, "gather root %d", root);
            check_from(all, size, block, root, c, what);
            CHECK(all[block * size] == 0xee, "gather %ld wrote past the buffer", block);
        }
        /* Scatter: the root's block p is val(root, p, i). */
        if (me == root)
            fill(all, root, size, block, c);
        memset(one, 0xee, block + 1);
        in_place = me == root && !(k % 2);
        MPI_OK(MPI_Scatter(all, (int)block, MPI_BYTE, in_place ? MPI_IN_PLACE : one, (int)block, MPI_BYTE, root, comm));
        const unsigned char *mine = in_place ? all + me * block : one;
        for (long i = 0; i < block; i++)
            if (mine[i] != val(root, me, i, c)) {
                CHECK(0, "scatter %ld root %d: byte %ld: %d, want %d", block, root, i, mine[i], val(root, me, i, c));
                break;
            }
        if (!in_place)
            CHECK(one[block] == 0xee, "scatter %ld wrote past the buffer", block);
        free(one);
        free(all);
    }
}

/* A strided type at the non-roots, plain ints at the root; and several
 * nonblocking ones in flight. */
static void rooted_mixed(MPI_Comm comm, int call)
{
    int me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    const int n = 3000;
    int root = (call + 1) % size;
    MPI_Datatype every_other;
    MPI_OK(MPI_Type_vector(n, 1, 2, MPI_INT, &every_other));
    MPI_OK(MPI_Type_commit(&every_other));
    int *spread = malloc(sizeof(int) * 2 * n), *packed = malloc(sizeof(int) * n * size);
    for (int i = 0; i < 2 * n; i++)
        spread[i] = i % 2 ? -1 : me * 100003 + i / 2 + call;
    if (me == root)
        MPI_OK(MPI_Gather(spread, 1, every_other, packed, n, MPI_INT, root, comm));
    else
        MPI_OK(MPI_Gather(spread, 1, every_other, NULL, 0, MPI_INT, root, comm));
    if (me == root)
        for (int p = 0; p < size; p++)
            for (int i = 0; i < n; i++)
                if (packed[p * n + i] != p * 100003 + i + call) {
                    CHECK(0, "strided gather: from %d int %d: %d", p, i, packed[p * n + i]);
                    p = size;
                    break;
                }
    for (int i = 0; i < 2 * n; i++)
        spread[i] = -7;
    if (me == root)
        for (int i = 0; i < n * size; i++)
            packed[i] = i * 3 + call;
    MPI_OK(MPI_Scatter(packed, n, MPI_INT, spread, 1, every_other, root, comm));
    for (int i = 0; i < 2 * n; i++)
        if (spread[i] != (i % 2 ? -7 : (me * n + i / 2) * 3 + call)) {
            CHECK(0, "strided scatter: int %d: %d", i, spread[i]);
            break;
        }
    MPI_OK(MPI_Type_free(&every_other));
    free(spread);
    free(packed);

    enum { K = 3 };
    const long block = 20000;
    unsigned char *one[K], *all[K];
    MPI_Request req[2 * K];
    for (int k = 0; k < K; k++) {
        one[k] = malloc(block);
        all[k] = malloc(block * size);
        for (long i = 0; i < block; i++)
            one[k][i] = val(me, k, i, call);
        fill(all[k], me, size, block, call + k);
        MPI_OK(MPI_Igather(one[k], (int)block, MPI_BYTE, all[k], (int)block, MPI_BYTE, k % size, comm, &req[k]));
    }
    unsigned char *sc = malloc(block * size), *got = malloc(block * K);
    fill(sc, me, size, block, call);
    for (int k = 0; k < K; k++)
        MPI_OK(MPI_Iscatter(sc, (int)block, MPI_BYTE, got + k * block, (int)block, MPI_BYTE, (k + 1) % size, comm, &req[K + k]));
    MPI_Status st[2 * K];
    MPI_OK(MPI_Waitall(2 * K, req, st));
    for (int k = 0; k < K; k++) {
        if (me == k % size)
            for (int p = 0; p < size; p++)
                for (long i = 0; i < block; i++)
                    if (all[k][p * block + i] != val(p, k, i, call)) {
                        CHECK(0, "igather %d: from %d byte %ld", k, p, i);
                        p = size;
                        break;
                    }
        int r = (k + 1) % size;
        for (long i = 0; i < block; i++)
            if (got[k * block + i] != val(r, me, i, call)) {
                CHECK(0, "iscatter %d: byte %ld: %d, want %d", k, i, got[k * block + i], val(r, me, i, call));
                break;
            }
        free(one[k]);
        free(all[k]);
    }
    free(sc);
    free(got);
}

/* Broadcasts around the threshold and past the eager and single-copy
 * limits from every root, a strided type, several in flight. */
static void broadcasts(MPI_Comm comm, int call)
{
    int me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    static const long sizes[] = {65535, 65536, 65537, 300000, 1 << 20};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        long len = sizes[k];
        int root = (int)((call + k) % size), c = call * 8 + (int)k;
        unsigned char *b = malloc(len + 1);
        for (long i = 0; i < len; i++)
            b[i] = me == root ? val(root, 0, i, c) : 0;
        b[len] = 0xee;
        MPI_OK(MPI_Bcast(b, (int)len, MPI_BYTE, root, comm));
        for (long i = 0; i < len; i++)
            if (b[i] != val(root, 0, i, c)) {
                CHECK(0, "bcast %ld root %d: byte %ld: %d, want %d", len, root, i, b[i], val(root, 0, i, c));
                break;
            }
        CHECK(b[len] == 0xee, "bcast %ld wrote past the buffer", len);
        free(b);
    }
    const int n = 40000;
    MPI_Datatype every_other;
    MPI_OK(MPI_Type_vector(n, 1, 2, MPI_INT, &every_other));
    MPI_OK(MPI_Type_commit(&every_other));
    int root = (call + 2) % size;
    int *spread = malloc(sizeof(int) * 2 * n);
    for (int i = 0; i < 2 * n; i++)
        spread[i] = me == root || i % 2 ? i * 7 + call + (i % 2 ? me * 1000003 : 0) : -5;
    MPI_OK(MPI_Bcast(spread, 1, every_other, root, comm));
    for (int i = 0; i < 2 * n; i++)
        if (spread[i] != i * 7 + call + (i % 2 ? me * 1000003 : 0)) {
            CHECK(0, "strided bcast root %d: int %d: %d", root, i, spread[i]);
            break;
        }
    MPI_OK(MPI_Type_free(&every_other));
    free(spread);
    enum { K = 3 };
    const long len = 100000;
    unsigned char *b[K];
    MPI_Request req[K];
    for (int k = 0; k < K; k++) {
        b[k] = malloc(len);
        for (long i = 0; i < len; i++)
            b[k][i] = me == k % size ? val(k, 1, i, call) : 0;
        MPI_OK(MPI_Ibcast(b[k], (int)len, MPI_BYTE, k % size, comm, &req[k]));
    }
    for (int k = K - 1; k >= 0; k--) {
        MPI_OK(MPI_Wait(&req[k], MPI_STATUS_IGNORE));
        for (long i = 0; i < len; i++)
            if (b[k][i] != val(k, 1, i, call)) {
                CHECK(0, "ibcast %d: byte %ld: %d", k, i, b[k][i]);
                break;
            }
        free(b[k]);
    }
}

/* Gatherv, scatterv and allgatherv: uneven blocks from empty to past the
 * eager and single-copy limits, laid out in reverse rank order with gaps
 * that must stay untouched, several roots, in place, and one of each in
 * flight at once. Member p's block in call c is val(p, c, i). */
static long v_layout(int size, int c, int *cnt, int *dis)
{
    long at = 0;
    for (int p = size - 1; p >= 0; p--) {
        cnt[p] = ((p * 5 + c) % 4) * 23000 + p % 3;
        dis[p] = (int)at;
        at += cnt[p] + 5;
    }
    return at;
}

static void v_fill(unsigned char *b, int p, int n, int c)
{
    for (long i = 0; i < n; i++)
        b[i] = val(p, c, i, c);
}

/* `all` holds every member's block where `dis` puts it, and 0xee between. */
static void check_v(const unsigned char *all, int size, const int *cnt, const int *dis, long ext,
                    int c, const char *what)
{
    unsigned char *want = malloc(ext);
    memset(want, 0xee, ext);
    for (int p = 0; p < size; p++)
        v_fill(want + dis[p], p, cnt[p], c);
    for (long i = 0; i < ext; i++)
        if (all[i] != want[i]) {
            CHECK(0, "%s: byte %ld: %d, want %d", what, i, all[i], want[i]);
            break;
        }
    free(want);
}

static void check_mine(const unsigned char *b, int me, int n, int c, const char *what)
{
    for (long i = 0; i < n; i++)
        if (b[i] != val(me, c, i, c)) {
            CHECK(0, "%s: byte %ld of %d: %d, want %d", what, i, n, b[i], val(me, c, i, c));
            break;
        }
}

static void rooted_v(MPI_Comm comm, int call)
{
    int me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    int *cnt = malloc(sizeof(int) * size), *dis = malloc(sizeof(int) * size);
    for (int k = 0; k < 4; k++) {
        int c = call * 16 + k, root = (call + k) % size, in_place = k % 2;
        int ip = in_place && me == root;
        long ext = v_layout(size, c, cnt, dis);
        unsigned char *one = malloc(cnt[me] + 1), *all = malloc(ext);
        v_fill(one, me, cnt[me], c);
        memset(all, 0xee, ext);
        if (ip)
            v_fill(all + dis[me], me, cnt[me], c);
        MPI_OK(MPI_Gatherv(ip ? MPI_IN_PLACE : one, cnt[me], MPI_BYTE, all, cnt, dis, MPI_BYTE, root, comm));
        if (me == root)
            check_v(all, size, cnt, dis, ext, c, in_place ? "gatherv in place" : "gatherv");
        /* The root sends the blocks it gathered back out. */
        memset(one, 0xee, cnt[me] + 1);
        MPI_OK(MPI_Scatterv(all, cnt, dis, MPI_BYTE, ip ? MPI_IN_PLACE : one, cnt[me], MPI_BYTE, root, comm));
        check_mine(ip ? all + dis[me] : one, me, cnt[me], c, in_place ? "scatterv in place" : "scatterv");
        CHECK(ip || one[cnt[me]] == 0xee, "scatterv wrote past %d bytes", cnt[me]);
        v_fill(one, me, cnt[me], c);
        memset(all, 0xee, ext);
        if (in_place)
            v_fill(all + dis[me], me, cnt[me], c);
        MPI_OK(MPI_Allgatherv(in_place ? MPI_IN_PLACE : one, cnt[me], MPI_BYTE, all, cnt, dis, MPI_BYTE, comm));
        check_v(all, size, cnt, dis, ext, c, in_place ? "allgatherv in place" : "allgatherv");
        free(one);
        free(all);
    }
    /* One of each in flight, to different roots. */
    int c = call * 16 + 9;
    long ext = v_layout(size, c, cnt, dis);
    unsigned char *one = malloc(cnt[me] + 1), *got = malloc(cnt[me] + 1);
    unsigned char *g = malloc(ext), *s = malloc(ext), *a = malloc(ext);
    v_fill(one, me, cnt[me], c);
    memset(g, 0xee, ext);
    memset(a, 0xee, ext);
    memset(s, 0xee, ext);
    for (int p = 0; p < size; p++)
        v_fill(s + dis[p], p, cnt[p], c);
    MPI_Request req[3];
    MPI_OK(MPI_Igatherv(one, cnt[me], MPI_BYTE, g, cnt, dis, MPI_BYTE, 0, comm, &req[0]));
    MPI_OK(MPI_Iscatterv(s, cnt, dis, MPI_BYTE, got, cnt[me], MPI_BYTE, size - 1, comm, &req[1]));
    MPI_OK(MPI_Iallgatherv(one, cnt[me], MPI_BYTE, a, cnt, dis, MPI_BYTE, comm, &req[2]));
    MPI_OK(MPI_Waitall(3, req, MPI_STATUSES_IGNORE));
    if (me == 0)
        check_v(g, size, cnt, dis, ext, c, "igatherv");
    check_mine(got, me, cnt[me], c, "iscatterv");
    check_v(a, size, cnt, dis, ext, c, "iallgatherv");
    free(one);
    free(got);
    free(g);
    free(s);
    free(a);
    free(cnt);
    free(dis);
}

/* Allgathers: blocks around the rules (transfers from 16 KiB, or on up to
 * 4 members from 2 KiB), in place every other call, and three
 * nonblocking ones in flight. Member p's block is val(p, 0, i). */
static void allgathers(MPI_Comm comm, int call)
{
    int me, size;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &size);
    static const long sizes[] = {2048, 16383, 16384, 65536, 70000, 300000};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        long block = sizes[k];
        int c = call * 16 + (int)k, in_place = (call + (int)k) % 2;
        unsigned char *one = malloc(block), *all = malloc(block * size + 1);
        memset(all, 0xee, block * size + 1);
        for (long i = 0; i < block; i++)
            one[i] = val(me, 0, i, c);
        if (in_place)
            memcpy(all + me * block, one, block);
        MPI_OK(MPI_Allgather(in_place ? MPI_IN_PLACE : one, (int)block, MPI_BYTE, all, (int)block,
                             MPI_BYTE, comm));
        check_from(all, size, block, 0, c, in_place ? "allgather in place" : "allgather");
        CHECK(all[block * size] == 0xee, "allgather %ld wrote past the buffer", block);
        free(one);
        free(all);
    }
    enum { K = 3 };
    const long block = 70000;
    unsigned char *one[K], *all[K];
    MPI_Request req[K];
    for (int k = 0; k < K; k++) {
        one[k] = malloc(block);
        all[k] = malloc(block * size);
        for (long i = 0; i < block; i++)
            one[k][i] = val(me, 0, i, call * 16 + 8 + k);
        MPI_OK(MPI_Iallgather(one[k], (int)block, MPI_BYTE, all[k], (int)block, MPI_BYTE, comm,
                              &req[k]));
    }
    MPI_OK(MPI_Waitall(K, req, MPI_STATUSES_IGNORE));
    for (int k = 0; k < K; k++) {
        check_from(all[k], size, block, 0, call * 16 + 8 + k, "iallgather");
        free(one[k]);
        free(all[k]);
    }
}

int main(int argc, char **argv)
{
    lt_init("coll_transfers", &argc, &argv);
    int rounds = argc > 1 ? atoi(argv[1]) : 2;
    MPI_Comm half;
    MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, lt_rank % 2, -lt_rank, &half));
    for (int call = 0; call < rounds; call++) {
        MPI_Comm comm = call % 2 ? half : MPI_COMM_WORLD;
        plain(comm, call);
        vector(comm, call);
        strided(comm, call);
        in_flight(comm, call);
        in_place(comm, call);
        rooted(comm, call);
        rooted_mixed(comm, call);
        rooted_v(comm, call);
        broadcasts(comm, call);
        allgathers(comm, call);
    }
    MPI_OK(MPI_Comm_free(&half));
    return lt_finish();
}
