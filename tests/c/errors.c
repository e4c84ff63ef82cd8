/* Error classes under MPI_ERRORS_RETURN, truncation semantics, and a
 * working job afterwards. */
#include "lt.h"
#include <limits.h>

static void expect_class(int rc, int want, const char *what)
{
    int cls = -1;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (rc == MPI_SUCCESS) {
        CHECK(0, "%s: returned MPI_SUCCESS, want error class %d", what, want);
        return;
    }
    MPI_Error_class(rc, &cls);
    msg[0] = 0;
    MPI_Error_string(rc, msg, &len);
    CHECK(cls == want, "%s: error class %d (%s), want %d", what, cls, msg, want);
    CHECK(len > 0 && len < MPI_MAX_ERROR_STRING && (int)strlen(msg) == len,
          "%s: Error_string length %d", what, len);
    /* A returned code says which call failed, not just its class. */
    CHECK(strstr(msg, "MPI_") != NULL, "%s: Error_string names no MPI function: \"%s\"", what,
          msg);
}

/* The returned code's text names the function and the cause; its class is
 * still the class, and the class's own text is unchanged. */
static void code_texts(void)
{
    int buf = 0, cls = -1, len = 0;
    char msg[MPI_MAX_ERROR_STRING], ctext[MPI_MAX_ERROR_STRING];
    int rc = MPI_Send(&buf, 1, MPI_INT, lt_size, 0, MPI_COMM_WORLD);
    MPI_OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_RANK, "class of the bad-rank code: %d", cls);
    MPI_OK(MPI_Error_string(rc, msg, &len));
    CHECK(strstr(msg, "MPI_Send") && (strstr(msg, "rank") || strstr(msg, "Rank")),
          "bad-rank code's text: \"%s\"", msg);
    MPI_OK(MPI_Error_string(MPI_ERR_RANK, ctext, &len));
    CHECK(strstr(ctext, "rank") || strstr(ctext, "Rank"), "MPI_ERR_RANK's text: \"%s\"", ctext);
    /* Many failures later the code still has its class. */
    for (int i = 0; i < 1000; i++)
        (void)MPI_Send(&buf, -1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    MPI_OK(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_RANK, "class of an old code: %d", cls);
}

static void argument_errors(void)
{
    int buf[4] = {0, 0, 0, 0}, *ub = NULL, flag = 0, rc, dummy = -1;
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Status st;

    expect_class(MPI_Send(buf, 1, MPI_INT, lt_size, 0, MPI_COMM_WORLD), MPI_ERR_RANK,
                 "Send to rank == size");
    expect_class(MPI_Send(buf, 1, MPI_INT, -7, 0, MPI_COMM_WORLD), MPI_ERR_RANK,
                 "Send to rank -7");
    expect_class(MPI_Recv(buf, 1, MPI_INT, lt_size, 0, MPI_COMM_WORLD, &st), MPI_ERR_RANK,
                 "Recv from rank == size");
    expect_class(MPI_Isend(buf, 1, MPI_INT, lt_size + 3, 0, MPI_COMM_WORLD, &req), MPI_ERR_RANK,
                 "Isend to rank size+3");
    expect_class(MPI_Send(buf, 1, MPI_INT, 0, -5, MPI_COMM_WORLD), MPI_ERR_TAG,
                 "Send with tag -5");
    expect_class(MPI_Send(buf, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD), MPI_ERR_TAG,
                 "Send with MPI_ANY_TAG");
    expect_class(MPI_Irecv(buf, 1, MPI_INT, 0, -5, MPI_COMM_WORLD, &req), MPI_ERR_TAG,
                 "Irecv with tag -5");
    MPI_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag));
    if (flag && ub && *ub < INT_MAX)
        expect_class(MPI_Send(buf, 1, MPI_INT, 0, *ub + 1, MPI_COMM_WORLD), MPI_ERR_TAG,
                     "Send with tag TAG_UB+1");
    expect_class(MPI_Send(buf, -1, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_COUNT,
                 "Send with count -1");
    expect_class(MPI_Recv(buf, -3, MPI_INT, 0, 0, MPI_COMM_WORLD, &st), MPI_ERR_COUNT,
                 "Recv with count -3");
    expect_class(MPI_Send(buf, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE,
                 "Send with MPI_DATATYPE_NULL");
    expect_class(MPI_Send(buf, 1, MPI_INT, 0, 0, MPI_COMM_NULL), MPI_ERR_COMM,
                 "Send on MPI_COMM_NULL");
    expect_class(MPI_Comm_rank(MPI_COMM_NULL, &dummy), MPI_ERR_COMM, "Comm_rank(COMM_NULL)");
    expect_class(MPI_Send(NULL, 4, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER,
                 "Send NULL buffer, count 4");
    expect_class(MPI_Recv(NULL, 4, MPI_INT, 0, 0, MPI_COMM_WORLD, &st), MPI_ERR_BUFFER,
                 "Recv NULL buffer, count 4");
    rc = MPI_Bcast(buf, 1, MPI_INT, lt_size, MPI_COMM_WORLD);
    expect_class(rc, MPI_ERR_ROOT, "Bcast with root == size");
    expect_class(MPI_Allreduce(buf, buf + 2, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD),
                 MPI_ERR_OP, "Allreduce with MPI_OP_NULL");
}

/* Truncation: the call returns MPI_ERR_TRUNCATE, the message is consumed,
 * and multiple-completion calls report it per status. */
static void truncation(void)
{
    int big[10], small[5], one = -1, i, rc, cls = -1;
    int tail = 4242;
    MPI_Request sreq[2], rreq[2];
    MPI_Status st[2];

    for (i = 0; i < 10; i++)
        big[i] = 100 + i;
    MPI_OK(MPI_Isend(big, 10, MPI_INT, lt_rank, 70, MPI_COMM_WORLD, &sreq[0]));
    MPI_OK(MPI_Isend(&tail, 1, MPI_INT, lt_rank, 70, MPI_COMM_WORLD, &sreq[1]));
    rc = MPI_Recv(small, 5, MPI_INT, lt_rank, 70, MPI_COMM_WORLD, &st[0]);
    expect_class(rc, MPI_ERR_TRUNCATE, "Recv of 10 ints into 5");
    CHECK(st[0].MPI_SOURCE == lt_rank && st[0].MPI_TAG == 70, "truncated status %d/%d",
          st[0].MPI_SOURCE, st[0].MPI_TAG);
    /* The truncated message is gone: the next receive gets the tail. */
    MPI_OK(MPI_Recv(&one, 1, MPI_INT, lt_rank, 70, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(one == tail, "after truncation got %d, want %d", one, tail);
    MPI_Waitall(2, sreq, MPI_STATUSES_IGNORE);

    /* Irecv + Wait reports truncation from Wait. */
    MPI_OK(MPI_Isend(big, 10, MPI_INT, lt_rank, 71, MPI_COMM_WORLD, &sreq[0]));
    MPI_OK(MPI_Irecv(small, 3, MPI_INT, lt_rank, 71, MPI_COMM_WORLD, &rreq[0]));
    rc = MPI_Wait(&rreq[0], &st[0]);
    expect_class(rc, MPI_ERR_TRUNCATE, "Wait on truncated Irecv");
    MPI_Wait(&sreq[0], MPI_STATUS_IGNORE);

    /* Waitall: MPI_ERR_IN_STATUS, per-request error fields. */
    MPI_OK(MPI_Isend(big, 10, MPI_INT, lt_rank, 72, MPI_COMM_WORLD, &sreq[0]));
    MPI_OK(MPI_Isend(&tail, 1, MPI_INT, lt_rank, 73, MPI_COMM_WORLD, &sreq[1]));
    MPI_OK(MPI_Irecv(small, 2, MPI_INT, lt_rank, 72, MPI_COMM_WORLD, &rreq[0]));
    MPI_OK(MPI_Irecv(&one, 1, MPI_INT, lt_rank, 73, MPI_COMM_WORLD, &rreq[1]));
    st[0].MPI_ERROR = -1;
    st[1].MPI_ERROR = -1;
    rc = MPI_Waitall(2, rreq, st);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_IN_STATUS, "Waitall with a truncation: class %d want ERR_IN_STATUS",
          cls);
    MPI_Error_class(st[0].MPI_ERROR, &cls);
    CHECK(cls == MPI_ERR_TRUNCATE, "Waitall status[0].MPI_ERROR class %d want TRUNCATE", cls);
    /* The good request either completed or is reported pending (then it
     * is still active and must be waited on). */
    CHECK(st[1].MPI_ERROR == MPI_SUCCESS || st[1].MPI_ERROR == MPI_ERR_PENDING,
          "Waitall status[1].MPI_ERROR %d want SUCCESS or ERR_PENDING", st[1].MPI_ERROR);
    if (st[1].MPI_ERROR == MPI_ERR_PENDING)
        MPI_OK(MPI_Wait(&rreq[1], MPI_STATUS_IGNORE));
    CHECK(rreq[1] == MPI_REQUEST_NULL, "good request still active after completion");
    CHECK(one == tail, "Waitall good receive got %d", one);
    MPI_Waitall(2, sreq, MPI_STATUSES_IGNORE);
}

/* A member that sends more than its block holds: the member receiving
 * it gets MPI_ERR_TRUNCATE from the collective, nothing is written past
 * the block, the others succeed, and the job goes on. */
static void collective_truncation(void)
{
    int n = lt_size, i, sb[8], rb[8 * 9], sc[8], counts[8], displs[8], rc;
    if (n < 2 || n > 8)
        return;
    for (i = 0; i < 8; i++)
        sb[i] = 10 * lt_rank + i;
    for (i = 0; i < n; i++)
        counts[i] = 3, displs[i] = 4 * i, sc[i] = i == 1 ? 5 : 3;
    for (i = 0; i < 8 * 9; i++)
        rb[i] = -1;
    /* Gatherv: rank 1 sends 5 ints into its 3-int block at the root. */
    rc = MPI_Gatherv(sb, lt_rank == 1 ? 5 : 3, MPI_INT, rb, counts, displs, MPI_INT, 0,
                     MPI_COMM_WORLD);
    if (lt_rank == 0) {
        expect_class(rc, MPI_ERR_TRUNCATE, "Gatherv receiving 5 ints into 3");
        CHECK(rb[7] == -1, "Gatherv wrote past rank 1's block: %d", rb[7]);
        for (i = 0; i < 3; i++)
            CHECK(n < 3 || rb[8 + i] == 20 + i, "Gatherv rank 2's block [%d] = %d", i, rb[8 + i]);
    } else {
        CHECK(rc == MPI_SUCCESS, "Gatherv at a sender: returned %d", rc);
    }
    /* Scatterv: the root sends rank 1 five ints; it receives three. */
    for (i = 0; i < 8 * 9; i++)
        rb[i] = i;
    for (i = 0; i < n; i++)
        displs[i] = 5 * i;
    for (i = 0; i < 8; i++)
        sb[i] = -1;
    rc = MPI_Scatterv(rb, sc, displs, MPI_INT, sb, 3, MPI_INT, 0, MPI_COMM_WORLD);
    if (lt_rank == 1) {
        expect_class(rc, MPI_ERR_TRUNCATE, "Scatterv receiving 5 ints into 3");
        CHECK(sb[3] == -1, "Scatterv wrote past the receive buffer: %d", sb[3]);
    } else {
        CHECK(rc == MPI_SUCCESS, "Scatterv elsewhere: returned %d", rc);
    }
    /* Alltoallv: rank 0 sends rank 1 four ints where rank 1 expects two. */
    int scount[8], sdis[8], rcount[8], rdis[8];
    for (i = 0; i < n; i++) {
        scount[i] = lt_rank == 0 && i == 1 ? 4 : 2;
        rcount[i] = 2;
        sdis[i] = 4 * i;
        rdis[i] = 4 * i;
    }
    int a[32], b[32];
    for (i = 0; i < 32; i++)
        a[i] = lt_rank, b[i] = -1;
    rc = MPI_Alltoallv(a, scount, sdis, MPI_INT, b, rcount, rdis, MPI_INT, MPI_COMM_WORLD);
    if (lt_rank == 1) {
        expect_class(rc, MPI_ERR_TRUNCATE, "Alltoallv receiving 4 ints into 2");
        CHECK(b[2] == -1, "Alltoallv wrote past rank 0's block: %d", b[2]);
    } else {
        CHECK(rc == MPI_SUCCESS, "Alltoallv elsewhere: returned %d", rc);
    }
    /* The nonblocking form raises it from MPI_Wait, at the root only. */
    for (i = 0; i < n; i++)
        displs[i] = 4 * i;
    MPI_Request req;
    MPI_OK(MPI_Igatherv(sb, lt_rank == 1 ? 5 : 3, MPI_INT, rb, counts, displs, MPI_INT, 0,
                        MPI_COMM_WORLD, &req));
    rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    if (lt_rank == 0)
        expect_class(rc, MPI_ERR_TRUNCATE, "Wait on an Igatherv receiving 5 ints into 3");
    else
        CHECK(rc == MPI_SUCCESS, "Wait on an Igatherv at a sender: returned %d", rc);
    CHECK(req == MPI_REQUEST_NULL, "the failed Igatherv's request is still active");
    int one = 1, sum = 0;
    MPI_OK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == n, "allreduce after the truncations: %d", sum);
}

/* A completion call raises a request's error on the request's
 * communicator: its handler runs, not the world's (nor self's). Open MPI
 * does so for every completion call (the first failed request's); MPICH
 * 4.0 only for Wait and Test, the -any/-all forms and Mrecv going to no
 * communicator. This checks the former, so it is not run on MPICH. */
static int calls_on_c, calls_elsewhere;
static MPI_Comm c_of_test;

static void on_c(MPI_Comm *comm, int *code, ...)
{
    (void)code;
    calls_on_c += *comm == c_of_test;
    calls_elsewhere += *comm != c_of_test;
}

static void on_other(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    (void)code;
    calls_elsewhere++;
}

static void request_handlers(void)
{
    int big[10] = {0}, small[2], one = 0, idx = -1, flag = 0, rc, cls = -1;
    MPI_Errhandler eh_c, eh_other;
    MPI_Request rreq[2], sreq[2];
    MPI_Status st[2];
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &c_of_test));
    MPI_OK(MPI_Comm_create_errhandler(on_c, &eh_c));
    MPI_OK(MPI_Comm_create_errhandler(on_other, &eh_other));
    MPI_OK(MPI_Comm_set_errhandler(c_of_test, eh_c));
    MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh_other));
    MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, eh_other));

    /* Wait, Test, Waitany, Testany: the error returned, c's handler once. */
    for (int k = 0; k < 4; k++) {
        calls_on_c = calls_elsewhere = 0;
        MPI_OK(MPI_Irecv(small, 2, MPI_INT, lt_rank, 80 + k, c_of_test, &rreq[0]));
        MPI_OK(MPI_Send(big, 10, MPI_INT, lt_rank, 80 + k, c_of_test));
        if (k == 0)
            rc = MPI_Wait(&rreq[0], &st[0]);
        else if (k == 1)
            do
                rc = MPI_Test(&rreq[0], &flag, &st[0]);
            while (rc == MPI_SUCCESS && !flag);
        else if (k == 2)
            rc = MPI_Waitany(1, rreq, &idx, &st[0]);
        else
            do
                rc = MPI_Testany(1, rreq, &idx, &flag, &st[0]);
            while (rc == MPI_SUCCESS && !flag);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TRUNCATE, "completion %d of a truncated receive: class %d", k, cls);
        CHECK(calls_on_c == 1 && calls_elsewhere == 0,
              "completion %d: c's handler ran %d times, another %d times", k, calls_on_c,
              calls_elsewhere);
    }

    /* A matched probe's message: Mrecv and Imrecv + Wait raise on c. */
    for (int k = 0; k < 2; k++) {
        MPI_Message msg;
        calls_on_c = calls_elsewhere = 0;
        MPI_OK(MPI_Isend(big, 10, MPI_INT, lt_rank, 85, c_of_test, &sreq[0]));
        MPI_OK(MPI_Mprobe(lt_rank, 85, c_of_test, &msg, &st[0]));
        if (k == 0)
            rc = MPI_Mrecv(small, 2, MPI_INT, &msg, &st[0]);
        else {
            MPI_OK(MPI_Imrecv(small, 2, MPI_INT, &msg, &rreq[0]));
            rc = MPI_Wait(&rreq[0], &st[0]);
        }
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TRUNCATE, "%s of a truncated message: class %d",
              k ? "Imrecv" : "Mrecv", cls);
        CHECK(calls_on_c == 1 && calls_elsewhere == 0,
              "%s: c's handler ran %d times, another %d times", k ? "Imrecv" : "Mrecv", calls_on_c,
              calls_elsewhere);
        MPI_OK(MPI_Wait(&sreq[0], MPI_STATUS_IGNORE));
    }

    /* Waitall: MPI_ERR_IN_STATUS, on c as well. */
    calls_on_c = calls_elsewhere = 0;
    MPI_OK(MPI_Irecv(small, 2, MPI_INT, lt_rank, 90, c_of_test, &rreq[0]));
    MPI_OK(MPI_Irecv(&one, 1, MPI_INT, lt_rank, 91, c_of_test, &rreq[1]));
    MPI_OK(MPI_Isend(big, 10, MPI_INT, lt_rank, 90, c_of_test, &sreq[0]));
    MPI_OK(MPI_Isend(&one, 1, MPI_INT, lt_rank, 91, c_of_test, &sreq[1]));
    rc = MPI_Waitall(2, rreq, st);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_IN_STATUS, "Waitall on c: class %d", cls);
    CHECK(calls_on_c == 1 && calls_elsewhere == 0,
          "Waitall: c's handler ran %d times, another %d times", calls_on_c, calls_elsewhere);
    for (int i = 0; i < 2; i++)
        if (st[i].MPI_ERROR == MPI_ERR_PENDING)
            MPI_OK(MPI_Wait(&rreq[i], MPI_STATUS_IGNORE));
    MPI_OK(MPI_Waitall(2, sreq, MPI_STATUSES_IGNORE));

    /* Freed under pending requests, c lives on for them (MPI 4.1 7.4.3): a
     * communicator created next neither matches c's receives nor hears c's
     * errors, even where it reuses c's handle. */
    {
        MPI_Comm fresh, freed = c_of_test;
        int got = -1, never = -1, cancelled = 0;
        calls_on_c = calls_elsewhere = 0;
        MPI_OK(MPI_Irecv(small, 2, MPI_INT, lt_rank, 95, c_of_test, &rreq[0]));
        MPI_OK(MPI_Isend(big, 10, MPI_INT, lt_rank, 95, c_of_test, &sreq[0]));
        MPI_OK(MPI_Irecv(&never, 1, MPI_INT, lt_rank, 96, c_of_test, &rreq[1]));
        MPI_OK(MPI_Comm_free(&c_of_test));
        c_of_test = freed; /* what on_c compares against */
        MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &fresh));
        MPI_OK(MPI_Comm_set_errhandler(fresh, eh_other));
        MPI_OK(MPI_Sendrecv(&one, 1, MPI_INT, lt_rank, 96, &got, 1, MPI_INT, lt_rank, 96, fresh,
                            MPI_STATUS_IGNORE));
        CHECK(got == one && never == -1, "a new communicator's message went to a freed one's "
              "receive (got %d, the freed receive %d)", got, never);
        rc = MPI_Wait(&rreq[0], &st[0]);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TRUNCATE, "truncated receive on a freed communicator: class %d", cls);
        CHECK(calls_on_c == 1 && calls_elsewhere == 0,
              "freed communicator: its handler ran %d times, another %d times", calls_on_c,
              calls_elsewhere);
        MPI_OK(MPI_Wait(&sreq[0], MPI_STATUS_IGNORE));
        MPI_OK(MPI_Cancel(&rreq[1]));
        MPI_OK(MPI_Wait(&rreq[1], &st[1]));
        MPI_OK(MPI_Test_cancelled(&st[1], &cancelled));
        CHECK(cancelled, "the freed communicator's unmatched receive was not cancelled");
        MPI_OK(MPI_Comm_free(&fresh));
        c_of_test = MPI_COMM_NULL;
    }

    MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    MPI_OK(MPI_Errhandler_free(&eh_c));
    MPI_OK(MPI_Errhandler_free(&eh_other));
}

static void error_strings(void)
{
    static const int classes[] = {MPI_SUCCESS, MPI_ERR_RANK,     MPI_ERR_TAG,
                                  MPI_ERR_COUNT, MPI_ERR_TYPE,   MPI_ERR_COMM,
                                  MPI_ERR_BUFFER, MPI_ERR_TRUNCATE, MPI_ERR_OTHER,
                                  MPI_ERR_IN_STATUS, MPI_ERR_UNKNOWN, MPI_ERR_INTERN};
    int k;
    for (k = 0; k < (int)(sizeof classes / sizeof classes[0]); k++) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = -1, cls = -1;
        msg[0] = 0;
        MPI_OK(MPI_Error_string(classes[k], msg, &len));
        CHECK(len > 0 && (int)strlen(msg) == len, "Error_string(%d): len %d", classes[k], len);
        MPI_OK(MPI_Error_class(classes[k], &cls));
        CHECK(cls == classes[k], "Error_class(%d) = %d", classes[k], cls);
    }
}

/* After all the errors, the job still works. */
static void real_exchange(void)
{
    int out[256], in[256], i, sum = 0, want = 0;
    MPI_Status st;
    for (i = 0; i < 256; i++)
        out[i] = lt_rank * 256 + i;
    MPI_OK(MPI_Sendrecv(out, 256, MPI_INT, lt_next(), 80, in, 256, MPI_INT, lt_prev(), 80,
                        MPI_COMM_WORLD, &st));
    for (i = 0; i < 256; i++)
        CHECK(in[i] == lt_prev() * 256 + i, "post-error exchange data[%d]=%d", i, in[i]);
    MPI_OK(MPI_Allreduce(&lt_rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    for (i = 0; i < lt_size; i++)
        want += i;
    CHECK(sum == want, "post-error allreduce %d want %d", sum, want);
}

int main(int argc, char **argv)
{
    MPI_Errhandler eh;
    lt_init("errors", &argc, &argv);
    /* Errors without a usable communicator go to COMM_SELF (MPI-4) or
     * COMM_WORLD (MPI-3): make both return. */
    MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    MPI_OK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh));
    CHECK(eh == MPI_ERRORS_RETURN, "errhandler not ERRORS_RETURN after set");
    argument_errors();
    code_texts();
    truncation();
    collective_truncation();
    request_handlers();
    error_strings();
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    real_exchange();
    return lt_finish();
}
