/* Large messages between ranks of one node, where Lanai may share the copy:
 * the receiver reads one half while the sender writes the other, or, below
 * 256 KiB, have the sender stream them through the ring. Every
 * byte is checked against a pattern computed here, and so are the bytes
 * around the receive buffer, which nobody may write. Pairs (0,1), (2,3),
 * ... exchange; an odd last rank sits out. */
#include "lt.h"

#define GUARD 4096

static unsigned char pattern(int src, int salt, size_t i)
{
    return (unsigned char)((i * 2654435761u) >> 13 ^ (size_t)src * 31 ^ (size_t)salt * 7);
}

static void fill(unsigned char *p, size_t n, int src, int salt)
{
    for (size_t i = 0; i < n; i++)
        p[i] = pattern(src, salt, i);
}

/* The guard before the buffer, and everything from byte `from` of the
 * buffer (capacity `cap`) through the guard after it, untouched (0xa5). */
static void check_untouched(const unsigned char *region, size_t cap, size_t from,
                            const char *what)
{
    for (size_t i = 0; i < GUARD; i++)
        if (region[i] != 0xa5) {
            CHECK(0, "%s: guard byte %zu before the buffer was written", what, i);
            return;
        }
    const unsigned char *buf = region + GUARD;
    for (size_t i = from; i < cap + GUARD; i++)
        if (buf[i] != 0xa5) {
            CHECK(0, "%s: byte %zu past the data was written", what, i);
            return;
        }
}

/* `got` bytes of the message, and nothing else written. */
static void check(const unsigned char *region, size_t cap, size_t got, int src, int salt,
                  const char *what)
{
    const unsigned char *buf = region + GUARD;
    for (size_t i = 0; i < got; i++)
        if (buf[i] != pattern(src, salt, i)) {
            CHECK(0, "%s: byte %zu is %u, want %u", what, i, buf[i], pattern(src, salt, i));
            return;
        }
    check_untouched(region, cap, got, what);
}

static unsigned char *region(size_t cap)
{
    unsigned char *r = malloc(cap + 2 * GUARD);
    memset(r, 0xa5, cap + 2 * GUARD);
    return r;
}

int main(int argc, char **argv)
{
    lt_init("shared_copy", &argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int peer = lt_rank ^ 1;
    int active = peer < lt_size;
    const size_t sizes[] = {16385, (64 << 10) + 3, (256 << 10) - 1, 256 << 10, (256 << 10) + 1, (1 << 20) + 3,
                            (3 << 20) + 4097};
    const int nsizes = sizeof sizes / sizeof sizes[0];
    int salt = 0;

    for (int k = 0; k < nsizes && active; k++) {
        size_t n = sizes[k];
        unsigned char *out = malloc(n), *in = region(n);
        MPI_Status st;
        int count = -1;
        char what[64];

        /* One way, blocking, even rank sends. */
        salt++;
        snprintf(what, sizeof what, "send %zu", n);
        if (lt_rank % 2 == 0) {
            fill(out, n, lt_rank, salt);
            MPI_OK(MPI_Send(out, (int)n, MPI_BYTE, peer, k, MPI_COMM_WORLD));
        } else {
            MPI_OK(MPI_Recv(in + GUARD, (int)n, MPI_BYTE, peer, k, MPI_COMM_WORLD, &st));
            MPI_Get_count(&st, MPI_BYTE, &count);
            CHECK(count == (int)n, "%s: count %d", what, count);
            check(in, n, n, peer, salt, what);
        }

        /* Both ways at once: each rank is a sender and a receiver. */
        salt++;
        snprintf(what, sizeof what, "sendrecv %zu", n);
        memset(in, 0xa5, n + 2 * GUARD);
        fill(out, n, lt_rank, salt);
        MPI_OK(MPI_Sendrecv(out, (int)n, MPI_BYTE, peer, 100 + k, in + GUARD, (int)n, MPI_BYTE,
                            peer, 100 + k, MPI_COMM_WORLD, &st));
        check(in, n, n, peer, salt, what);

        /* Synchronous mode, and a receive found by probing first. */
        salt++;
        snprintf(what, sizeof what, "ssend+probe %zu", n);
        memset(in, 0xa5, n + 2 * GUARD);
        if (lt_rank % 2 == 1) {
            fill(out, n, lt_rank, salt);
            MPI_OK(MPI_Ssend(out, (int)n, MPI_BYTE, peer, 200 + k, MPI_COMM_WORLD));
        } else {
            MPI_OK(MPI_Probe(peer, 200 + k, MPI_COMM_WORLD, &st));
            MPI_Get_count(&st, MPI_BYTE, &count);
            CHECK(count == (int)n, "%s: probed count %d", what, count);
            MPI_OK(MPI_Recv(in + GUARD, (int)n, MPI_BYTE, peer, 200 + k, MPI_COMM_WORLD, &st));
            check(in, n, n, peer, salt, what);
        }

        /* Truncation: the receive holds a little over half the message. */
        salt++;
        snprintf(what, sizeof what, "truncated %zu", n);
        size_t cap = n / 2 + 4099;
        memset(in, 0xa5, n + 2 * GUARD);
        if (lt_rank % 2 == 0) {
            fill(out, n, lt_rank, salt);
            MPI_OK(MPI_Send(out, (int)n, MPI_BYTE, peer, 300 + k, MPI_COMM_WORLD));
        } else {
            int rc = MPI_Recv(in + GUARD, (int)cap, MPI_BYTE, peer, 300 + k, MPI_COMM_WORLD, &st);
            int cls = -1;
            MPI_Error_class(rc, &cls);
            CHECK(cls == MPI_ERR_TRUNCATE, "%s: error class %d, want MPI_ERR_TRUNCATE", what, cls);
            /* MPI leaves the buffer's contents undefined; nothing past it
             * may change. */
            check_untouched(in, n, cap, what);
        }
        free(out);
        free(in);
    }

    /* A window of nonblocking transfers (the bandwidth pattern), then a
     * sender that computes outside MPI before it waits. */
    if (active) {
        const int window = 8;
        const size_t n = 1 << 20;
        unsigned char *out = malloc(n * window), *in = region(n * window);
        MPI_Request req[8];
        MPI_Status sts[8];
        salt++;
        if (lt_rank % 2 == 0) {
            for (int w = 0; w < window; w++) {
                fill(out + n * w, n, lt_rank, salt + w);
                MPI_OK(MPI_Isend(out + n * w, (int)n, MPI_BYTE, peer, 400 + w, MPI_COMM_WORLD,
                                 &req[w]));
            }
            MPI_OK(MPI_Waitall(window, req, sts));
        } else {
            for (int w = 0; w < window; w++)
                MPI_OK(MPI_Irecv(in + GUARD + n * w, (int)n, MPI_BYTE, peer, 400 + w,
                                 MPI_COMM_WORLD, &req[w]));
            MPI_OK(MPI_Waitall(window, req, sts));
            for (int w = 0; w < window; w++)
                for (size_t i = 0; i < n; i++)
                    if (in[GUARD + n * w + i] != pattern(peer, salt + w, i)) {
                        CHECK(0, "window %d: byte %zu", w, i);
                        break;
                    }
        }
        salt += window;
        if (lt_rank % 2 == 0) {
            fill(out, n, lt_rank, salt);
            MPI_OK(MPI_Isend(out, (int)n, MPI_BYTE, peer, 500, MPI_COMM_WORLD, &req[0]));
            lt_sleep_ms(50);
            MPI_OK(MPI_Wait(&req[0], MPI_STATUS_IGNORE));
        } else {
            memset(in, 0xa5, n * window + 2 * GUARD);
            MPI_OK(MPI_Recv(in + GUARD, (int)n, MPI_BYTE, peer, 500, MPI_COMM_WORLD,
                            MPI_STATUS_IGNORE));
            check(in, n * window, n, peer, salt, "late sender");
        }
        free(out);
        free(in);
    }
    return lt_finish();
}
