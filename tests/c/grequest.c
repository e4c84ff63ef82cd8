/*
 * Generalized requests: MPI_Grequest_start / MPI_Grequest_complete with
 * query_fn, free_fn and cancel_fn called as the standard says, under the
 * wait/test family, MPI_Request_get_status, MPI_Request_free and
 * MPI_Cancel; query_fn errors; and MPI_Grequest_complete from a second
 * thread while the main thread waits.
 *
 * Lanai provides MPI_THREAD_SERIALIZED but documents MPI_Grequest_complete
 * as safe from any thread at any time; MPICH provides MPI_THREAD_MULTIPLE.
 */
#include "lt.h"
#include <pthread.h>

typedef struct {
    int id;
    int queries, frees, cancels;
    int last_complete_flag; /* cancel_fn's `complete` argument */
    int query_rc;           /* what query_fn returns */
    int cancelled;          /* cancel_fn ran: query reports it */
    int frees_at_query;     /* free_fn calls seen when query_fn ran */
    pthread_t query_thread;
} greq_t;

static int query_fn(void *extra, MPI_Status *status)
{
    greq_t *g = extra;
    g->queries++;
    g->frees_at_query = g->frees;
    g->query_thread = pthread_self();
    MPI_Status_set_elements(status, MPI_INT, g->id + 1);
    MPI_Status_set_cancelled(status, g->cancelled);
    status->MPI_SOURCE = 1000 + g->id;
    status->MPI_TAG = 2000 + g->id;
    return g->query_rc;
}

static int free_fn(void *extra)
{
    ((greq_t *)extra)->frees++;
    return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete)
{
    greq_t *g = extra;
    g->cancels++;
    g->last_complete_flag = complete;
    if (!complete)
        g->cancelled = 1;
    return MPI_SUCCESS;
}

static void start(greq_t *g, int id, MPI_Request *r)
{
    memset(g, 0, sizeof *g);
    g->id = id;
    MPI_OK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, g, r));
}

typedef struct {
    MPI_Request req[2];
    int n;
    int delay_ms;
} completer_t;

static void *completer(void *arg)
{
    completer_t *c = arg;
    int i;
    for (i = 0; i < c->n; i++) {
        lt_sleep_ms(c->delay_ms);
        if (MPI_Grequest_complete(c->req[i]) != MPI_SUCCESS)
            return (void *)1;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided = 0, flag, n, cls, i;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    lt_after_init("grequest");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK(provided >= MPI_THREAD_SINGLE && provided <= MPI_THREAD_MULTIPLE, "provided %d", provided);

    greq_t a, b, c;
    MPI_Request r, rs[3];
    MPI_Status st, sts[3];

    /* Test before completion: not complete, no callback; after
     * MPI_Grequest_complete, Wait runs query_fn and then free_fn once. */
    start(&a, 3, &r);
    MPI_OK(MPI_Test(&r, &flag, &st));
    CHECK(!flag && a.queries == 0 && a.frees == 0, "test before complete: flag %d q %d f %d", flag,
          a.queries, a.frees);
    MPI_OK(MPI_Request_get_status(r, &flag, &st));
    CHECK(!flag && a.queries == 0, "get_status before complete: flag %d q %d", flag, a.queries);
    MPI_OK(MPI_Grequest_complete(r));
    CHECK(a.queries == 0 && a.frees == 0, "complete ran a callback");
    MPI_OK(MPI_Wait(&r, &st));
    CHECK(r == MPI_REQUEST_NULL, "wait left the request");
    CHECK(a.queries == 1 && a.frees == 1 && a.frees_at_query == 0, "wait: q %d f %d (free before query %d)",
          a.queries, a.frees, a.frees_at_query);
    MPI_OK(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == 4 && st.MPI_SOURCE == 1003 && st.MPI_TAG == 2003, "wait status %d/%d/%d", n,
          st.MPI_SOURCE, st.MPI_TAG);

    /* MPI_Request_get_status calls query_fn each time and keeps the
     * request; Test then completes it (query again, then free). */
    start(&a, 1, &r);
    MPI_OK(MPI_Grequest_complete(r));
    MPI_OK(MPI_Request_get_status(r, &flag, &st));
    CHECK(flag && a.queries == 1 && a.frees == 0 && r != MPI_REQUEST_NULL, "get_status: %d %d %d", flag,
          a.queries, a.frees);
    CHECK(st.MPI_TAG == 2001, "get_status tag %d", st.MPI_TAG);
    MPI_OK(MPI_Request_get_status(r, &flag, MPI_STATUS_IGNORE));
    CHECK(flag && a.queries == 2, "second get_status: q %d", a.queries);
    MPI_OK(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
    CHECK(flag && r == MPI_REQUEST_NULL && a.queries == 3 && a.frees == 1, "test: %d q %d f %d", flag,
          a.queries, a.frees);

    /* Freed before completion: MPI_Grequest_complete runs free_fn; no query. */
    start(&a, 0, &r);
    MPI_Request keep = r;
    MPI_OK(MPI_Request_free(&r));
    /* The standard: free_fn runs in whichever of the two calls comes last;
     * MPICH 4.0.2 runs it in MPI_Request_free already. */
    CHECK(r == MPI_REQUEST_NULL && (a.frees == 0 || lt_running_on_mpich()), "early free: f %d", a.frees);
    MPI_OK(MPI_Grequest_complete(keep));
    CHECK(a.frees == 1 && a.queries == 0, "complete after free: q %d f %d", a.queries, a.frees);

    /* Freed after completion: free_fn runs in MPI_Request_free; no query. */
    start(&a, 0, &r);
    MPI_OK(MPI_Grequest_complete(r));
    MPI_OK(MPI_Request_free(&r));
    CHECK(r == MPI_REQUEST_NULL && a.frees == 1 && a.queries == 0, "late free: q %d f %d", a.queries,
          a.frees);

    /* Cancel before and after completion. */
    start(&a, 2, &r);
    MPI_OK(MPI_Cancel(&r));
    CHECK(a.cancels == 1 && a.last_complete_flag == 0, "cancel: %d %d", a.cancels, a.last_complete_flag);
    MPI_OK(MPI_Grequest_complete(r));
    MPI_OK(MPI_Wait(&r, &st));
    MPI_OK(MPI_Test_cancelled(&st, &flag));
    CHECK(flag, "query_fn's cancelled flag lost");
    start(&a, 2, &r);
    MPI_OK(MPI_Grequest_complete(r));
    MPI_OK(MPI_Cancel(&r));
    CHECK(a.cancels == 1 && a.last_complete_flag == 1, "late cancel: %d %d", a.cancels,
          a.last_complete_flag);
    MPI_OK(MPI_Wait(&r, &st));
    MPI_OK(MPI_Test_cancelled(&st, &flag));
    CHECK(!flag, "cancelled after completion");

    /* Mixed with a real message: Waitall, Waitany, Testsome. */
    {
        int s = lt_rank + 5, v = -1, idx, out, ind[3];
        start(&a, 0, &rs[0]);
        MPI_OK(MPI_Irecv(&v, 1, MPI_INT, lt_prev(), 7, MPI_COMM_WORLD, &rs[1]));
        start(&b, 1, &rs[2]);
        MPI_OK(MPI_Send(&s, 1, MPI_INT, lt_next(), 7, MPI_COMM_WORLD));
        MPI_OK(MPI_Grequest_complete(rs[2]));
        MPI_OK(MPI_Grequest_complete(rs[0]));
        MPI_OK(MPI_Waitall(3, rs, sts));
        CHECK(v == lt_prev() + 5, "waitall message %d", v);
        CHECK(sts[0].MPI_TAG == 2000 && sts[2].MPI_TAG == 2001 && sts[1].MPI_TAG == 7,
              "waitall statuses %d %d %d", sts[0].MPI_TAG, sts[1].MPI_TAG, sts[2].MPI_TAG);
        CHECK(a.queries == 1 && a.frees == 1 && b.queries == 1 && b.frees == 1, "waitall callbacks");

        start(&a, 0, &rs[0]);
        start(&b, 1, &rs[1]);
        rs[2] = MPI_REQUEST_NULL;
        MPI_OK(MPI_Grequest_complete(rs[1]));
        MPI_OK(MPI_Waitany(3, rs, &idx, &st));
        CHECK(idx == 1 && st.MPI_TAG == 2001 && b.frees == 1, "waitany idx %d", idx);
        MPI_OK(MPI_Testsome(3, rs, &out, ind, sts));
        CHECK(out == 0, "testsome before complete: %d", out);
        MPI_OK(MPI_Grequest_complete(rs[0]));
        MPI_OK(MPI_Waitsome(3, rs, &out, ind, sts));
        CHECK(out == 1 && ind[0] == 0 && sts[0].MPI_TAG == 2000 && a.frees == 1, "waitsome %d", out);
    }

    /* query_fn errors: the single-completion call returns the error; the
     * multiple-completion calls return MPI_ERR_IN_STATUS with it there. */
    start(&a, 0, &r);
    a.query_rc = MPI_ERR_OTHER;
    MPI_OK(MPI_Grequest_complete(r));
    cls = -1;
    MPI_Error_class(MPI_Wait(&r, &st), &cls);
    CHECK(cls == MPI_ERR_OTHER, "wait with failing query: class %d", cls);
    start(&a, 0, &rs[0]);
    start(&b, 1, &rs[1]);
    b.query_rc = MPI_ERR_OTHER;
    MPI_OK(MPI_Grequest_complete(rs[0]));
    MPI_OK(MPI_Grequest_complete(rs[1]));
    for (i = 0; i < 2; i++)
        sts[i].MPI_ERROR = -77;
    n = MPI_Waitall(2, rs, sts);
    CHECK(n == MPI_ERR_IN_STATUS, "waitall with failing query: %d", n);
    CHECK(sts[0].MPI_ERROR == MPI_SUCCESS, "good status error %d", sts[0].MPI_ERROR);
    MPI_Error_class(sts[1].MPI_ERROR, &cls);
    CHECK(cls == MPI_ERR_OTHER, "failing status error %d", sts[1].MPI_ERROR);

    /* Another thread completes while this one waits inside MPI. */
    {
        pthread_t t;
        completer_t ct;
        void *ret = NULL;
        int idx;
        start(&a, 0, &ct.req[0]);
        ct.n = 1;
        ct.delay_ms = 200;
        r = ct.req[0];
        CHECK(pthread_create(&t, NULL, completer, &ct) == 0, "pthread_create");
        MPI_OK(MPI_Wait(&r, &st));
        pthread_join(t, &ret);
        CHECK(ret == NULL, "MPI_Grequest_complete failed in the thread");
        CHECK(a.queries == 1 && a.frees == 1 && st.MPI_TAG == 2000, "threaded wait: q %d f %d tag %d",
              a.queries, a.frees, st.MPI_TAG);
        CHECK(pthread_equal(a.query_thread, pthread_self()), "query_fn ran outside the waiting thread");

        start(&a, 0, &ct.req[0]);
        start(&b, 1, &ct.req[1]);
        start(&c, 2, &rs[2]);
        rs[0] = ct.req[0];
        rs[1] = ct.req[1];
        ct.n = 2;
        ct.delay_ms = 50;
        CHECK(pthread_create(&t, NULL, completer, &ct) == 0, "pthread_create");
        MPI_OK(MPI_Waitany(3, rs, &idx, &st));
        CHECK(idx == 0 && st.MPI_TAG == 2000, "threaded waitany %d", idx);
        MPI_OK(MPI_Wait(&rs[1], &st));
        CHECK(st.MPI_TAG == 2001, "threaded second %d", st.MPI_TAG);
        pthread_join(t, &ret);
        CHECK(ret == NULL, "MPI_Grequest_complete failed in the thread");
        MPI_OK(MPI_Grequest_complete(rs[2]));
        MPI_OK(MPI_Wait(&rs[2], MPI_STATUS_IGNORE));
        CHECK(c.queries == 1 && c.frees == 1, "ignored status still queried: %d %d", c.queries, c.frees);
    }

    return lt_finish();
}
