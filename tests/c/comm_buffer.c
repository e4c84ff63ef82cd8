/*
 * MPI 4.1 per-communicator buffers for buffered sends:
 * MPI_Comm_attach_buffer(_c), MPI_Comm_detach_buffer(_c),
 * MPI_Comm_flush_buffer and MPI_Comm_iflush_buffer, next to the process
 * buffer of MPI_Buffer_attach. Every rank sends to the next and receives
 * from the previous one; values are computed from the sender's rank and
 * the message index. (MPICH 4.0.2 has none of these functions.)
 */
/* MAP_ANONYMOUS and MAP_NORESERVE are not in strict C99. */
#define _GNU_SOURCE
#include "lt.h"
#include <limits.h>
#include <sys/mman.h>

#if MPI_VERSION < 4 || (MPI_VERSION == 4 && MPI_SUBVERSION < 1)
int MPI_Comm_attach_buffer(MPI_Comm comm, void *buffer, int size);
int MPI_Comm_attach_buffer_c(MPI_Comm comm, void *buffer, MPI_Count size);
int MPI_Comm_detach_buffer(MPI_Comm comm, void *buffer_addr, int *size);
int MPI_Comm_detach_buffer_c(MPI_Comm comm, void *buffer_addr, MPI_Count *size);
int MPI_Comm_flush_buffer(MPI_Comm comm);
int MPI_Comm_iflush_buffer(MPI_Comm comm, MPI_Request *request);
#endif

#define NSMALL 4   /* small (eager) messages per round */
#define SMALLN 8   /* ints in a small message */
#define BIGN 20000 /* ints in a large message: over the eager limit */

static int value(int rank, int msg, int i) { return rank * 100000 + msg * 1000 + i; }

static int class_of(int rc)
{
    int cls = -1;
    MPI_Error_class(rc, &cls);
    return cls;
}

/* NSMALL small buffered sends on `comm` to the next rank, then the
 * matching receives from the previous one, checked. */
static void small_round(MPI_Comm comm, int base, const char *what)
{
    int out[SMALLN], in[SMALLN], k, i;
    for (k = 0; k < NSMALL; k++) {
        for (i = 0; i < SMALLN; i++)
            out[i] = value(lt_rank, base + k, i);
        MPI_OK(MPI_Bsend(out, SMALLN, MPI_INT, lt_next(), base + k, comm));
    }
    for (k = 0; k < NSMALL; k++) {
        MPI_OK(MPI_Recv(in, SMALLN, MPI_INT, lt_prev(), base + k, comm, MPI_STATUS_IGNORE));
        long bad = 0;
        for (i = 0; i < SMALLN; i++)
            bad += in[i] != value(lt_prev(), base + k, i);
        CHECK(bad == 0, "%s: message %d: %ld wrong values", what, k, bad);
    }
}

/* One large buffered send (rendezvous-sized) on `comm`, received whole. */
static void big_round(MPI_Comm comm, int tag, const char *what, int flush)
{
    int *out = malloc(BIGN * sizeof(int)), *in = malloc(BIGN * sizeof(int));
    MPI_Request rr, fr;
    int i;
    for (i = 0; i < BIGN; i++) {
        out[i] = value(lt_rank, tag, i);
        in[i] = -1;
    }
    MPI_OK(MPI_Irecv(in, BIGN, MPI_INT, lt_prev(), tag, comm, &rr));
    MPI_OK(MPI_Bsend(out, BIGN, MPI_INT, lt_next(), tag, comm));
    memset(out, 0, BIGN * sizeof(int)); /* the buffered data is a copy */
    if (flush == 1) {
        MPI_OK(MPI_Comm_flush_buffer(comm));
    } else if (flush == 2) {
        MPI_OK(MPI_Comm_iflush_buffer(comm, &fr));
        MPI_OK(MPI_Wait(&fr, MPI_STATUS_IGNORE));
        CHECK(fr == MPI_REQUEST_NULL, "%s: iflush request left", what);
    }
    MPI_OK(MPI_Wait(&rr, MPI_STATUS_IGNORE));
    long bad = 0;
    for (i = 0; i < BIGN; i++)
        bad += in[i] != value(lt_prev(), tag, i);
    CHECK(bad == 0, "%s: %ld wrong values", what, bad);
    free(out);
    free(in);
}

int main(int argc, char **argv)
{
    MPI_Comm c1, c2, c3;
    int rc, flag = 0, k;
    int smallneed = NSMALL * (SMALLN * (int)sizeof(int) + MPI_BSEND_OVERHEAD);
    int bigneed = BIGN * (int)sizeof(int) + MPI_BSEND_OVERHEAD;
    lt_init("comm_buffer", &argc, &argv);

    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &c1));
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &c2));
    MPI_OK(MPI_Comm_set_errhandler(c1, MPI_ERRORS_RETURN));
    MPI_OK(MPI_Comm_set_errhandler(c2, MPI_ERRORS_RETURN));

    /* ---- no buffer anywhere: a buffered send fails ---- */
    {
        int x = lt_rank;
        rc = MPI_Bsend(&x, 1, MPI_INT, lt_next(), 1, c2);
        CHECK(class_of(rc) == MPI_ERR_BUFFER, "Bsend with no buffer: class %d", class_of(rc));
    }

    /* ---- a buffer on c1 only: room for a small round and two large
     * sends (an unflushed one may still be in flight at the next) ---- */
    int size1 = smallneed + 2 * bigneed;
    char *buf1 = malloc(size1);
    MPI_OK(MPI_Comm_attach_buffer(c1, buf1, size1));
    {
        /* One buffer per communicator. */
        char other[64];
        rc = MPI_Comm_attach_buffer(c1, other, sizeof other);
        CHECK(class_of(rc) == MPI_ERR_BUFFER, "second attach: class %d", class_of(rc));

        /* c1's buffer does not serve c2. */
        int x = lt_rank;
        rc = MPI_Bsend(&x, 1, MPI_INT, lt_next(), 1, c2);
        CHECK(class_of(rc) == MPI_ERR_BUFFER, "Bsend on c2 with c1's buffer: class %d",
              class_of(rc));

        /* A message larger than the whole buffer does not fit. */
        int *huge = calloc(size1, 1);
        rc = MPI_Bsend(huge, size1 / (int)sizeof(int), MPI_INT, lt_next(), 2, c1);
        CHECK(class_of(rc) == MPI_ERR_BUFFER, "Bsend over the buffer's size: class %d",
              class_of(rc));
        free(huge);
    }
    for (k = 0; k < 3; k++) {
        small_round(c1, 10 + 10 * k, "c1 small");
        big_round(c1, 100 + k, "c1 big", k);
    }
    /* Nothing pending: flush and iflush return at once. */
    MPI_OK(MPI_Comm_flush_buffer(c1));
    {
        MPI_Request fr;
        MPI_OK(MPI_Comm_iflush_buffer(c1, &fr));
        MPI_OK(MPI_Test(&fr, &flag, MPI_STATUS_IGNORE));
        for (k = 0; k < 1000 && !flag; k++)
            MPI_OK(MPI_Test(&fr, &flag, MPI_STATUS_IGNORE));
        CHECK(flag, "Comm_iflush_buffer with nothing pending did not complete");
    }

    /* ---- a process buffer serves the others meanwhile ---- */
    int size0 = 2 * size1;
    char *buf0 = malloc(size0);
    MPI_OK(MPI_Buffer_attach(buf0, size0));
    small_round(c2, 200, "c2 on the process buffer");
    small_round(MPI_COMM_WORLD, 300, "world on the process buffer");
    small_round(c1, 400, "c1 beside a process buffer");
    {
        /* c1 keeps using its own buffer, even when it is too small: the
         * process buffer (room for this) is not a fallback. */
        int n = (size1 - MPI_BSEND_OVERHEAD) / (int)sizeof(int) + 1;
        int *tmp = calloc(n, sizeof(int));
        CHECK(n * (int)sizeof(int) + MPI_BSEND_OVERHEAD <= size0, "test sizes");
        rc = MPI_Bsend(tmp, n, MPI_INT, lt_next(), 3, c1);
        CHECK(class_of(rc) == MPI_ERR_BUFFER, "Bsend over c1's buffer: class %d", class_of(rc));
        free(tmp);
    }
    big_round(c2, 500, "c2 big on the process buffer", 0);

    /* ---- detaching returns what was attached ---- */
    {
        void *got = NULL;
        int gotsize = -1;
        MPI_Count gotc = -1;
        MPI_OK(MPI_Comm_detach_buffer(c1, &got, &gotsize));
        CHECK(got == buf1 && gotsize == size1, "Comm_detach_buffer gave %p/%d", got, gotsize);
        /* Now c1 draws on the process buffer. */
        small_round(c1, 600, "c1 after detach");
        MPI_OK(MPI_Comm_attach_buffer_c(c1, buf1, (MPI_Count)size1));
        big_round(c1, 700, "c1 reattached", 1);
        got = NULL;
        MPI_OK(MPI_Comm_detach_buffer_c(c1, &got, &gotc));
        CHECK(got == buf1 && gotc == size1, "Comm_detach_buffer_c gave %p/%ld", got,
              (long)gotc);
        MPI_OK(MPI_Buffer_detach(&got, &gotsize));
        CHECK(got == buf0 && gotsize == size0, "Buffer_detach gave %p/%d", got, gotsize);
    }

    /* ---- freeing a communicator detaches its buffer ---- */
    {
        char *buf3 = malloc(bigneed);
        int *out = malloc(BIGN * sizeof(int)), *in = malloc(BIGN * sizeof(int));
        int i;
        void *got = NULL;
        int gotsize = -1;
        MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &c3));
        MPI_OK(MPI_Comm_attach_buffer(c3, buf3, bigneed));
        for (i = 0; i < BIGN; i++)
            out[i] = value(lt_rank, 800, i);
        MPI_OK(MPI_Bsend(out, BIGN, MPI_INT, lt_next(), 800, c3));
        MPI_OK(MPI_Recv(in, BIGN, MPI_INT, lt_prev(), 800, c3, MPI_STATUS_IGNORE));
        CHECK(in[BIGN - 1] == value(lt_prev(), 800, BIGN - 1), "c3: got %d", in[BIGN - 1]);
        MPI_OK(MPI_Comm_free(&c3));
        /* A new communicator starts without a buffer, and a new one fits
         * whole even if the freed one's send is still in flight. */
        MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &c3));
        MPI_OK(MPI_Comm_set_errhandler(c3, MPI_ERRORS_RETURN));
        rc = MPI_Bsend(out, 1, MPI_INT, lt_next(), 801, c3);
        CHECK(class_of(rc) == MPI_ERR_BUFFER, "Bsend on a fresh comm: class %d", class_of(rc));
        MPI_OK(MPI_Comm_attach_buffer(c3, buf1, size1));
        big_round(c3, 802, "c3 after a free", 2);
        MPI_OK(MPI_Comm_detach_buffer(c3, &got, &gotsize));
        CHECK(got == buf1 && gotsize == size1, "c3 detach gave %p/%d", got, gotsize);
        MPI_OK(MPI_Comm_free(&c3));
        free(buf3);
        free(out);
        free(in);
    }

    /* ---- a buffer beyond INT_MAX, attached with a _c call, cannot be
     * reported by an int detach: MPI_ERR_VALUE_TOO_LARGE, and it stays
     * attached until the _c detach. Only address space is reserved. ---- */
    {
        MPI_Count big = (MPI_Count)INT_MAX + 4096;
        void *p = mmap(NULL, (size_t)big, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
        CHECK(p != MAP_FAILED, "mmap of %ld bytes of address space", (long)big);
        if (p != MAP_FAILED) {
            void *got = NULL;
            int gotsize = -1;
            MPI_Count gotc = -1;
            MPI_OK(MPI_Buffer_attach_c(p, big));
            MPI_OK(MPI_Comm_attach_buffer_c(c1, p, big));
            /* A call without a communicator reports through MPI_COMM_WORLD. */
            MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
            rc = MPI_Buffer_detach(&got, &gotsize);
            CHECK(class_of(rc) == MPI_ERR_VALUE_TOO_LARGE, "int Buffer_detach of %ld bytes: class %d",
                  (long)big, class_of(rc));
            MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
            rc = MPI_Comm_detach_buffer(c1, &got, &gotsize);
            CHECK(class_of(rc) == MPI_ERR_VALUE_TOO_LARGE,
                  "int Comm_detach_buffer of %ld bytes: class %d", (long)big, class_of(rc));
            MPI_OK(MPI_Buffer_detach_c(&got, &gotc));
            CHECK(got == p && gotc == big, "Buffer_detach_c gave %p/%ld", got, (long)gotc);
            MPI_OK(MPI_Comm_detach_buffer_c(c1, &got, &gotc));
            CHECK(got == p && gotc == big, "Comm_detach_buffer_c gave %p/%ld", got, (long)gotc);
            munmap(p, (size_t)big);
        }
    }

    MPI_OK(MPI_Comm_free(&c1));
    MPI_OK(MPI_Comm_free(&c2));
    free(buf0);
    free(buf1);
    return lt_finish();
}
