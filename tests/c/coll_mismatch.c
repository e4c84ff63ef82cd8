/* Erroneous collectives whose ranks disagree.
 *
 *   coll_mismatch ROOT_BYTES OTHER_BYTES [WHAT [fatal]]
 *
 * Rank 0 passes ROOT_BYTES, every other rank OTHER_BYTES, to WHAT (bcast,
 * the default; gather; scatter; allgather; alltoall; allreduce and scan,
 * MPI_BOR on bytes; root: a bcast where the others name root 1; kind:
 * rank 0 calls MPI_Allreduce where the others call MPI_Bcast; iallreduce,
 * ibcast, igather, iscan and ikind: the same nonblocking, completed by
 * MPI_Wait; gatherv, scatterv and allgatherv with every count the rank's
 * own size; vkind: rank 0 calls MPI_Gatherv where the others call
 * MPI_Bcast; scankind: MPI_Exscan against MPI_Scan; rskind:
 * MPI_Reduce_scatter_block against MPI_Allreduce).
 *
 * By default errors return: each non-root of a bcast gets MPI_ERR_TRUNCATE
 * with a message saying the counts disagree, the root succeeds, nothing is
 * written past a receive buffer, and the communicator still carries an
 * allreduce. With "root-may-fail" (WHAT bcast) the root may get the same
 * error instead of succeeding. With "fatal" the default handler stays: the job must end
 * with the error (the runner checks how), so returning from the call
 * at all is a failure. */
#include "lt.h"

#define GUARD 16

static void returning(int argc, char **argv)
{
    int mine = lt_rank == 0 ? atoi(argv[1]) : atoi(argv[2]), i, cls = -1, len = 0;
    int root_may_fail = argc > 4 && !strcmp(argv[4], "root-may-fail");
    unsigned char *buf = malloc((size_t)mine + GUARD);
    char msg[MPI_MAX_ERROR_STRING] = "";
    (void)argc;
    MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    for (i = 0; i < mine + GUARD; i++)
        buf[i] = lt_rank == 0 && i < mine ? (unsigned char)(i * 7 + 3) : 0xee;
    int rc = MPI_Bcast(buf, mine, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
        MPI_Error_class(rc, &cls);
        MPI_Error_string(rc, msg, &len);
    }
    if (lt_rank == 0 && root_may_fail) {
        /* Its part went point to point, which the others never receive. */
        CHECK(rc == MPI_SUCCESS || cls == MPI_ERR_TRUNCATE,
              "the root's MPI_Bcast returned %d (%s)", rc, msg);
        CHECK(rc == MPI_SUCCESS || strstr(msg, "counts or datatypes disagree") ||
                  strstr(msg, "truncat"),
              "the message does not say why: %s", msg);
    } else if (lt_rank == 0) {
        CHECK(rc == MPI_SUCCESS, "the root's MPI_Bcast returned %d (%s)", rc, msg);
    } else {
        CHECK(cls == MPI_ERR_TRUNCATE, "MPI_Bcast of %d bytes: class %d (%s), want TRUNCATE",
              mine, cls, msg);
        CHECK(strstr(msg, "counts or datatypes disagree") || strstr(msg, "truncat"),
              "the message does not say why: %s", msg);
        for (i = mine; i < mine + GUARD; i++)
            CHECK(buf[i] == 0xee, "byte %d past the %d-byte buffer was written", i, mine);
    }
    /* The communicator still carries a correct collective. */
    int one = 1, sum = 0;
    MPI_OK(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == lt_size, "allreduce after the mismatch: %d", sum);
    free(buf);
}

static void fatal(const char *what, int mine)
{
    size_t n = (size_t)mine * (size_t)lt_size + GUARD;
    char *a = calloc(n, 1), *b = calloc(n, 1);
    if (!strcmp(what, "bcast"))
        MPI_Bcast(a, mine, MPI_BYTE, 0, MPI_COMM_WORLD);
    else if (!strcmp(what, "gather"))
        MPI_Gather(a, mine, MPI_BYTE, b, mine, MPI_BYTE, 0, MPI_COMM_WORLD);
    else if (!strcmp(what, "scatter"))
        MPI_Scatter(a, mine, MPI_BYTE, b, mine, MPI_BYTE, 0, MPI_COMM_WORLD);
    else if (!strcmp(what, "allgather"))
        MPI_Allgather(a, mine, MPI_BYTE, b, mine, MPI_BYTE, MPI_COMM_WORLD);
    else if (!strcmp(what, "alltoall"))
        MPI_Alltoall(a, mine, MPI_BYTE, b, mine, MPI_BYTE, MPI_COMM_WORLD);
    else if (!strcmp(what, "allreduce"))
        MPI_Allreduce(a, b, mine, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD);
    else if (!strcmp(what, "scan"))
        MPI_Scan(a, b, mine, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD);
    else if (!strcmp(what, "gatherv") || !strcmp(what, "scatterv") ||
             !strcmp(what, "allgatherv")) {
        /* Counts as every rank's own size: the root's differ from the
         * others' parts. */
        int *cnt = malloc(sizeof(int) * lt_size), *dsp = malloc(sizeof(int) * lt_size);
        for (int k = 0; k < lt_size; k++) {
            cnt[k] = mine;
            dsp[k] = k * mine;
        }
        if (what[0] == 'g')
            MPI_Gatherv(a, mine, MPI_BYTE, b, cnt, dsp, MPI_BYTE, 0, MPI_COMM_WORLD);
        else if (what[0] == 's')
            MPI_Scatterv(a, cnt, dsp, MPI_BYTE, b, mine, MPI_BYTE, 0, MPI_COMM_WORLD);
        else
            MPI_Allgatherv(a, mine, MPI_BYTE, b, cnt, dsp, MPI_BYTE, MPI_COMM_WORLD);
        free(cnt);
        free(dsp);
    } else if (!strcmp(what, "vkind")) {
        int *cnt = malloc(sizeof(int) * lt_size), *dsp = malloc(sizeof(int) * lt_size);
        for (int k = 0; k < lt_size; k++) {
            cnt[k] = mine;
            dsp[k] = k * mine;
        }
        if (lt_rank == 0)
            MPI_Gatherv(a, mine, MPI_BYTE, b, cnt, dsp, MPI_BYTE, 0, MPI_COMM_WORLD);
        else
            MPI_Bcast(a, mine, MPI_BYTE, 0, MPI_COMM_WORLD);
        free(cnt);
        free(dsp);
    } else if (!strcmp(what, "scankind")) {
        if (lt_rank == 0)
            MPI_Exscan(a, b, mine, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD);
        else
            MPI_Scan(a, b, mine, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD);
    } else if (!strcmp(what, "rskind")) {
        if (lt_rank == 0)
            MPI_Reduce_scatter_block(a, b, mine, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD);
        else
            MPI_Allreduce(a, b, mine, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD);
    } else if (what[0] == 'i') {
        /* Nonblocking: the failure reaches MPI_Wait, with its message.
         * The barrier agrees the node's device first, as a program's
         * earlier blocking collectives would. */
        MPI_Request r;
        MPI_Barrier(MPI_COMM_WORLD);
        if (!strcmp(what, "igather"))
            MPI_Igather(a, mine, MPI_BYTE, b, mine, MPI_BYTE, 0, MPI_COMM_WORLD, &r);
        else if (!strcmp(what, "iscan"))
            MPI_Iscan(a, b, mine, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD, &r);
        else if (!strcmp(what, "iallreduce") || (!strcmp(what, "ikind") && lt_rank == 0))
            MPI_Iallreduce(a, b, mine, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD, &r);
        else /* ibcast, and ikind's other ranks */
            MPI_Ibcast(a, mine, MPI_BYTE, 0, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else if (!strcmp(what, "root"))
        MPI_Bcast(a, mine, MPI_BYTE, lt_rank == 0 ? 0 : 1, MPI_COMM_WORLD);
    else if (lt_rank == 0) /* kind */
        MPI_Allreduce(a, b, mine, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD);
    else
        MPI_Bcast(a, mine, MPI_BYTE, 0, MPI_COMM_WORLD);
    /* A rank whose part needs nobody (a broadcast's root) returns; it
     * then waits here until the job ends. */
    MPI_Barrier(MPI_COMM_WORLD);
    free(a);
    free(b);
}

int main(int argc, char **argv)
{
    lt_init("coll_mismatch", &argc, &argv);
    if (argc > 4 && !strcmp(argv[4], "fatal"))
        fatal(argv[3], lt_rank == 0 ? atoi(argv[1]) : atoi(argv[2]));
    else
        returning(argc, argv);
    return lt_finish();
}
