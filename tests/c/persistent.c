/* Persistent requests, Request_get_status, Request_free, and cancelling
 * receives. */
#include "lt.h"

#define LEN 500
#define ITERS 8

static int val(int src, int iter, int i) { return src * 1000000 + iter * 1000 + i; }

static void persistent_ring(void)
{
    int out[LEN], in[LEN], i, it;
    MPI_Request req[2];
    MPI_Status st[2];

    MPI_OK(MPI_Recv_init(in, LEN, MPI_INT, lt_prev(), 1, MPI_COMM_WORLD, &req[0]));
    MPI_OK(MPI_Send_init(out, LEN, MPI_INT, lt_next(), 1, MPI_COMM_WORLD, &req[1]));
    CHECK(req[0] != MPI_REQUEST_NULL && req[1] != MPI_REQUEST_NULL, "init gave REQUEST_NULL");

    /* An inactive persistent request completes at once with an empty status. */
    st[0].MPI_SOURCE = 55;
    st[0].MPI_TAG = 55;
    MPI_OK(MPI_Wait(&req[0], &st[0]));
    CHECK(req[0] != MPI_REQUEST_NULL, "Wait on inactive persistent request freed it");
    CHECK(st[0].MPI_SOURCE == MPI_ANY_SOURCE && st[0].MPI_TAG == MPI_ANY_TAG,
          "inactive Wait: status %d/%d, want empty", st[0].MPI_SOURCE, st[0].MPI_TAG);

    for (it = 0; it < ITERS; it++) {
        for (i = 0; i < LEN; i++) {
            out[i] = val(lt_rank, it, i);
            in[i] = -1;
        }
        if (it % 2 == 0) {
            MPI_OK(MPI_Startall(2, req));
            MPI_OK(MPI_Waitall(2, req, st));
        } else {
            MPI_OK(MPI_Start(&req[0]));
            MPI_OK(MPI_Start(&req[1]));
            MPI_OK(MPI_Wait(&req[1], &st[1]));
            MPI_OK(MPI_Wait(&req[0], &st[0]));
        }
        CHECK(req[0] != MPI_REQUEST_NULL && req[1] != MPI_REQUEST_NULL,
              "iteration %d: completion freed a persistent request", it);
        CHECK(st[0].MPI_SOURCE == lt_prev() && st[0].MPI_TAG == 1, "iteration %d: status %d/%d",
              it, st[0].MPI_SOURCE, st[0].MPI_TAG);
        for (i = 0; i < LEN; i++)
            if (in[i] != val(lt_prev(), it, i)) {
                CHECK(0, "iteration %d: data[%d]=%d", it, i, in[i]);
                break;
            }
    }
    MPI_OK(MPI_Request_free(&req[0]));
    MPI_OK(MPI_Request_free(&req[1]));
    CHECK(req[0] == MPI_REQUEST_NULL && req[1] == MPI_REQUEST_NULL,
          "Request_free did not null the handles");
}

/* Request_get_status reports without freeing; a later Wait frees. */
static void get_status(void)
{
    int in = -1, out = lt_rank * 3 + 1, flag = 1;
    MPI_Request rreq;
    MPI_Status st;
    double t0;
    MPI_OK(MPI_Irecv(&in, 1, MPI_INT, lt_prev(), 77, MPI_COMM_WORLD, &rreq));
    MPI_OK(MPI_Request_get_status(rreq, &flag, &st));
    CHECK(!flag, "get_status complete before anything was sent");
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_OK(MPI_Send(&out, 1, MPI_INT, lt_next(), 77, MPI_COMM_WORLD));
    t0 = MPI_Wtime();
    flag = 0;
    while (!flag && MPI_Wtime() - t0 < 30.0)
        MPI_OK(MPI_Request_get_status(rreq, &flag, &st));
    CHECK(flag, "get_status never reported completion");
    CHECK(rreq != MPI_REQUEST_NULL, "Request_get_status freed the request");
    CHECK(st.MPI_SOURCE == lt_prev() && st.MPI_TAG == 77, "get_status status %d/%d",
          st.MPI_SOURCE, st.MPI_TAG);
    CHECK(in == lt_prev() * 3 + 1, "get_status data %d", in);
    MPI_OK(MPI_Wait(&rreq, &st));
    CHECK(rreq == MPI_REQUEST_NULL, "Wait after get_status did not free");
    /* MPI_REQUEST_NULL: flag true, empty status. */
    MPI_OK(MPI_Request_get_status(MPI_REQUEST_NULL, &flag, &st));
    CHECK(flag, "get_status(REQUEST_NULL) flag 0");
}

/* A cancelled receive completes, reports cancelled, and does not consume
 * a message sent later with the same signature. */
static void cancel_receive(void)
{
    int in = -1, out = lt_rank + 900, flag = 0;
    MPI_Request req, sreq;
    MPI_Status st;

    MPI_OK(MPI_Irecv(&in, 1, MPI_INT, lt_prev(), 88, MPI_COMM_WORLD, &req));
    MPI_OK(MPI_Cancel(&req));
    MPI_OK(MPI_Wait(&req, &st));
    MPI_OK(MPI_Test_cancelled(&st, &flag));
    CHECK(flag, "Test_cancelled false for a cancelled unmatched receive");
    CHECK(in == -1, "cancelled receive wrote %d", in);

    /* Wildcard receive, cancelled with Test polling. */
    MPI_OK(MPI_Irecv(&in, 1, MPI_INT, MPI_ANY_SOURCE, 88, MPI_COMM_WORLD, &req));
    MPI_OK(MPI_Cancel(&req));
    flag = 0;
    while (!flag)
        MPI_OK(MPI_Test(&req, &flag, &st));
    MPI_OK(MPI_Test_cancelled(&st, &flag));
    CHECK(flag, "Test_cancelled false for a cancelled ANY_SOURCE receive");

    /* Persistent receive cancelled after Start. */
    MPI_OK(MPI_Recv_init(&in, 1, MPI_INT, lt_prev(), 88, MPI_COMM_WORLD, &req));
    MPI_OK(MPI_Start(&req));
    MPI_OK(MPI_Cancel(&req));
    MPI_OK(MPI_Wait(&req, &st));
    MPI_OK(MPI_Test_cancelled(&st, &flag));
    CHECK(flag, "Test_cancelled false for a cancelled persistent receive");
    MPI_OK(MPI_Request_free(&req));

    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_OK(MPI_Isend(&out, 1, MPI_INT, lt_next(), 88, MPI_COMM_WORLD, &sreq));
    MPI_OK(MPI_Recv(&in, 1, MPI_INT, lt_prev(), 88, MPI_COMM_WORLD, &st));
    CHECK(in == lt_prev() + 900, "after cancel got %d want %d", in, lt_prev() + 900);
    MPI_OK(MPI_Test_cancelled(&st, &flag));
    CHECK(!flag, "Test_cancelled true for a normal receive");
    MPI_OK(MPI_Wait(&sreq, MPI_STATUS_IGNORE));
}

/* Request_free on an active send: the message is still delivered. */
static void free_active_send(void)
{
    static int out[2000];
    int in[2000], i;
    MPI_Request req;
    for (i = 0; i < 2000; i++)
        out[i] = val(lt_rank, 99, i);
    MPI_OK(MPI_Isend(out, 2000, MPI_INT, lt_next(), 90, MPI_COMM_WORLD, &req));
    MPI_OK(MPI_Request_free(&req));
    CHECK(req == MPI_REQUEST_NULL, "Request_free did not null an active request");
    MPI_OK(MPI_Recv(in, 2000, MPI_INT, lt_prev(), 90, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (i = 0; i < 2000; i++)
        if (in[i] != val(lt_prev(), 99, i)) {
            CHECK(0, "freed-send data[%d]=%d", i, in[i]);
            break;
        }
    /* Everyone has received, so every freed send has completed. */
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
}

int main(int argc, char **argv)
{
    lt_init("persistent", &argc, &argv);
    persistent_ring();
    get_status();
    cancel_receive();
    free_active_send();
    return lt_finish();
}
