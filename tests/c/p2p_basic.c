/* Basic point-to-point: ring exchanges, Sendrecv(_replace), self sends,
 * zero-byte messages and MPI_PROC_NULL semantics. */
#include "lt.h"

#define N 1000

static int value(int src, int round, int i) { return src * 100000 + round * 1000 + i; }

static void check_status(MPI_Status *st, int src, int tag, MPI_Datatype t, int count,
                         const char *what)
{
    int c = -1;
    MPI_Get_count(st, t, &c);
    CHECK(st->MPI_SOURCE == src, "%s: status source %d, want %d", what, st->MPI_SOURCE, src);
    CHECK(st->MPI_TAG == tag, "%s: status tag %d, want %d", what, st->MPI_TAG, tag);
    CHECK(c == count, "%s: count %d, want %d", what, c, count);
}

static void ring_blocking_pairs(void)
{
    /* Even ranks send first, odd ranks receive first: no reliance on eager. */
    int partner = (lt_rank % 2 == 0) ? lt_rank + 1 : lt_rank - 1;
    int out[N], in[N], i;
    MPI_Status st;
    if (partner >= lt_size)
        return;
    for (i = 0; i < N; i++)
        out[i] = value(lt_rank, 0, i);
    memset(in, 0, sizeof in);
    if (lt_rank % 2 == 0) {
        MPI_OK(MPI_Send(out, N, MPI_INT, partner, 10, MPI_COMM_WORLD));
        MPI_OK(MPI_Recv(in, N, MPI_INT, partner, 11, MPI_COMM_WORLD, &st));
        check_status(&st, partner, 11, MPI_INT, N, "pair recv");
    } else {
        MPI_OK(MPI_Recv(in, N, MPI_INT, partner, 10, MPI_COMM_WORLD, &st));
        check_status(&st, partner, 10, MPI_INT, N, "pair recv");
        MPI_OK(MPI_Send(out, N, MPI_INT, partner, 11, MPI_COMM_WORLD));
    }
    for (i = 0; i < N; i++)
        CHECK(in[i] == value(partner, 0, i), "pair data[%d]=%d", i, in[i]);
}

static void ring_sendrecv(void)
{
    int out[N], in[N], i, round;
    MPI_Status st;
    for (round = 1; round <= 3; round++) {
        for (i = 0; i < N; i++)
            out[i] = value(lt_rank, round, i);
        memset(in, 0xff, sizeof in);
        MPI_OK(MPI_Sendrecv(out, N, MPI_INT, lt_next(), round, in, N, MPI_INT, lt_prev(),
                            round, MPI_COMM_WORLD, &st));
        check_status(&st, lt_prev(), round, MPI_INT, N, "sendrecv");
        for (i = 0; i < N; i++)
            CHECK(in[i] == value(lt_prev(), round, i), "sendrecv round %d data[%d]=%d", round,
                  i, in[i]);
    }
}

static void ring_sendrecv_replace(void)
{
    double buf[N];
    int i, hop;
    MPI_Status st;
    for (i = 0; i < N; i++)
        buf[i] = lt_rank * 1.5 + i;
    /* After `size` hops the data comes home; after each hop it belongs to
     * the rank `hop` steps behind. */
    for (hop = 1; hop <= lt_size; hop++) {
        int owner = (lt_rank - hop % lt_size + lt_size) % lt_size;
        MPI_OK(MPI_Sendrecv_replace(buf, N, MPI_DOUBLE, lt_next(), 20 + hop, lt_prev(),
                                    20 + hop, MPI_COMM_WORLD, &st));
        check_status(&st, lt_prev(), 20 + hop, MPI_DOUBLE, N, "sendrecv_replace");
        for (i = 0; i < N; i++)
            CHECK(buf[i] == owner * 1.5 + i, "replace hop %d data[%d]=%g", hop, i, buf[i]);
    }
}

static void ring_nonblocking(void)
{
    int out[N], in[N], i;
    MPI_Request req[2];
    MPI_Status st[2];
    for (i = 0; i < N; i++)
        out[i] = value(lt_rank, 7, i);
    MPI_OK(MPI_Irecv(in, N, MPI_INT, lt_prev(), 30, MPI_COMM_WORLD, &req[0]));
    MPI_OK(MPI_Isend(out, N, MPI_INT, lt_next(), 30, MPI_COMM_WORLD, &req[1]));
    MPI_OK(MPI_Waitall(2, req, st));
    CHECK(req[0] == MPI_REQUEST_NULL && req[1] == MPI_REQUEST_NULL, "requests not nulled");
    check_status(&st[0], lt_prev(), 30, MPI_INT, N, "irecv");
    for (i = 0; i < N; i++)
        CHECK(in[i] == value(lt_prev(), 7, i), "nonblocking data[%d]=%d", i, in[i]);
}

static void self_send(void)
{
    char out[300], in[300];
    int i;
    MPI_Request req;
    MPI_Status st;
    for (i = 0; i < 300; i++)
        out[i] = (char)(i * 3 + lt_rank);
    MPI_OK(MPI_Isend(out, 300, MPI_CHAR, lt_rank, 40, MPI_COMM_WORLD, &req));
    MPI_OK(MPI_Recv(in, 300, MPI_CHAR, lt_rank, 40, MPI_COMM_WORLD, &st));
    MPI_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    check_status(&st, lt_rank, 40, MPI_CHAR, 300, "self recv");
    CHECK(memcmp(in, out, 300) == 0, "self data mismatch");

    /* Self send through COMM_SELF too. */
    MPI_OK(MPI_Isend(out, 10, MPI_CHAR, 0, 41, MPI_COMM_SELF, &req));
    MPI_OK(MPI_Recv(in, 300, MPI_CHAR, 0, 41, MPI_COMM_SELF, &st));
    MPI_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    check_status(&st, 0, 41, MPI_CHAR, 10, "comm_self recv");
    CHECK(memcmp(in, out, 10) == 0, "comm_self data mismatch");
}

static void zero_byte(void)
{
    int dummy = 12345;
    MPI_Request req;
    MPI_Status st;
    /* Zero-count messages with a real buffer and with a NULL buffer. */
    MPI_OK(MPI_Isend(&dummy, 0, MPI_INT, lt_next(), 50, MPI_COMM_WORLD, &req));
    MPI_OK(MPI_Recv(&dummy, 0, MPI_INT, lt_prev(), 50, MPI_COMM_WORLD, &st));
    MPI_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    check_status(&st, lt_prev(), 50, MPI_INT, 0, "zero-byte recv");
    CHECK(dummy == 12345, "zero-byte recv wrote the buffer");

    MPI_OK(MPI_Isend(NULL, 0, MPI_BYTE, lt_next(), 51, MPI_COMM_WORLD, &req));
    /* A zero-byte message matches a larger receive; count must be 0. */
    MPI_OK(MPI_Recv(&dummy, 1, MPI_INT, lt_prev(), 51, MPI_COMM_WORLD, &st));
    MPI_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    check_status(&st, lt_prev(), 51, MPI_INT, 0, "zero-byte into larger recv");
    CHECK(dummy == 12345, "zero-byte recv wrote the buffer");
}

static void proc_null(void)
{
    int buf[4] = {1, 2, 3, 4};
    MPI_Request req;
    MPI_Status st;
    int flag = 0;

    MPI_OK(MPI_Send(buf, 4, MPI_INT, MPI_PROC_NULL, 60, MPI_COMM_WORLD));
    MPI_OK(MPI_Ssend(buf, 4, MPI_INT, MPI_PROC_NULL, 60, MPI_COMM_WORLD));

    st.MPI_SOURCE = 77;
    st.MPI_TAG = 77;
    MPI_OK(MPI_Recv(buf, 4, MPI_INT, MPI_PROC_NULL, 60, MPI_COMM_WORLD, &st));
    check_status(&st, MPI_PROC_NULL, MPI_ANY_TAG, MPI_INT, 0, "recv PROC_NULL");
    CHECK(buf[0] == 1 && buf[3] == 4, "recv PROC_NULL modified the buffer");

    MPI_OK(MPI_Irecv(buf, 4, MPI_INT, MPI_PROC_NULL, 61, MPI_COMM_WORLD, &req));
    MPI_OK(MPI_Wait(&req, &st));
    /* MPICH 4.0.2 returns source 0 / tag 0 here, against the standard. */
    if (!lt_running_on_mpich())
        check_status(&st, MPI_PROC_NULL, MPI_ANY_TAG, MPI_INT, 0, "irecv PROC_NULL wait");
    MPI_OK(MPI_Irecv(buf, 4, MPI_INT, MPI_PROC_NULL, 61, MPI_COMM_WORLD, &req));
    MPI_OK(MPI_Test(&req, &flag, &st));
    CHECK(flag, "Irecv PROC_NULL not complete at first Test");
    if (!flag)
        MPI_OK(MPI_Wait(&req, &st));
    if (!lt_running_on_mpich())
        check_status(&st, MPI_PROC_NULL, MPI_ANY_TAG, MPI_INT, 0, "irecv PROC_NULL test");

    MPI_OK(MPI_Isend(buf, 4, MPI_INT, MPI_PROC_NULL, 61, MPI_COMM_WORLD, &req));
    MPI_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK(req == MPI_REQUEST_NULL, "Isend PROC_NULL request not nulled");

    MPI_OK(MPI_Sendrecv(buf, 4, MPI_INT, MPI_PROC_NULL, 62, buf, 4, MPI_INT, MPI_PROC_NULL, 62,
                        MPI_COMM_WORLD, &st));
    check_status(&st, MPI_PROC_NULL, MPI_ANY_TAG, MPI_INT, 0, "sendrecv PROC_NULL");

    /* Open chain: rank 0 has no left neighbour, the last has no right one. */
    {
        int left = lt_rank == 0 ? MPI_PROC_NULL : lt_rank - 1;
        int right = lt_rank == lt_size - 1 ? MPI_PROC_NULL : lt_rank + 1;
        int out = lt_rank * 11, in = -1;
        MPI_OK(MPI_Sendrecv(&out, 1, MPI_INT, right, 63, &in, 1, MPI_INT, left, 63,
                            MPI_COMM_WORLD, &st));
        if (left == MPI_PROC_NULL) {
            CHECK(in == -1, "chain: PROC_NULL source wrote %d", in);
            check_status(&st, MPI_PROC_NULL, MPI_ANY_TAG, MPI_INT, 0, "chain PROC_NULL");
        } else {
            CHECK(in == left * 11, "chain: got %d want %d", in, left * 11);
            check_status(&st, left, 63, MPI_INT, 1, "chain recv");
        }
    }
}

int main(int argc, char **argv)
{
    lt_init("p2p_basic", &argc, &argv);
    ring_blocking_pairs();
    ring_sendrecv();
    ring_sendrecv_replace();
    ring_nonblocking();
    self_send();
    zero_byte();
    proc_null();
    return lt_finish();
}
