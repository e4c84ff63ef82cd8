/* Message ordering and matching: non-overtaking across eager/rendezvous
 * sizes, ANY_SOURCE / ANY_TAG with status fields, tags up to MPI_TAG_UB. */
#include "lt.h"

#define NMSG 40
#define MAXLEN (1 << 20)

static const int sizes[] = {1, 7, 1024, 16384, 65536, 262147, MAXLEN, 0, 5, 100000};
#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))

static unsigned char pattern(int src, int k, int i)
{
    return (unsigned char)(k * 31 + i * 7 + src * 13 + (i >> 9));
}

/* Many messages, same source and tag, mixed sizes: must arrive in order. */
static void non_overtaking(void)
{
    unsigned char *out[NMSG];
    unsigned char *in = malloc(MAXLEN);
    MPI_Request req[NMSG];
    int k, i;
    for (k = 0; k < NMSG; k++) {
        int len = sizes[k % NSIZES];
        out[k] = malloc(len ? len : 1);
        for (i = 0; i < len; i++)
            out[k][i] = pattern(lt_rank, k, i);
        MPI_OK(MPI_Isend(out[k], len, MPI_BYTE, lt_next(), 5, MPI_COMM_WORLD, &req[k]));
    }
    for (k = 0; k < NMSG; k++) {
        int len = sizes[k % NSIZES], count = -1, bad = -1;
        MPI_Status st;
        MPI_OK(MPI_Recv(in, MAXLEN, MPI_BYTE, lt_prev(), 5, MPI_COMM_WORLD, &st));
        MPI_Get_count(&st, MPI_BYTE, &count);
        CHECK(count == len, "message %d: count %d want %d (overtaken?)", k, count, len);
        for (i = 0; i < len && i < count; i++)
            if (in[i] != pattern(lt_prev(), k, i)) {
                bad = i;
                break;
            }
        CHECK(bad < 0, "message %d: byte %d wrong", k, bad);
    }
    MPI_OK(MPI_Waitall(NMSG, req, MPI_STATUSES_IGNORE));
    for (k = 0; k < NMSG; k++)
        free(out[k]);
    free(in);
}

/* Small messages, blocking receives into exact-size buffers, ANY_SOURCE. */
static void small_in_order_any_source(void)
{
    enum { M = 200 };
    int out[M], k;
    MPI_Request req[M];
    for (k = 0; k < M; k++) {
        out[k] = lt_rank * 1000 + k;
        MPI_OK(MPI_Isend(&out[k], 1, MPI_INT, lt_next(), 6, MPI_COMM_WORLD, &req[k]));
    }
    for (k = 0; k < M; k++) {
        int v = -1;
        MPI_Status st;
        MPI_OK(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 6, MPI_COMM_WORLD, &st));
        CHECK(st.MPI_SOURCE == lt_prev(), "any_source small: source %d want %d",
              st.MPI_SOURCE, lt_prev());
        CHECK(v == lt_prev() * 1000 + k, "small message %d: got %d", k, v);
    }
    MPI_OK(MPI_Waitall(M, req, MPI_STATUSES_IGNORE));
}

/* Every rank sends to rank 0; rank 0 receives with ANY_SOURCE/ANY_TAG and
 * checks status fields plus per-source ordering. */
static void gather_any_source_any_tag(void)
{
    enum { PER = 10 };
    int k;
    if (lt_rank != 0) {
        int msg[2];
        for (k = 0; k < PER; k++) {
            msg[0] = lt_rank;
            msg[1] = k;
            /* Odd ranks send 2 ints, even ranks 1: count must follow. */
            MPI_OK(MPI_Send(msg, 1 + lt_rank % 2, MPI_INT, 0, 100 + lt_rank, MPI_COMM_WORLD));
        }
    } else {
        int *next_seq = calloc((size_t)lt_size, sizeof(int));
        int total = (lt_size - 1) * PER;
        for (k = 0; k < total; k++) {
            int msg[2] = {-1, -1}, count = -1, src;
            MPI_Status st;
            MPI_OK(MPI_Recv(msg, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            src = st.MPI_SOURCE;
            MPI_Get_count(&st, MPI_INT, &count);
            if (src <= 0 || src >= lt_size) {
                CHECK(0, "any_source: bad status source %d", src);
                continue;
            }
            CHECK(st.MPI_TAG == 100 + src, "any_tag: tag %d for source %d", st.MPI_TAG, src);
            CHECK(msg[0] == src, "any_source: payload says %d, status says %d", msg[0], src);
            CHECK(count == 1 + src % 2, "any_source: count %d from %d", count, src);
            if (count == 2)
                CHECK(msg[1] == next_seq[src], "source %d: seq %d want %d", src, msg[1],
                      next_seq[src]);
            next_seq[src]++;
        }
        for (k = 1; k < lt_size; k++)
            CHECK(next_seq[k] == PER, "source %d: %d messages want %d", k, next_seq[k], PER);
        free(next_seq);
    }
}

/* ANY_TAG from a fixed source returns messages in send order. */
static void any_tag_in_order(void)
{
    static const int tags[] = {5000, 3, 900, 0, 77};
    int k, v;
    MPI_Request req[5];
    int out[5];
    for (k = 0; k < 5; k++) {
        out[k] = k;
        MPI_OK(MPI_Isend(&out[k], 1, MPI_INT, lt_next(), tags[k], MPI_COMM_WORLD, &req[k]));
    }
    for (k = 0; k < 5; k++) {
        MPI_Status st;
        v = -1;
        MPI_OK(MPI_Recv(&v, 1, MPI_INT, lt_prev(), MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        CHECK(st.MPI_TAG == tags[k], "any_tag: message %d has tag %d want %d", k, st.MPI_TAG,
              tags[k]);
        CHECK(st.MPI_SOURCE == lt_prev(), "any_tag: source %d", st.MPI_SOURCE);
        CHECK(v == k, "any_tag: payload %d want %d", v, k);
    }
    MPI_OK(MPI_Waitall(5, req, MPI_STATUSES_IGNORE));
}

/* Tag selection skips earlier non-matching messages. */
static void tag_selection(void)
{
    int a = 1, b = 2, v = 0;
    MPI_Request req[2];
    MPI_Status st;
    MPI_OK(MPI_Isend(&a, 1, MPI_INT, lt_next(), 201, MPI_COMM_WORLD, &req[0]));
    MPI_OK(MPI_Isend(&b, 1, MPI_INT, lt_next(), 202, MPI_COMM_WORLD, &req[1]));
    MPI_OK(MPI_Recv(&v, 1, MPI_INT, lt_prev(), 202, MPI_COMM_WORLD, &st));
    CHECK(v == 2 && st.MPI_TAG == 202, "tag 202: got %d tag %d", v, st.MPI_TAG);
    MPI_OK(MPI_Recv(&v, 1, MPI_INT, lt_prev(), 201, MPI_COMM_WORLD, &st));
    CHECK(v == 1 && st.MPI_TAG == 201, "tag 201: got %d tag %d", v, st.MPI_TAG);
    MPI_OK(MPI_Waitall(2, req, MPI_STATUSES_IGNORE));
}

static void tag_upper_bound(void)
{
    int *ub = NULL, flag = 0, k;
    MPI_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag));
    CHECK(flag, "MPI_TAG_UB attribute missing");
    if (!flag || !ub)
        return;
    CHECK(*ub >= 32767, "MPI_TAG_UB %d below 32767", *ub);
    {
        int tags[4] = {*ub, *ub - 1, 32767, *ub / 2};
        for (k = 0; k < 4; k++) {
            int out = lt_rank + k * 10, in = -1;
            MPI_Status st;
            MPI_OK(MPI_Sendrecv(&out, 1, MPI_INT, lt_next(), tags[k], &in, 1, MPI_INT,
                                lt_prev(), tags[k], MPI_COMM_WORLD, &st));
            CHECK(in == lt_prev() + k * 10, "tag %d: got %d", tags[k], in);
            CHECK(st.MPI_TAG == tags[k], "tag %d: status tag %d", tags[k], st.MPI_TAG);
        }
    }
}

int main(int argc, char **argv)
{
    lt_init("ordering", &argc, &argv);
    non_overtaking();
    small_in_order_any_source();
    gather_any_source_any_tag();
    /* Keep later traffic away from rank 0's wildcard receives. */
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    any_tag_in_order();
    tag_selection();
    tag_upper_bound();
    return lt_finish();
}
