/* Probe/Iprobe, matched probes (Mprobe/Improbe + Mrecv/Imrecv),
 * Get_count and Get_elements. */
#include "lt.h"

static int len_from(int src) { return 10 + src * 3; }

/* Probe for a message of unknown length, size the buffer, receive it. */
static void probe_then_recv(void)
{
    int n = len_from(lt_rank), i, count = -1, bytes = -1, elems = -1;
    int *out = malloc(sizeof(int) * (size_t)n), *in;
    MPI_Request req;
    MPI_Status st;
    for (i = 0; i < n; i++)
        out[i] = lt_rank * 100 + i;
    MPI_OK(MPI_Isend(out, n, MPI_INT, lt_next(), 7, MPI_COMM_WORLD, &req));
    MPI_OK(MPI_Probe(lt_prev(), 7, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_SOURCE == lt_prev() && st.MPI_TAG == 7, "probe: status %d/%d",
          st.MPI_SOURCE, st.MPI_TAG);
    MPI_Get_count(&st, MPI_INT, &count);
    MPI_Get_count(&st, MPI_BYTE, &bytes);
    MPI_Get_elements(&st, MPI_INT, &elems);
    CHECK(count == len_from(lt_prev()), "probe count %d want %d", count, len_from(lt_prev()));
    CHECK(bytes == 4 * len_from(lt_prev()), "probe byte count %d", bytes);
    CHECK(elems == len_from(lt_prev()), "probe elements %d", elems);
    if (count <= 0)
        count = 1;
    in = malloc(sizeof(int) * (size_t)count);
    MPI_OK(MPI_Recv(in, count, MPI_INT, lt_prev(), 7, MPI_COMM_WORLD, &st));
    for (i = 0; i < count && i < len_from(lt_prev()); i++)
        CHECK(in[i] == lt_prev() * 100 + i, "probe recv data[%d]=%d", i, in[i]);
    MPI_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    free(in);
    free(out);
}

/* Iprobe with wildcards polls until the message shows up. */
static void iprobe_wildcards(void)
{
    int out = lt_rank + 5000, in = -1, flag = 0;
    MPI_Request req;
    MPI_Status st;
    double t0;

    /* Nobody ever sends tag 999: Iprobe must say no. */
    MPI_OK(MPI_Iprobe(MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &flag, &st));
    CHECK(!flag, "Iprobe found a message with tag 999 that nobody sent");

    MPI_OK(MPI_Isend(&out, 1, MPI_INT, lt_next(), 8, MPI_COMM_WORLD, &req));
    t0 = MPI_Wtime();
    flag = 0;
    while (!flag && MPI_Wtime() - t0 < 30.0)
        MPI_OK(MPI_Iprobe(MPI_ANY_SOURCE, 8, MPI_COMM_WORLD, &flag, &st));
    CHECK(flag, "Iprobe never saw the message");
    CHECK(st.MPI_SOURCE == lt_prev() && st.MPI_TAG == 8, "iprobe status %d/%d",
          st.MPI_SOURCE, st.MPI_TAG);
    /* A second probe sees the same message: probing does not consume. */
    MPI_OK(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_SOURCE == lt_prev() && st.MPI_TAG == 8, "re-probe status %d/%d",
          st.MPI_SOURCE, st.MPI_TAG);
    MPI_OK(MPI_Recv(&in, 1, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st));
    CHECK(in == lt_prev() + 5000, "iprobe recv got %d", in);
    MPI_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
}

/* Mprobe removes the message from matching: a second Mprobe gets the next
 * one, and the two can be received in either order. */
static void mprobe_mrecv(void)
{
    int a[5], b[8], ina[5], inb[8], i, count;
    MPI_Request req[2];
    MPI_Message m1, m2;
    MPI_Status st;
    for (i = 0; i < 5; i++)
        a[i] = lt_rank * 10 + i;
    for (i = 0; i < 8; i++)
        b[i] = -(lt_rank * 10 + i);
    MPI_OK(MPI_Isend(a, 5, MPI_INT, lt_next(), 11, MPI_COMM_WORLD, &req[0]));
    MPI_OK(MPI_Isend(b, 8, MPI_INT, lt_next(), 11, MPI_COMM_WORLD, &req[1]));

    MPI_OK(MPI_Mprobe(lt_prev(), 11, MPI_COMM_WORLD, &m1, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == 5, "mprobe 1: count %d want 5", count);
    MPI_OK(MPI_Mprobe(lt_prev(), 11, MPI_COMM_WORLD, &m2, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == 8, "mprobe 2: count %d want 8", count);
    CHECK(m1 != MPI_MESSAGE_NULL && m2 != MPI_MESSAGE_NULL, "mprobe returned MESSAGE_NULL");

    MPI_OK(MPI_Mrecv(inb, 8, MPI_INT, &m2, &st));
    CHECK(m2 == MPI_MESSAGE_NULL, "Mrecv did not null the message handle");
    CHECK(st.MPI_SOURCE == lt_prev() && st.MPI_TAG == 11, "mrecv status %d/%d",
          st.MPI_SOURCE, st.MPI_TAG);
    MPI_OK(MPI_Mrecv(ina, 5, MPI_INT, &m1, &st));
    for (i = 0; i < 5; i++)
        CHECK(ina[i] == lt_prev() * 10 + i, "mrecv a[%d]=%d", i, ina[i]);
    for (i = 0; i < 8; i++)
        CHECK(inb[i] == -(lt_prev() * 10 + i), "mrecv b[%d]=%d", i, inb[i]);
    MPI_OK(MPI_Waitall(2, req, MPI_STATUSES_IGNORE));
}

/* Improbe with ANY_SOURCE, then Imrecv + Wait. */
static void improbe_imrecv(void)
{
    double out[100], in[100];
    int i, flag = 0, count = -1;
    MPI_Message msg = MPI_MESSAGE_NULL;
    MPI_Request sreq, rreq;
    MPI_Status st;
    double t0;
    for (i = 0; i < 100; i++)
        out[i] = lt_rank + i * 0.25;
    MPI_OK(MPI_Isend(out, 100, MPI_DOUBLE, lt_next(), 12, MPI_COMM_WORLD, &sreq));
    t0 = MPI_Wtime();
    while (!flag && MPI_Wtime() - t0 < 30.0)
        MPI_OK(MPI_Improbe(MPI_ANY_SOURCE, 12, MPI_COMM_WORLD, &flag, &msg, &st));
    CHECK(flag, "Improbe never matched");
    if (!flag)
        return;
    CHECK(st.MPI_SOURCE == lt_prev(), "improbe source %d want %d", st.MPI_SOURCE, lt_prev());
    MPI_Get_elements(&st, MPI_DOUBLE, &count);
    CHECK(count == 100, "improbe elements %d", count);
    MPI_OK(MPI_Imrecv(in, 100, MPI_DOUBLE, &msg, &rreq));
    CHECK(msg == MPI_MESSAGE_NULL, "Imrecv did not null the message handle");
    MPI_OK(MPI_Wait(&rreq, &st));
    CHECK(st.MPI_SOURCE == lt_prev() && st.MPI_TAG == 12, "imrecv status %d/%d",
          st.MPI_SOURCE, st.MPI_TAG);
    for (i = 0; i < 100; i++)
        CHECK(in[i] == lt_prev() + i * 0.25, "imrecv data[%d]=%g", i, in[i]);
    MPI_OK(MPI_Wait(&sreq, MPI_STATUS_IGNORE));
}

/* A matched probe on PROC_NULL yields MPI_MESSAGE_NO_PROC. */
static void mprobe_proc_null(void)
{
    MPI_Message msg;
    MPI_Status st;
    int buf = 42, count = -1, flag = 0;
    MPI_OK(MPI_Mprobe(MPI_PROC_NULL, 3, MPI_COMM_WORLD, &msg, &st));
    CHECK(msg == MPI_MESSAGE_NO_PROC, "Mprobe(PROC_NULL) did not give MESSAGE_NO_PROC");
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "Mprobe(PROC_NULL) source %d", st.MPI_SOURCE);
    MPI_OK(MPI_Mrecv(&buf, 1, MPI_INT, &msg, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && count == 0 && buf == 42,
          "Mrecv(NO_PROC) status %d count %d buf %d", st.MPI_SOURCE, count, buf);
    MPI_OK(MPI_Improbe(MPI_PROC_NULL, 3, MPI_COMM_WORLD, &flag, &msg, &st));
    CHECK(flag && msg == MPI_MESSAGE_NO_PROC, "Improbe(PROC_NULL) flag %d", flag);
    MPI_OK(MPI_Iprobe(MPI_PROC_NULL, 3, MPI_COMM_WORLD, &flag, &st));
    CHECK(flag && st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG,
          "Iprobe(PROC_NULL) flag %d source %d tag %d", flag, st.MPI_SOURCE, st.MPI_TAG);
}

/* Byte counts that are not a multiple of the type give MPI_UNDEFINED. */
static void count_undefined(void)
{
    char out[10] = "abcdefghi", in[16];
    int count = 0, elems = 0;
    MPI_Request req;
    MPI_Status st;
    MPI_OK(MPI_Isend(out, 10, MPI_BYTE, lt_rank, 13, MPI_COMM_WORLD, &req));
    MPI_OK(MPI_Recv(in, 16, MPI_BYTE, lt_rank, 13, MPI_COMM_WORLD, &st));
    MPI_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == MPI_UNDEFINED, "Get_count(INT) of 10 bytes = %d, want MPI_UNDEFINED", count);
    MPI_Get_count(&st, MPI_SHORT, &count);
    CHECK(count == 5, "Get_count(SHORT) of 10 bytes = %d", count);
    MPI_Get_elements(&st, MPI_CHAR, &elems);
    CHECK(elems == 10, "Get_elements(CHAR) = %d", elems);
    CHECK(memcmp(in, out, 10) == 0, "self bytes differ");
}

int main(int argc, char **argv)
{
    lt_init("probe", &argc, &argv);
    probe_then_recv();
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    iprobe_wildcards();
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    mprobe_mrecv();
    improbe_imrecv();
    mprobe_proc_null();
    count_undefined();
    return lt_finish();
}
