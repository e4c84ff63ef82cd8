/* An erroneous broadcast whose ranks disagree on the count: the root
 * passes argv[1] bytes, every other rank argv[2]. Each non-root gets
 * MPI_ERR_TRUNCATE (MPICH and Open MPI answer so, or with a size-mismatch
 * error), with a message saying the counts disagree; the root succeeds;
 * nothing is written past a receive buffer; and the job goes on. Only the
 * layouts where no rank waits for data that the mismatch stopped are run
 * (see test_coll_mismatch.py). */
#include "lt.h"

#define GUARD 16

int main(int argc, char **argv)
{
    lt_init("coll_mismatch", &argc, &argv);
    MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int mine = lt_rank == 0 ? atoi(argv[1]) : atoi(argv[2]), i, cls = -1, len = 0;
    unsigned char *buf = malloc((size_t)mine + GUARD);
    char msg[MPI_MAX_ERROR_STRING] = "";
    for (i = 0; i < mine + GUARD; i++)
        buf[i] = lt_rank == 0 && i < mine ? (unsigned char)(i * 7 + 3) : 0xee;
    int rc = MPI_Bcast(buf, mine, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
        MPI_Error_class(rc, &cls);
        MPI_Error_string(rc, msg, &len);
    }
    if (lt_rank == 0) {
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
    return lt_finish();
}
