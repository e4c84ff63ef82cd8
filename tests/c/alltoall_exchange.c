/* All-to-alls that go as point-to-point transfers between the callers'
 * buffers (engine/exchange.rs): blocks from empty to past the TCP eager
 * limit and the single-copy threshold, alltoallv with uneven and empty
 * blocks at scattered displacements, alltoallw with a strided datatype
 * (staged, yet the same path on every rank), several nonblocking ones in
 * flight completed last first, the program's own wildcard receives
 * running meanwhile on the same communicator (they must never see the
 * collective's transfers), MPI_IN_PLACE, and a split communicator.
 * Every received byte is checked against a value computed here.
 * usage: alltoall_exchange [rounds] */
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

static void check_blocks(const unsigned char *b, int me, int size, long block, int call, const char *what)
{
    for (int p = 0; p < size; p++)
        for (long i = 0; i < block; i++)
            if (b[p * block + i] != val(p, me, i, call)) {
                CHECK(0, "%s: block %ld from %d, byte %ld: %d, want %d", what, block, p, i,
                      b[p * block + i], val(p, me, i, call));
                return;
            }
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

int main(int argc, char **argv)
{
    lt_init("alltoall_exchange", &argc, &argv);
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
    }
    MPI_OK(MPI_Comm_free(&half));
    return lt_finish();
}
