/*
 * MPI 4.1 functions Lanai provides beyond MPICH 4.0's header:
 * MPI_Remove_error_class/_code/_string and MPI_Buffer_flush/_iflush.
 * (Lanai only: MPICH 4.0.2 has none of them.)
 */
#include "lt.h"

#if MPI_VERSION < 4 || (MPI_VERSION == 4 && MPI_SUBVERSION < 1)
int MPI_Remove_error_class(int errorclass);
int MPI_Remove_error_code(int errorcode);
int MPI_Remove_error_string(int errorcode);
int MPI_Buffer_flush(void);
int MPI_Buffer_iflush(MPI_Request *request);
#endif

#define BIGN 100000 /* ints: a buffered send that stays in the buffer a while */

static int class_of(int rc)
{
    int cls = -1;
    MPI_Error_class(rc, &cls);
    return cls;
}

int main(int argc, char **argv)
{
    lt_init("misc41", &argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int cls, code, code2, rc, len, i, flag;
    char s[MPI_MAX_ERROR_STRING];

    /* ---- error class, code and string removal ---- */
    MPI_OK(MPI_Add_error_class(&cls));
    MPI_OK(MPI_Add_error_code(cls, &code));
    MPI_OK(MPI_Add_error_code(cls, &code2));
    MPI_OK(MPI_Add_error_string(code, "my code"));
    MPI_OK(MPI_Add_error_string(cls, "my class"));

    rc = MPI_Remove_error_class(cls);
    CHECK(rc != MPI_SUCCESS, "removed a class that still has codes");
    rc = MPI_Remove_error_class(MPI_ERR_RANK);
    CHECK(rc != MPI_SUCCESS, "removed predefined class MPI_ERR_RANK");
    rc = MPI_Remove_error_code(MPI_ERR_TAG);
    CHECK(rc != MPI_SUCCESS, "removed predefined code MPI_ERR_TAG");
    rc = MPI_Remove_error_string(MPI_ERR_TAG);
    CHECK(rc != MPI_SUCCESS, "removed the string of a predefined code");
    rc = MPI_Remove_error_code(cls);
    CHECK(rc != MPI_SUCCESS, "removed a class as a code");
    rc = MPI_Remove_error_class(code);
    CHECK(rc != MPI_SUCCESS, "removed a code as a class");

    MPI_OK(MPI_Remove_error_string(code));
    s[0] = 'x';
    MPI_OK(MPI_Error_string(code, s, &len));
    CHECK(len == 0 && s[0] == 0, "string after removal: '%s'", s);
    rc = MPI_Remove_error_string(code);
    CHECK(rc != MPI_SUCCESS, "removed a string twice");
    MPI_OK(MPI_Error_class(code, &i));
    CHECK(i == cls, "class of code %d, want %d", i, cls);

    MPI_OK(MPI_Remove_error_code(code));
    rc = MPI_Error_class(code, &i);
    CHECK(rc != MPI_SUCCESS, "a removed code still has a class");
    rc = MPI_Remove_error_code(code);
    CHECK(rc != MPI_SUCCESS, "removed a code twice");
    rc = MPI_Remove_error_class(cls);
    CHECK(rc != MPI_SUCCESS, "removed a class that still has one code");
    MPI_OK(MPI_Remove_error_code(code2));
    MPI_OK(MPI_Remove_error_class(cls));
    rc = MPI_Error_string(cls, s, &len);
    CHECK(rc != MPI_SUCCESS, "a removed class still has a string");
    rc = MPI_Add_error_code(cls, &code);
    CHECK(rc != MPI_SUCCESS, "added a code to a removed class");
    /* New values keep working after removals. */
    MPI_OK(MPI_Add_error_class(&i));
    CHECK(i != cls, "a removed class value was handed out again");
    MPI_OK(MPI_Error_class(i, &code));
    CHECK(code == i, "new class %d has class %d", i, code);
    MPI_OK(MPI_Remove_error_class(i));

    /* ---- flushing the attached buffer ---- */
    {
        int bufsize = 4 * (BIGN * (int)sizeof(int) + MPI_BSEND_OVERHEAD);
        char *buf = malloc(bufsize);
        int *out = malloc(BIGN * sizeof(int)), *in = malloc(BIGN * sizeof(int));
        void *got;
        int gotsize, k;
        MPI_Request rr, fr;
        MPI_OK(MPI_Buffer_attach(buf, bufsize));

        /* Nothing pending: both return at once. */
        MPI_OK(MPI_Buffer_flush());
        MPI_OK(MPI_Buffer_iflush(&fr));
        MPI_OK(MPI_Test(&fr, &flag, MPI_STATUS_IGNORE));
        for (k = 0; k < 1000 && !flag; k++)
            MPI_OK(MPI_Test(&fr, &flag, MPI_STATUS_IGNORE));
        CHECK(flag, "iflush with nothing pending did not complete");

        for (k = 0; k < 2; k++) {
            for (i = 0; i < BIGN; i++) {
                out[i] = lt_rank * 7 + i + k;
                in[i] = -1;
            }
            MPI_OK(MPI_Irecv(in, BIGN, MPI_INT, lt_prev(), 5 + k, MPI_COMM_WORLD, &rr));
            MPI_OK(MPI_Bsend(out, BIGN, MPI_INT, lt_next(), 5 + k, MPI_COMM_WORLD));
            MPI_OK(MPI_Bsend(out, 10, MPI_INT, lt_next(), 50 + k, MPI_COMM_WORLD));
            /* The buffered data is a copy: the user buffer may change. */
            memset(out, 0, BIGN * sizeof(int));
            if (k == 0) {
                MPI_OK(MPI_Buffer_flush());
            } else {
                MPI_OK(MPI_Buffer_iflush(&fr));
                MPI_OK(MPI_Wait(&fr, MPI_STATUS_IGNORE));
                CHECK(fr == MPI_REQUEST_NULL, "iflush request left");
            }
            MPI_OK(MPI_Wait(&rr, MPI_STATUS_IGNORE));
            long bad = 0;
            for (i = 0; i < BIGN; i++)
                bad += in[i] != lt_prev() * 7 + i + k;
            CHECK(bad == 0, "round %d: %ld wrong", k, bad);
            MPI_OK(MPI_Recv(in, 10, MPI_INT, lt_prev(), 50 + k, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(in[3] == lt_prev() * 7 + 3 + k, "small round %d: %d", k, in[3]);
        }
        /* The buffer stays attached after a flush. */
        MPI_OK(MPI_Buffer_detach(&got, &gotsize));
        CHECK(got == buf && gotsize == bufsize, "detached %p/%d", got, gotsize);
        free(buf);
        free(out);
        free(in);
    }

    return lt_finish();
}
