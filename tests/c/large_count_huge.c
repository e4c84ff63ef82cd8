/*
 * Counts beyond INT_MAX through the MPI-4 `_c` entry points: a message of
 * 2 GiB + 4 KiB + 8 bytes between the first and the last rank (blocking,
 * then nonblocking with a strided datatype on the receive side), and a
 * broadcast of the same size. Needs about 5 GiB per pair of ranks.
 *
 * The data is a function of the word index, so every rank checks what it
 * got without seeing the sender's buffer.
 */
#include "lt.h"

#include <limits.h>

#define HUGE_BYTES ((MPI_Count)INT_MAX + 4105)

/* The 64-bit word at index i of the payload, seeded per phase. */
static uint64_t word_at(uint64_t i, uint64_t seed)
{
    uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ULL ^ seed;
    return x ^ (x >> 29);
}

static void fill(unsigned char *p, MPI_Count n, uint64_t seed)
{
    MPI_Count words = n / 8;
    uint64_t *w = (uint64_t *)p;
    for (MPI_Count i = 0; i < words; i++)
        w[i] = word_at((uint64_t)i, seed);
    for (MPI_Count i = words * 8; i < n; i++)
        p[i] = (unsigned char)(i * 7 + seed);
}

/* The first byte index where p differs from the pattern, or -1. */
static MPI_Count first_bad(const unsigned char *p, MPI_Count n, uint64_t seed)
{
    MPI_Count words = n / 8;
    const uint64_t *w = (const uint64_t *)p;
    for (MPI_Count i = 0; i < words; i++)
        if (w[i] != word_at((uint64_t)i, seed))
            return i * 8;
    for (MPI_Count i = words * 8; i < n; i++)
        if (p[i] != (unsigned char)(i * 7 + seed))
            return i;
    return -1;
}

static void check_status(MPI_Status *st, MPI_Count bytes, const char *what)
{
    MPI_Count c = -1;
    int ci = 0;
    MPI_OK(MPI_Get_count_c(st, MPI_BYTE, &c));
    CHECK(c == bytes, "%s: MPI_Get_count_c %lld, want %lld", what, (long long)c,
          (long long)bytes);
    /* The int form cannot hold it: the standard says MPI_UNDEFINED. */
    MPI_OK(MPI_Get_count(st, MPI_BYTE, &ci));
    CHECK(ci == MPI_UNDEFINED, "%s: MPI_Get_count %d, want MPI_UNDEFINED", what, ci);
}

/* Blocking send of HUGE_BYTES MPI_BYTEs from rank 0 to the last rank. */
static void p2p_blocking(unsigned char *buf)
{
    int last = lt_size - 1;
    MPI_Status st;
    if (lt_rank == 0)
        fill(buf, HUGE_BYTES, 1);
    if (lt_size == 1) {
        MPI_Request r;
        unsigned char *in = malloc((size_t)HUGE_BYTES);
        CHECK(in != NULL, "malloc");
        if (!in)
            return;
        MPI_OK(MPI_Irecv_c(in, HUGE_BYTES, MPI_BYTE, 0, 5, MPI_COMM_WORLD, &r));
        MPI_OK(MPI_Send_c(buf, HUGE_BYTES, MPI_BYTE, 0, 5, MPI_COMM_WORLD));
        MPI_OK(MPI_Wait(&r, &st));
        check_status(&st, HUGE_BYTES, "self");
        MPI_Count bad = first_bad(in, HUGE_BYTES, 1);
        CHECK(bad < 0, "self: byte %lld differs", (long long)bad);
        free(in);
        return;
    }
    if (lt_rank == 0) {
        MPI_OK(MPI_Send_c(buf, HUGE_BYTES, MPI_BYTE, last, 5, MPI_COMM_WORLD));
    } else if (lt_rank == last) {
        memset(buf, 0, (size_t)HUGE_BYTES);
        MPI_OK(MPI_Recv_c(buf, HUGE_BYTES, MPI_BYTE, 0, 5, MPI_COMM_WORLD, &st));
        check_status(&st, HUGE_BYTES, "Recv_c");
        MPI_Count bad = first_bad(buf, HUGE_BYTES, 1);
        CHECK(bad < 0, "Recv_c: byte %lld differs", (long long)bad);
    }
}

/*
 * Nonblocking, more than INT_MAX elements of a 1-byte type whose
 * instances are spread out: the receiver uses a resized MPI_BYTE with
 * extent 2, so the data lands in every other byte.
 */
static void p2p_strided(unsigned char *buf)
{
    int last = lt_size - 1;
    MPI_Count n = (MPI_Count)INT_MAX + 9; /* elements */
    if (lt_size == 1)
        return;
    if (lt_rank == 0) {
        MPI_Request r;
        fill(buf, n, 2);
        MPI_OK(MPI_Isend_c(buf, n, MPI_BYTE, last, 6, MPI_COMM_WORLD, &r));
        MPI_OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    } else if (lt_rank == last) {
        MPI_Datatype spread;
        MPI_Request r;
        MPI_Status st;
        MPI_OK(MPI_Type_create_resized(MPI_BYTE, 0, 2, &spread));
        MPI_OK(MPI_Type_commit(&spread));
        unsigned char *wide = malloc((size_t)(2 * n));
        unsigned char *got = malloc((size_t)n);
        CHECK(wide && got, "malloc");
        if (wide && got) {
            memset(wide, 0xa5, (size_t)(2 * n));
            MPI_OK(MPI_Irecv_c(wide, n, spread, 0, 6, MPI_COMM_WORLD, &r));
            MPI_OK(MPI_Wait(&r, &st));
            MPI_Count c = -1;
            MPI_OK(MPI_Get_count_c(&st, spread, &c));
            CHECK(c == n, "strided: MPI_Get_count_c %lld, want %lld", (long long)c,
                  (long long)n);
            MPI_Count holes = 0;
            for (MPI_Count i = 0; i < n; i++) {
                got[i] = wide[2 * i];
                holes += wide[2 * i + 1] != 0xa5;
            }
            CHECK(holes == 0, "strided: %lld holes written", (long long)holes);
            MPI_Count bad = first_bad(got, n, 2);
            CHECK(bad < 0, "strided: element %lld differs", (long long)bad);
        }
        free(wide);
        free(got);
        MPI_OK(MPI_Type_free(&spread));
    }
}

/* A broadcast of HUGE_BYTES from the last rank. */
static void bcast(unsigned char *buf)
{
    int root = lt_size - 1;
    if (lt_rank == root)
        fill(buf, HUGE_BYTES, 3);
    else
        memset(buf, 0, (size_t)HUGE_BYTES);
    MPI_OK(MPI_Bcast_c(buf, HUGE_BYTES, MPI_BYTE, root, MPI_COMM_WORLD));
    MPI_Count bad = first_bad(buf, HUGE_BYTES, 3);
    CHECK(bad < 0, "Bcast_c: byte %lld differs", (long long)bad);
}

int main(int argc, char **argv)
{
    lt_init("large_count_huge", &argc, &argv);
    unsigned char *buf = malloc((size_t)HUGE_BYTES);
    CHECK(buf != NULL, "malloc of %lld bytes", (long long)HUGE_BYTES);
    if (buf) {
        p2p_blocking(buf);
        p2p_strided(buf);
        bcast(buf);
    }
    free(buf);
    return lt_finish();
}
