/* Large messages (16 MiB, ring and self) and many outstanding requests
 * completed with every Wait and Test variant. */
#include "lt.h"

/* Words travel as MPI_UNSIGNED. */
_Static_assert(sizeof(unsigned) == sizeof(uint32_t), "unsigned must be 32 bits");

#define BIG_WORDS ((16 << 20) / 4)
#define NREQ 64
#define SMALL_MAX 2000 /* ints per message in the many-request rounds */

static uint32_t word(int src, int salt, int i)
{
    return ((uint32_t)i * 2654435761u) ^ ((uint32_t)src << 24) ^ (uint32_t)salt;
}

static void check_words(const uint32_t *buf, int n, int src, int salt, const char *what)
{
    int i;
    for (i = 0; i < n; i++)
        if (buf[i] != word(src, salt, i)) {
            CHECK(0, "%s: word %d is %08x want %08x", what, i, buf[i], word(src, salt, i));
            return;
        }
}

static void big_messages(void)
{
    uint32_t *out = malloc((size_t)BIG_WORDS * 4), *in = malloc((size_t)BIG_WORDS * 4);
    int i;
    MPI_Request req;
    MPI_Status st;
    int count = -1;
    for (i = 0; i < BIG_WORDS; i++)
        out[i] = word(lt_rank, 1, i);

    memset(in, 0, (size_t)BIG_WORDS * 4);
    MPI_OK(MPI_Sendrecv(out, BIG_WORDS, MPI_UNSIGNED, lt_next(), 1, in, BIG_WORDS, MPI_UNSIGNED,
                        lt_prev(), 1, MPI_COMM_WORLD, &st));
    MPI_Get_count(&st, MPI_UNSIGNED, &count);
    CHECK(count == BIG_WORDS, "16 MiB ring count %d", count);
    check_words(in, BIG_WORDS, lt_prev(), 1, "16 MiB ring");

    /* Pairs with blocking Send/Recv, even ranks first. */
    {
        int partner = (lt_rank % 2 == 0) ? lt_rank + 1 : lt_rank - 1;
        if (partner < lt_size) {
            memset(in, 0, (size_t)BIG_WORDS * 4);
            if (lt_rank % 2 == 0) {
                MPI_OK(MPI_Send(out, BIG_WORDS, MPI_UNSIGNED, partner, 2, MPI_COMM_WORLD));
                MPI_OK(MPI_Recv(in, BIG_WORDS, MPI_UNSIGNED, partner, 2, MPI_COMM_WORLD, &st));
            } else {
                MPI_OK(MPI_Recv(in, BIG_WORDS, MPI_UNSIGNED, partner, 2, MPI_COMM_WORLD, &st));
                MPI_OK(MPI_Send(out, BIG_WORDS, MPI_UNSIGNED, partner, 2, MPI_COMM_WORLD));
            }
            check_words(in, BIG_WORDS, partner, 1, "16 MiB pair");
        }
    }

    /* To self. */
    memset(in, 0, (size_t)BIG_WORDS * 4);
    MPI_OK(MPI_Isend(out, BIG_WORDS, MPI_UNSIGNED, lt_rank, 3, MPI_COMM_WORLD, &req));
    MPI_OK(MPI_Recv(in, BIG_WORDS, MPI_UNSIGNED, lt_rank, 3, MPI_COMM_WORLD, &st));
    MPI_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    check_words(in, BIG_WORDS, lt_rank, 1, "16 MiB self");

    /* Receive posted first, then sent. */
    memset(in, 0, (size_t)BIG_WORDS * 4);
    MPI_OK(MPI_Irecv(in, BIG_WORDS, MPI_UNSIGNED, lt_prev(), 4, MPI_COMM_WORLD, &req));
    MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_OK(MPI_Send(out, BIG_WORDS, MPI_UNSIGNED, lt_next(), 4, MPI_COMM_WORLD));
    MPI_OK(MPI_Wait(&req, &st));
    check_words(in, BIG_WORDS, lt_prev(), 1, "16 MiB pre-posted");
    free(out);
    free(in);
}

/* A 1 MiB message into a 512 KiB receive: MPI_ERR_TRUNCATE, and nothing
 * past the receive buffer is written (the truncated data itself is
 * undefined). Over TCP such a stream cannot be read in place. */
static void big_truncated(void)
{
    const int n = (1 << 20) / 4, half = n / 2;
    uint32_t *out = malloc((size_t)n * 4), *in = malloc((size_t)n * 4);
    MPI_Comm c;
    MPI_Request req;
    MPI_Status st;
    int i, cls = -1;
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    /* MPI_Wait raises on the request's communicator. */
    MPI_OK(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));
    for (i = 0; i < n; i++) {
        out[i] = word(lt_rank, 7, i);
        in[i] = 0xdeadbeefu;
    }
    MPI_OK(MPI_Irecv(in, half, MPI_UNSIGNED, lt_prev(), 5, c, &req));
    MPI_OK(MPI_Send(out, n, MPI_UNSIGNED, lt_next(), 5, c));
    MPI_Error_class(MPI_Wait(&req, &st), &cls);
    CHECK(cls == MPI_ERR_TRUNCATE, "1 MiB into 512 KiB: error class %d, want %d", cls,
          MPI_ERR_TRUNCATE);
    for (i = half; i < n; i++)
        if (in[i] != 0xdeadbeefu) {
            CHECK(0, "1 MiB into 512 KiB: word %d past the buffer written", i);
            break;
        }
    /* The connection still carries what follows. */
    MPI_OK(MPI_Sendrecv(out, n, MPI_UNSIGNED, lt_next(), 6, in, n, MPI_UNSIGNED, lt_prev(), 6, c,
                        &st));
    check_words(in, n, lt_prev(), 7, "1 MiB after a truncated one");
    MPI_OK(MPI_Comm_free(&c));
    free(out);
    free(in);
}

/* Message i of a round: length varies, content depends on source/round/i. */
static int msg_len(int i) { return 1 + (i * 97) % SMALL_MAX; }

enum completion { WAITALL, WAITANY, WAITSOME, TESTALL, TESTANY, TESTSOME, NMODES };
static const char *mode_name[] = {"Waitall", "Waitany", "Waitsome",
                                  "Testall", "Testany", "Testsome"};

/* Requests 0..NREQ-1 receive from prev (tag i), NREQ..2NREQ-1 from next
 * (tag 1000+i); then the sends. Returns after all complete and are checked. */
static void many_requests(enum completion mode)
{
    static uint32_t out_next[NREQ][SMALL_MAX], out_prev[NREQ][SMALL_MAX];
    static uint32_t in_prev[NREQ][SMALL_MAX], in_next[NREQ][SMALL_MAX];
    MPI_Request req[4 * NREQ];
    MPI_Status st[4 * NREQ];
    int idx[4 * NREQ];
    int done[4 * NREQ];
    int i, j, salt = 100 + (int)mode, ndone = 0, total = 4 * NREQ;
    double t0;

    memset(done, 0, sizeof done);
    for (i = 0; i < NREQ; i++) {
        for (j = 0; j < msg_len(i); j++) {
            out_next[i][j] = word(lt_rank, salt + i, j);
            out_prev[i][j] = word(lt_rank, salt + 5000 + i, j);
        }
        memset(in_prev[i], 0, sizeof in_prev[i]);
        memset(in_next[i], 0, sizeof in_next[i]);
    }
    for (i = 0; i < NREQ; i++) {
        MPI_OK(MPI_Irecv(in_prev[i], SMALL_MAX, MPI_UNSIGNED, lt_prev(), i, MPI_COMM_WORLD,
                         &req[i]));
        MPI_OK(MPI_Irecv(in_next[i], SMALL_MAX, MPI_UNSIGNED, lt_next(), 1000 + i,
                         MPI_COMM_WORLD, &req[NREQ + i]));
    }
    for (i = 0; i < NREQ; i++) {
        MPI_OK(MPI_Isend(out_next[i], msg_len(i), MPI_UNSIGNED, lt_next(), i, MPI_COMM_WORLD,
                         &req[2 * NREQ + i]));
        MPI_OK(MPI_Isend(out_prev[i], msg_len(i), MPI_UNSIGNED, lt_prev(), 1000 + i,
                         MPI_COMM_WORLD, &req[3 * NREQ + i]));
    }

    t0 = MPI_Wtime();
    while (ndone < total) {
        int flag = 0, n = 0, k, outcount = 0;
        if (MPI_Wtime() - t0 > 60.0) {
            CHECK(0, "%s: only %d of %d requests completed", mode_name[mode], ndone, total);
            return;
        }
        switch (mode) {
        case WAITALL:
            MPI_OK(MPI_Waitall(total, req, st));
            for (k = 0; k < total; k++)
                idx[k] = k;
            n = total;
            break;
        case TESTALL:
            MPI_OK(MPI_Testall(total, req, &flag, st));
            if (flag) {
                for (k = 0; k < total; k++)
                    idx[k] = k;
                n = total;
            }
            break;
        case WAITANY:
            MPI_OK(MPI_Waitany(total, req, &idx[0], &st[0]));
            n = 1;
            break;
        case TESTANY:
            MPI_OK(MPI_Testany(total, req, &idx[0], &flag, &st[0]));
            if (flag) {
                CHECK(idx[0] != MPI_UNDEFINED, "Testany flag with MPI_UNDEFINED index");
                n = 1;
            }
            break;
        case WAITSOME:
            MPI_OK(MPI_Waitsome(total, req, &outcount, idx, st));
            CHECK(outcount >= 1, "Waitsome outcount %d with active requests", outcount);
            n = outcount > 0 ? outcount : 0;
            break;
        case TESTSOME:
            MPI_OK(MPI_Testsome(total, req, &outcount, idx, st));
            CHECK(outcount >= 0, "Testsome outcount %d with active requests", outcount);
            n = outcount > 0 ? outcount : 0;
            break;
        default:
            break;
        }
        for (k = 0; k < n; k++) {
            int r = idx[k];
            if (r < 0 || r >= total || done[r]) {
                CHECK(0, "%s: bad or repeated index %d", mode_name[mode], r);
                return;
            }
            done[r] = 1;
            ndone++;
            CHECK(req[r] == MPI_REQUEST_NULL, "%s: request %d not nulled", mode_name[mode], r);
            if (r < NREQ) {
                int c = -1;
                MPI_Get_count(&st[k], MPI_UNSIGNED, &c);
                CHECK(st[k].MPI_SOURCE == lt_prev() && st[k].MPI_TAG == r,
                      "%s: recv %d status %d/%d", mode_name[mode], r, st[k].MPI_SOURCE,
                      st[k].MPI_TAG);
                CHECK(c == msg_len(r), "%s: recv %d count %d", mode_name[mode], r, c);
            } else if (r < 2 * NREQ) {
                CHECK(st[k].MPI_SOURCE == lt_next() && st[k].MPI_TAG == 1000 + r - NREQ,
                      "%s: recv %d status %d/%d", mode_name[mode], r, st[k].MPI_SOURCE,
                      st[k].MPI_TAG);
            }
        }
    }
    for (i = 0; i < NREQ; i++) {
        check_words(in_prev[i], msg_len(i), lt_prev(), salt + i, mode_name[mode]);
        check_words(in_next[i], msg_len(i), lt_next(), salt + 5000 + i, mode_name[mode]);
    }

    /* All requests are now MPI_REQUEST_NULL: the "nothing active" answers. */
    {
        int flag = 0, index = 0, outcount = 0;
        switch (mode) {
        case WAITANY:
            MPI_OK(MPI_Waitany(total, req, &index, st));
            CHECK(index == MPI_UNDEFINED, "Waitany on all-null gave index %d", index);
            break;
        case TESTANY:
            MPI_OK(MPI_Testany(total, req, &index, &flag, st));
            CHECK(flag && index == MPI_UNDEFINED, "Testany on all-null: flag %d index %d",
                  flag, index);
            break;
        case WAITSOME:
            MPI_OK(MPI_Waitsome(total, req, &outcount, idx, st));
            CHECK(outcount == MPI_UNDEFINED, "Waitsome on all-null outcount %d", outcount);
            break;
        case TESTSOME:
            MPI_OK(MPI_Testsome(total, req, &outcount, idx, st));
            CHECK(outcount == MPI_UNDEFINED, "Testsome on all-null outcount %d", outcount);
            break;
        case TESTALL:
            MPI_OK(MPI_Testall(total, req, &flag, st));
            CHECK(flag, "Testall on all-null flag 0");
            break;
        default:
            MPI_OK(MPI_Waitall(total, req, st));
            break;
        }
    }
}

int main(int argc, char **argv)
{
    int m;
    lt_init("large", &argc, &argv);
    big_messages();
    big_truncated();
    for (m = 0; m < NMODES; m++) {
        many_requests((enum completion)m);
        MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
    }
    return lt_finish();
}
