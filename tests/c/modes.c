/* Send modes: synchronous (Ssend/Issend), ready (Rsend/Irsend) and
 * buffered (Bsend/Ibsend with Buffer_attach/Buffer_detach). */
#include "lt.h"

#define SYNC_LEN 100000 /* large enough that it is not just a tiny eager send */

/* An Issend must not complete before the receiver has posted the receive.
 * Pairs (2k, 2k+1); an unpaired last rank does it with itself. */
static void issend_waits_for_receiver(void)
{
    int partner = (lt_rank % 2 == 0) ? lt_rank + 1 : lt_rank - 1;
    int sender, receiver, i, flag = 0;
    static const int lens[] = {1, 1000, SYNC_LEN};
    int len, li;
    static int out[SYNC_LEN], in[SYNC_LEN];
    MPI_Request req;
    MPI_Status st;
    if (partner >= lt_size)
        partner = lt_rank;
    sender = (lt_rank % 2 == 0) || partner == lt_rank;
    receiver = (lt_rank % 2 == 1) || partner == lt_rank;

    for (li = 0; li < 3; li++) {
        len = lens[li];
        for (i = 0; i < len; i++)
            out[i] = lt_rank * 7 + i + len;
        if (sender) {
            MPI_OK(MPI_Issend(out, len, MPI_INT, partner, 1, MPI_COMM_WORLD, &req));
            for (i = 0; i < 20 && !flag; i++) {
                MPI_OK(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
                lt_sleep_ms(1);
            }
            CHECK(!flag, "Issend (len %d) completed before the receive was posted", len);
        }
        MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
        if (receiver) {
            MPI_OK(MPI_Recv(in, len, MPI_INT, partner, 1, MPI_COMM_WORLD, &st));
            for (i = 0; i < len; i++)
                CHECK(in[i] == partner * 7 + i + len, "issend data[%d]=%d", i, in[i]);
        }
        if (sender && !flag)
            MPI_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        flag = 0;
        MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    }
}

/* Blocking Ssend around the ring (receive pre-posted to avoid deadlock). */
static void ssend_ring(void)
{
    int out[64], in[64], i;
    MPI_Request req;
    for (i = 0; i < 64; i++)
        out[i] = lt_rank + i * 3;
    MPI_OK(MPI_Irecv(in, 64, MPI_INT, lt_prev(), 2, MPI_COMM_WORLD, &req));
    MPI_OK(MPI_Ssend(out, 64, MPI_INT, lt_next(), 2, MPI_COMM_WORLD));
    MPI_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    for (i = 0; i < 64; i++)
        CHECK(in[i] == lt_prev() + i * 3, "ssend data[%d]=%d", i, in[i]);
}

/* Ready sends: the receive is posted before the barrier, the send after. */
static void ready_sends(void)
{
    static double out[2][5000], in[2][5000];
    int i, k;
    MPI_Request rreq[2], sreq;
    for (k = 0; k < 2; k++)
        for (i = 0; i < 5000; i++)
            out[k][i] = lt_rank + k * 0.5 + i;
    MPI_OK(MPI_Irecv(in[0], 5000, MPI_DOUBLE, lt_prev(), 3, MPI_COMM_WORLD, &rreq[0]));
    MPI_OK(MPI_Irecv(in[1], 5000, MPI_DOUBLE, lt_prev(), 4, MPI_COMM_WORLD, &rreq[1]));
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_OK(MPI_Rsend(out[0], 5000, MPI_DOUBLE, lt_next(), 3, MPI_COMM_WORLD));
    MPI_OK(MPI_Irsend(out[1], 5000, MPI_DOUBLE, lt_next(), 4, MPI_COMM_WORLD, &sreq));
    MPI_OK(MPI_Wait(&sreq, MPI_STATUS_IGNORE));
    MPI_OK(MPI_Waitall(2, rreq, MPI_STATUSES_IGNORE));
    for (k = 0; k < 2; k++)
        for (i = 0; i < 5000; i++)
            CHECK(in[k][i] == lt_prev() + k * 0.5 + i, "rsend %d data[%d]=%g", k, i, in[k][i]);
    /* Ready send to self with the receive already posted. */
    MPI_OK(MPI_Irecv(in[0], 10, MPI_DOUBLE, lt_rank, 5, MPI_COMM_WORLD, &rreq[0]));
    MPI_OK(MPI_Rsend(out[0], 10, MPI_DOUBLE, lt_rank, 5, MPI_COMM_WORLD));
    MPI_OK(MPI_Wait(&rreq[0], MPI_STATUS_IGNORE));
    CHECK(memcmp(in[0], out[0], 10 * sizeof(double)) == 0, "rsend to self data differs");
}

/* Buffered sends complete locally, even with no receive posted. */
static void buffered_sends(void)
{
    enum { NB = 10, LEN = 1000, BIG = 300000 };
    int size = NB * (LEN + MPI_BSEND_OVERHEAD) + BIG + 2 * MPI_BSEND_OVERHEAD + 64;
    char *attach = malloc((size_t)size), *detached = NULL;
    static char out[NB][LEN], big[BIG], in[BIG];
    int k, i, detached_size = 0;
    MPI_Request req;
    MPI_Status st;

    MPI_OK(MPI_Buffer_attach(attach, size));
    /* To self: nothing is posted, so only buffering lets these return. */
    for (k = 0; k < NB; k++) {
        for (i = 0; i < LEN; i++)
            out[k][i] = (char)(k * 17 + i + lt_rank);
        MPI_OK(MPI_Bsend(out[k], LEN, MPI_CHAR, lt_rank, 6, MPI_COMM_WORLD));
    }
    for (i = 0; i < BIG; i++)
        big[i] = (char)(i * 5 + lt_rank);
    MPI_OK(MPI_Ibsend(big, BIG, MPI_CHAR, lt_rank, 7, MPI_COMM_WORLD, &req));
    MPI_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    /* The user buffers may be reused right away. */
    memset(out, 0, sizeof out);
    memset(big, 0, sizeof big);
    for (k = 0; k < NB; k++) {
        MPI_OK(MPI_Recv(in, LEN, MPI_CHAR, lt_rank, 6, MPI_COMM_WORLD, &st));
        for (i = 0; i < LEN; i++)
            if (in[i] != (char)(k * 17 + i + lt_rank)) {
                CHECK(0, "bsend self message %d byte %d wrong", k, i);
                break;
            }
    }
    MPI_OK(MPI_Recv(in, BIG, MPI_CHAR, lt_rank, 7, MPI_COMM_WORLD, &st));
    for (i = 0; i < BIG; i++)
        if (in[i] != (char)(i * 5 + lt_rank)) {
            CHECK(0, "ibsend self byte %d wrong", i);
            break;
        }

    /* Around the ring. */
    for (i = 0; i < LEN; i++)
        out[0][i] = (char)(lt_rank + i);
    MPI_OK(MPI_Bsend(out[0], LEN, MPI_CHAR, lt_next(), 8, MPI_COMM_WORLD));
    MPI_OK(MPI_Recv(in, LEN, MPI_CHAR, lt_prev(), 8, MPI_COMM_WORLD, &st));
    for (i = 0; i < LEN; i++)
        if (in[i] != (char)(lt_prev() + i)) {
            CHECK(0, "bsend ring byte %d wrong", i);
            break;
        }

    MPI_OK(MPI_Buffer_detach(&detached, &detached_size));
    CHECK(detached == attach, "Buffer_detach returned %p, attached %p", (void *)detached,
          (void *)attach);
    CHECK(detached_size == size, "Buffer_detach size %d, attached %d", detached_size, size);
    free(attach);
}

int main(int argc, char **argv)
{
    lt_init("modes", &argc, &argv);
    issend_waits_for_receiver();
    ssend_ring();
    ready_sends();
    buffered_sends();
    return lt_finish();
}
