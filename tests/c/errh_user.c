/* User error handlers: called with the communicator and the error code for
 * a bad-rank send, through Comm_call_errhandler, still after the handle is
 * freed; user-added error classes, codes and strings seen through
 * Error_class, Error_string and MPI_LASTUSEDCODE. */
#include "lt.h"

static int calls;
static MPI_Comm last_comm;
static int last_code;

static void handler(MPI_Comm *comm, int *code, ...)
{
    calls++;
    last_comm = *comm;
    last_code = *code;
}

static int class_of(int code)
{
    int cls = -1;
    MPI_OK(MPI_Error_class(code, &cls));
    return cls;
}

static void user_handler(void)
{
    MPI_Comm comm;
    MPI_Errhandler eh, got;
    int buf = 0, rc;

    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    MPI_OK(MPI_Comm_create_errhandler(handler, &eh));
    CHECK(eh != MPI_ERRHANDLER_NULL && eh != MPI_ERRORS_RETURN, "create_errhandler handle");
    MPI_OK(MPI_Comm_set_errhandler(comm, eh));
    MPI_OK(MPI_Comm_get_errhandler(comm, &got));
    CHECK(got == eh, "get_errhandler returned another handle");
    MPI_OK(MPI_Errhandler_free(&got));
    CHECK(got == MPI_ERRHANDLER_NULL, "Errhandler_free left the handle");

    /* A bad-rank send calls the handler once, with the comm and the code
     * the call then returns. */
    calls = 0;
    rc = MPI_Send(&buf, 1, MPI_INT, lt_size, 0, comm);
    CHECK(calls == 1, "handler called %d times for a bad rank", calls);
    CHECK(last_comm == comm, "handler got another communicator");
    CHECK(rc == last_code, "call returned %d but handler saw %d", rc, last_code);
    CHECK(class_of(last_code) == MPI_ERR_RANK, "handler code class %d", class_of(last_code));

    /* Comm_call_errhandler passes the code through unchanged. */
    calls = 0;
    MPI_OK(MPI_Comm_call_errhandler(comm, MPI_ERR_OTHER));
    CHECK(calls == 1 && last_code == MPI_ERR_OTHER && last_comm == comm,
          "call_errhandler: %d calls, code %d", calls, last_code);

    /* Freeing the user's handle leaves the communicator's handler working. */
    MPI_OK(MPI_Errhandler_free(&eh));
    CHECK(eh == MPI_ERRHANDLER_NULL, "Errhandler_free left the handle");
    calls = 0;
    rc = MPI_Send(&buf, 1, MPI_INT, -5, 0, comm);
    CHECK(calls == 1 && rc != MPI_SUCCESS, "handler after free: %d calls", calls);

    /* Handlers are inherited by dup. */
    {
        MPI_Comm d;
        MPI_OK(MPI_Comm_dup(comm, &d));
        calls = 0;
        MPI_OK(MPI_Comm_call_errhandler(d, MPI_ERR_TAG));
        CHECK(calls == 1 && last_comm == d && last_code == MPI_ERR_TAG, "dup'd handler");
        MPI_OK(MPI_Comm_free(&d));
    }

    /* Under MPI_ERRORS_RETURN, call_errhandler just returns. */
    MPI_OK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
    calls = 0;
    rc = MPI_Comm_call_errhandler(comm, MPI_ERR_OTHER);
    CHECK(calls == 0, "ERRORS_RETURN called the user handler");
    CHECK(rc == MPI_SUCCESS, "call_errhandler under ERRORS_RETURN returned %d", rc);
    MPI_OK(MPI_Comm_free(&comm));
}

static void added_codes(void)
{
    MPI_Comm comm;
    MPI_Errhandler eh;
    int cls, cls2, code, code2, len = -1, flag = 0, *last = NULL;
    char msg[MPI_MAX_ERROR_STRING];

    MPI_OK(MPI_Add_error_class(&cls));
    MPI_OK(MPI_Add_error_class(&cls2));
    CHECK(cls != cls2, "two classes share a value");
    CHECK(cls > MPI_ERR_LASTCODE || cls > MPI_ERR_UNSUPPORTED_OPERATION,
          "added class %d overlaps predefined ones", cls);
    MPI_OK(MPI_Add_error_code(cls, &code));
    MPI_OK(MPI_Add_error_code(cls, &code2));
    CHECK(code != code2 && code != cls, "codes collide");
    CHECK(class_of(code) == cls, "Error_class(code) %d want %d", class_of(code), cls);
    CHECK(class_of(code2) == cls, "Error_class(code2)");
    CHECK(class_of(cls) == cls, "Error_class(class) is the class");
    CHECK(class_of(cls2) == cls2, "Error_class(class2)");

    /* No string yet: empty. */
    msg[0] = 'x';
    MPI_OK(MPI_Error_string(code, msg, &len));
    CHECK(len == 0 && msg[0] == 0, "unset string has length %d", len);
    MPI_OK(MPI_Add_error_string(cls, "lanai test class"));
    MPI_OK(MPI_Add_error_string(code, "lanai test code"));
    MPI_OK(MPI_Error_string(code, msg, &len));
    CHECK(strcmp(msg, "lanai test code") == 0 && len == (int)strlen(msg), "code string '%s'",
          msg);
    MPI_OK(MPI_Error_string(cls, msg, &len));
    CHECK(strcmp(msg, "lanai test class") == 0, "class string '%s'", msg);
    MPI_OK(MPI_Add_error_string(code, "replaced"));
    MPI_OK(MPI_Error_string(code, msg, &len));
    CHECK(strcmp(msg, "replaced") == 0, "replaced string '%s'", msg);

    MPI_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag));
    CHECK(flag && last && *last >= cls2 && *last >= cls, "MPI_LASTUSEDCODE %d below class %d",
          last ? *last : -1, cls2);

    /* A user handler sees an added code as is. */
    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    MPI_OK(MPI_Comm_create_errhandler(handler, &eh));
    MPI_OK(MPI_Comm_set_errhandler(comm, eh));
    calls = 0;
    MPI_OK(MPI_Comm_call_errhandler(comm, code));
    CHECK(calls == 1 && last_code == code, "handler with added code");
    MPI_OK(MPI_Errhandler_free(&eh));
    MPI_OK(MPI_Comm_free(&comm));
}

int main(int argc, char **argv)
{
    lt_init("errh_user", &argc, &argv);
    user_handler();
    added_codes();
    return lt_finish();
}
