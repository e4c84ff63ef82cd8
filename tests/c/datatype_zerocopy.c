/*
 * Large non-contiguous messages between ranks 0 and 1 (about 4 MiB each):
 * vector, indexed and struct types, sent and received with different
 * types of the same type signature, blocking and nonblocking, in both
 * directions. Every data byte is checked against its position in the
 * type map, and every byte the receive type does not cover (holes, and
 * the tail past a truncated receive) must be left untouched.
 */
#include "lt.h"

#define SENTINEL 0xEE

/* A layout: element k of the type map lies at byte off[k], of kind 'i'
 * (int) or 'd' (double); the type spans `span` bytes from the buffer. */
typedef struct {
    const char *name;
    MPI_Datatype type;
    int count;
    long n;
    long *off;
    char *kind;
    long span;
} layout_t;

static void add(layout_t *l, long off, char kind)
{
    l->off[l->n] = off;
    l->kind[l->n] = kind;
    l->n++;
    long end = off + (kind == 'i' ? 4 : 8);
    if (end > l->span)
        l->span = end;
}

static void alloc_layout(layout_t *l, const char *name, long max)
{
    l->name = name;
    l->n = 0;
    l->span = 0;
    l->count = 1;
    l->off = malloc(sizeof(long) * max);
    l->kind = malloc((size_t)max);
}

#define NDBL (512L * 1024) /* 4 MiB of doubles */

/* Pieces of 4 KiB or more: finer layouts are packed, which is faster.
 * 1024 blocks of 512 doubles, every 600 doubles. */
static void vector_layout(layout_t *l)
{
    alloc_layout(l, "vector", NDBL);
    for (long b = 0; b < 1024; b++)
        for (long j = 0; j < 512; j++)
            add(l, (b * 600 + j) * 8, 'd');
    MPI_Type_vector(1024, 512, 600, MPI_DOUBLE, &l->type);
    MPI_Type_commit(&l->type);
}

static void contig_layout(layout_t *l, MPI_Datatype elem, char kind, long n)
{
    alloc_layout(l, "contiguous", n);
    for (long k = 0; k < n; k++)
        add(l, k * (kind == 'i' ? 4 : 8), kind);
    l->type = elem;
    l->count = (int)n;
}

/* Indexed ints: block i has 1024 * (1 + i % 3) ints after a gap of
 * 32 + 16 * (i % 3) ints; 512 blocks (about 4 MiB). */
#define NIDX 512
static long indexed_total;

static void indexed_layout(layout_t *l)
{
    static int lens[NIDX], displs[NIDX];
    long at = 0, total = 0;
    for (int i = 0; i < NIDX; i++) {
        at += 32 + 16 * (i % 3);
        lens[i] = 1024 * (1 + i % 3);
        displs[i] = (int)at;
        at += lens[i];
        total += lens[i];
    }
    indexed_total = total;
    alloc_layout(l, "indexed", total);
    for (int i = 0; i < NIDX; i++)
        for (int j = 0; j < lens[i]; j++)
            add(l, (long)(displs[i] + j) * 4, 'i');
    MPI_Type_indexed(NIDX, lens, displs, MPI_INT, &l->type);
    MPI_Type_commit(&l->type);
}

/* The same ints as hvector blocks of 1024 every 4400 bytes. */
static void hvector_layout(layout_t *l)
{
    long nb = indexed_total / 1024;
    alloc_layout(l, "hvector", indexed_total);
    for (long b = 0; b < nb; b++)
        for (long j = 0; j < 1024; j++)
            add(l, b * 4400 + j * 4, 'i');
    MPI_Type_create_hvector((int)nb, 1024, 4400, MPI_INT, &l->type);
    MPI_Type_commit(&l->type);
}

/* Struct instances of 1024 ints then 512 doubles, 512 of them (4 MiB),
 * with the members at (ioff, doff) and the given extent. */
static void struct_layout(layout_t *l, const char *name, long ioff, long doff, long extent)
{
    int bl[2] = {1024, 512};
    MPI_Aint d[2] = {ioff, doff};
    MPI_Datatype t[2] = {MPI_INT, MPI_DOUBLE}, s;
    alloc_layout(l, name, 512L * 1536);
    for (long k = 0; k < 512; k++) {
        for (long j = 0; j < 1024; j++)
            add(l, k * extent + ioff + j * 4, 'i');
        for (long j = 0; j < 512; j++)
            add(l, k * extent + doff + j * 8, 'd');
    }
    MPI_Type_create_struct(2, bl, d, t, &s);
    MPI_Type_create_resized(s, 0, extent, &l->type);
    MPI_Type_free(&s);
    MPI_Type_commit(&l->type);
    l->count = 512;
}

/* Element k's value in message `seed`. */
static int ival(int seed, long k) { return (int)(k * 7 + seed); }
static double dval(int seed, long k) { return (double)k + 0.25 * seed; }

static char *make_buf(const layout_t *l)
{
    char *b = malloc((size_t)l->span + 64);
    memset(b, SENTINEL, (size_t)l->span + 64);
    return b;
}

static void fill(char *b, const layout_t *l, int seed)
{
    for (long k = 0; k < l->n; k++) {
        if (l->kind[k] == 'i') {
            int v = ival(seed, k);
            memcpy(b + l->off[k], &v, 4);
        } else {
            double v = dval(seed, k);
            memcpy(b + l->off[k], &v, 8);
        }
    }
}

/* The first `got` elements carry the message; bytes outside the type
 * map (holes, the 64 bytes past the span) are untouched. */
static void check(const char *b, const layout_t *l, long got, int seed, const char *what)
{
    char *covered = calloc((size_t)l->span + 64, 1);
    long bad = 0;
    for (long k = 0; k < l->n; k++) {
        memset(covered + l->off[k], 1, l->kind[k] == 'i' ? 4 : 8);
        if (k >= got)
            continue;
        int ok;
        if (l->kind[k] == 'i') {
            int v;
            memcpy(&v, b + l->off[k], 4);
            ok = v == ival(seed, k);
        } else {
            double v;
            memcpy(&v, b + l->off[k], 8);
            ok = v == dval(seed, k);
        }
        if (!ok && bad++ < 3)
            CHECK(0, "%s: element %ld at byte %ld wrong", what, k, l->off[k]);
    }
    for (long i = 0; i < l->span + 64; i++)
        if (!covered[i] && (unsigned char)b[i] != SENTINEL && bad++ < 6)
            CHECK(0, "%s: byte %ld outside the received data was written", what, i);
    free(covered);
}

static long elems_of(const layout_t *l, MPI_Status *st)
{
    int n;
    MPI_OK(MPI_Get_elements(st, l->type, &n));
    return n;
}

/* Rank `from` sends `s` to rank `to`, which receives into `r`. */
static void one_way(int rank, int from, const layout_t *s, const layout_t *r, int nonblocking,
                    int seed, const char *what)
{
    if (rank == from) {
        char *b = make_buf(s);
        fill(b, s, seed);
        if (nonblocking) {
            MPI_Request q;
            MPI_OK(MPI_Isend(b, s->count, s->type, 1 - from, seed, MPI_COMM_WORLD, &q));
            MPI_OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
        } else {
            MPI_OK(MPI_Send(b, s->count, s->type, 1 - from, seed, MPI_COMM_WORLD));
        }
        free(b);
    } else if (rank == 1 - from) {
        char *b = make_buf(r);
        MPI_Status st;
        if (nonblocking) {
            MPI_Request q;
            MPI_OK(MPI_Irecv(b, r->count, r->type, from, seed, MPI_COMM_WORLD, &q));
            MPI_OK(MPI_Wait(&q, &st));
        } else {
            MPI_OK(MPI_Recv(b, r->count, r->type, from, seed, MPI_COMM_WORLD, &st));
        }
        CHECK(elems_of(r, &st) == r->n, "%s: %ld elements received, want %ld", what,
              elems_of(r, &st), r->n);
        check(b, r, r->n, seed, what);
        free(b);
    }
}

/* Both ranks send and receive at once: 0 sends `a` (received as `b`),
 * 1 sends `b` (received as `a`). */
static void exchange(int rank, const layout_t *a, const layout_t *b, int seed, const char *what)
{
    const layout_t *mine = rank == 0 ? a : b, *theirs = rank == 0 ? b : a;
    char *sb = make_buf(mine), *rb = make_buf(theirs);
    MPI_Request q[2];
    MPI_Status st[2];
    fill(sb, mine, seed + rank);
    MPI_OK(MPI_Irecv(rb, theirs->count, theirs->type, 1 - rank, seed, MPI_COMM_WORLD, &q[0]));
    MPI_OK(MPI_Isend(sb, mine->count, mine->type, 1 - rank, seed, MPI_COMM_WORLD, &q[1]));
    MPI_OK(MPI_Waitall(2, q, st));
    check(rb, theirs, theirs->n, seed + 1 - rank, what);
    free(sb);
    free(rb);
}

/* A receive shorter than the message: MPI_ERR_TRUNCATE, and nothing is
 * written past the receive's type map. */
static void truncated(int rank, const layout_t *s)
{
    layout_t r;
    alloc_layout(&r, "short vector", NDBL / 2);
    for (long b = 0; b < 2048; b++)
        for (long j = 0; j < 128; j++)
            add(&r, (b * 200 + j) * 8, 'd');
    /* 1 KiB pieces on the receiving side are read in place all the same. */
    MPI_Type_vector(2048, 128, 200, MPI_DOUBLE, &r.type);
    MPI_Type_commit(&r.type);
    if (rank == 0) {
        char *b = make_buf(s);
        fill(b, s, 9);
        MPI_OK(MPI_Send(b, s->count, s->type, 1, 9, MPI_COMM_WORLD));
        free(b);
    } else if (rank == 1) {
        /* Room for the whole message after the type map: it must stay clean. */
        r.span += NDBL * 8;
        char *b = make_buf(&r);
        MPI_Status st;
        int rc = MPI_Recv(b, 1, r.type, 0, 9, MPI_COMM_WORLD, &st);
        int cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TRUNCATE, "truncated receive: error class %d, want %d", cls,
              MPI_ERR_TRUNCATE);
        /* The received data is undefined on truncation; the rest is not. */
        check(b, &r, 0, 9, "truncated receive");
        free(b);
    }
    MPI_Type_free(&r.type);
    free(r.off);
    free(r.kind);
}

int main(int argc, char **argv)
{
    lt_init("datatype_zerocopy", &argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (lt_size >= 2) {
        layout_t vec, con, idx, hv, s1, s2, ci;
        vector_layout(&vec);
        contig_layout(&con, MPI_DOUBLE, 'd', NDBL);
        indexed_layout(&idx);
        hvector_layout(&hv);
        contig_layout(&ci, MPI_INT, 'i', indexed_total);
        struct_layout(&s1, "struct", 0, 4608, 12288);
        struct_layout(&s2, "struct2", 64, 4416, 10240);
        const layout_t *pairs[][2] = {
            {&vec, &con}, {&con, &vec}, {&vec, &vec}, {&idx, &hv},
            {&hv, &idx}, {&idx, &ci}, {&s1, &s2}, {&s2, &s1},
        };
        int np = (int)(sizeof pairs / sizeof pairs[0]);
        int seed = 1;
        for (int p = 0; p < np; p++) {
            for (int nb = 0; nb < 2; nb++) {
                for (int from = 0; from < 2; from++) {
                    char what[96];
                    snprintf(what, sizeof what, "%s -> %s, %s, from rank %d", pairs[p][0]->name,
                             pairs[p][1]->name, nb ? "nonblocking" : "blocking", from);
                    one_way(lt_rank, from, pairs[p][0], pairs[p][1], nb, seed++, what);
                }
            }
            char what[96];
            snprintf(what, sizeof what, "%s <-> %s exchange", pairs[p][0]->name, pairs[p][1]->name);
            if (lt_rank < 2)
                exchange(lt_rank, pairs[p][0], pairs[p][1], seed, what);
            seed += 2;
        }
        truncated(lt_rank, &vec);
        layout_t *all[] = {&vec, &idx, &hv, &s1, &s2};
        for (int i = 0; i < 5; i++)
            MPI_Type_free(&all[i]->type);
    }
    return lt_finish();
}
