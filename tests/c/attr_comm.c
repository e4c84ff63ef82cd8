/* Communicator attributes: keyval copy/delete callbacks counted with their
 * arguments, values carried to duplicates per callback, delete on overwrite,
 * on delete_attr and on free, a failing copy callback, the MPI-1 names,
 * predefined attributes and datatype attributes. */
#include "lt.h"

/* What the callbacks saw, checked against what the program did. */
struct seen {
    int copies, deletes;
    MPI_Comm copy_comm, delete_comm;
    int copy_keyval, delete_keyval;
    void *copy_extra, *delete_extra;
    void *copy_in, *delete_val;
};

static struct seen s;
static int extra_a = 11, extra_b = 22;
static int vals[8];

/* Copies "value + 1 element" (the next slot of vals). */
static int copy_next(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag)
{
    s.copies++;
    s.copy_comm = comm;
    s.copy_keyval = keyval;
    s.copy_extra = extra;
    s.copy_in = in;
    *(void **)out = (int *)in + 1;
    *flag = 1;
    return MPI_SUCCESS;
}

static int copy_never(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)comm, (void)keyval, (void)extra, (void)in, (void)out;
    s.copies++;
    *flag = 0;
    return MPI_SUCCESS;
}

static int copy_fails(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)comm, (void)keyval, (void)extra, (void)in, (void)out, (void)flag;
    s.copies++;
    return MPI_ERR_OTHER;
}

static int delete_count(MPI_Comm comm, int keyval, void *val, void *extra)
{
    s.deletes++;
    s.delete_comm = comm;
    s.delete_keyval = keyval;
    s.delete_val = val;
    s.delete_extra = extra;
    return MPI_SUCCESS;
}

static void reset(void) { memset(&s, 0, sizeof s); }

static void *get(MPI_Comm comm, int kv, int *flag)
{
    void *v = NULL;
    *flag = -1;
    MPI_OK(MPI_Comm_get_attr(comm, kv, &v, flag));
    return v;
}

static void callbacks(void)
{
    MPI_Comm a, b, c;
    MPI_Request req;
    int kv_next, kv_null, kv_dup, kv_never, flag, kv_saved;
    void *v;

    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &a));
    MPI_OK(MPI_Comm_create_keyval(copy_next, delete_count, &kv_next, &extra_a));
    MPI_OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_count, &kv_null, &extra_b));
    MPI_OK(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &kv_dup, NULL));
    MPI_OK(MPI_Comm_create_keyval(copy_never, MPI_COMM_NULL_DELETE_FN, &kv_never, NULL));
    CHECK(kv_next != kv_null && kv_next != kv_dup && kv_null != kv_dup, "keyvals collide");
    CHECK(kv_next != MPI_TAG_UB && kv_next != MPI_KEYVAL_INVALID, "keyval is predefined");

    /* Unset attribute: flag 0. */
    get(a, kv_next, &flag);
    CHECK(flag == 0, "unset attribute has flag %d", flag);

    reset();
    MPI_OK(MPI_Comm_set_attr(a, kv_next, &vals[0]));
    MPI_OK(MPI_Comm_set_attr(a, kv_null, &vals[5]));
    MPI_OK(MPI_Comm_set_attr(a, kv_dup, &vals[6]));
    MPI_OK(MPI_Comm_set_attr(a, kv_never, &vals[7]));
    CHECK(s.copies == 0 && s.deletes == 0, "set_attr ran callbacks (%d, %d)", s.copies,
          s.deletes);
    v = get(a, kv_next, &flag);
    CHECK(flag == 1 && v == &vals[0], "get_attr after set: flag %d", flag);

    /* Dup: copy_next and copy_never run once each; DUP_FN copies as is. */
    reset();
    MPI_OK(MPI_Comm_dup(a, &b));
    CHECK(s.copies == 2, "dup ran %d user copy callbacks, want 2", s.copies);
    CHECK(s.deletes == 0, "dup ran %d delete callbacks", s.deletes);
    CHECK(s.copy_keyval == kv_next, "copy keyval %d want %d", s.copy_keyval, kv_next);
    v = get(b, kv_next, &flag);
    CHECK(flag == 1 && v == &vals[1], "copied value: flag %d, slot %ld", flag,
          (long)((int *)v - vals));
    get(b, kv_null, &flag);
    CHECK(flag == 0, "NULL_COPY_FN attribute was copied");
    v = get(b, kv_dup, &flag);
    CHECK(flag == 1 && v == &vals[6], "DUP_FN attribute: flag %d", flag);
    get(b, kv_never, &flag);
    CHECK(flag == 0, "copy callback with flag 0 still copied");
    v = get(a, kv_next, &flag);
    CHECK(flag == 1 && v == &vals[0], "original changed by dup");

    /* The copy callback's arguments (the last copy_next call). */
    reset();
    MPI_OK(MPI_Comm_dup(b, &c));
    CHECK(s.copies == 1, "dup of b ran %d copy callbacks, want 1", s.copies);
    CHECK(s.copy_comm == b, "copy callback got the wrong comm");
    CHECK(s.copy_keyval == kv_next, "copy callback keyval %d want %d", s.copy_keyval, kv_next);
    CHECK(s.copy_extra == &extra_a, "copy callback extra_state");
    CHECK(s.copy_in == &vals[1], "copy callback attribute_val_in");
    v = get(c, kv_next, &flag);
    CHECK(flag == 1 && v == &vals[2], "second-generation copy");

    /* Overwrite runs delete on the old value. */
    reset();
    MPI_OK(MPI_Comm_set_attr(c, kv_next, &vals[4]));
    CHECK(s.deletes == 1 && s.delete_val == &vals[2] && s.delete_comm == c &&
              s.delete_keyval == kv_next && s.delete_extra == &extra_a,
          "overwrite: %d deletes, args wrong", s.deletes);
    /* delete_attr runs delete and unsets. */
    reset();
    MPI_OK(MPI_Comm_delete_attr(c, kv_next));
    CHECK(s.deletes == 1 && s.delete_val == &vals[4], "delete_attr: %d deletes", s.deletes);
    get(c, kv_next, &flag);
    CHECK(flag == 0, "attribute still set after delete_attr");

    /* Free runs delete once per attribute with a delete callback. */
    reset();
    MPI_OK(MPI_Comm_free(&c));
    CHECK(s.deletes == 0, "free of c (no attrs with delete) ran %d deletes", s.deletes);
    reset();
    MPI_OK(MPI_Comm_free(&b));
    CHECK(s.deletes == 1 && s.delete_val == &vals[1], "free of b: %d deletes", s.deletes);

    /* Idup and dup_with_info copy too. */
    reset();
    MPI_OK(MPI_Comm_idup(a, &b, &req));
    MPI_OK(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK(s.copies == 2, "idup ran %d copy callbacks, want 2", s.copies);
    v = get(b, kv_next, &flag);
    CHECK(flag == 1 && v == &vals[1], "idup copied value");
    reset();
    MPI_OK(MPI_Comm_dup_with_info(a, MPI_INFO_NULL, &c));
    CHECK(s.copies == 2, "dup_with_info ran %d copy callbacks, want 2", s.copies);
    v = get(c, kv_next, &flag);
    CHECK(flag == 1 && v == &vals[1], "dup_with_info copied value");
    MPI_OK(MPI_Comm_free(&b));
    MPI_OK(MPI_Comm_free(&c));

    /* A freed keyval: the handle becomes invalid, attributes stay until
     * the communicator goes, and then their delete callback still runs. */
    kv_saved = kv_null;
    MPI_OK(MPI_Comm_free_keyval(&kv_null));
    CHECK(kv_null == MPI_KEYVAL_INVALID, "free_keyval left %d", kv_null);
    (void)kv_saved;
    reset();
    MPI_OK(MPI_Comm_free(&a));
    CHECK(s.deletes == 2, "free of a ran %d deletes, want 2", s.deletes);
    CHECK(a == MPI_COMM_NULL, "free did not null the handle");

    MPI_OK(MPI_Comm_free_keyval(&kv_next));
    MPI_OK(MPI_Comm_free_keyval(&kv_dup));
    MPI_OK(MPI_Comm_free_keyval(&kv_never));
}

static void failing_copy(void)
{
    MPI_Comm a, b = MPI_COMM_NULL;
    int kv, rc, cls = -1;

    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &a));
    MPI_OK(MPI_Comm_set_errhandler(a, MPI_ERRORS_RETURN));
    MPI_OK(MPI_Comm_create_keyval(copy_fails, delete_count, &kv, NULL));
    MPI_OK(MPI_Comm_set_attr(a, kv, &vals[3]));
    reset();
    rc = MPI_Comm_dup(a, &b);
    CHECK(rc != MPI_SUCCESS, "dup succeeded despite a failing copy callback");
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_OTHER, "failed dup: class %d, want MPI_ERR_OTHER", cls);
    CHECK(s.copies == 1, "failing copy ran %d times", s.copies);
    MPI_OK(MPI_Comm_delete_attr(a, kv));
    MPI_OK(MPI_Comm_free_keyval(&kv));
    MPI_OK(MPI_Comm_free(&a));
}

static int del_old(MPI_Comm comm, int keyval, void *val, void *extra)
{
    (void)comm, (void)keyval, (void)extra;
    s.deletes++;
    s.delete_val = val;
    return MPI_SUCCESS;
}

/* MPI-1 names (deprecated, still exported). */
static void mpi1_names(void)
{
    MPI_Comm a, b;
    int kv, flag;
    void *v;

    MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &a));
    MPI_OK(MPI_Keyval_create(MPI_DUP_FN, del_old, &kv, NULL));
    MPI_OK(MPI_Attr_put(a, kv, &vals[2]));
    flag = 0;
    MPI_OK(MPI_Attr_get(a, kv, &v, &flag));
    CHECK(flag == 1 && v == &vals[2], "Attr_get");
    MPI_OK(MPI_Comm_dup(a, &b));
    flag = 0;
    MPI_OK(MPI_Attr_get(b, kv, &v, &flag));
    CHECK(flag == 1 && v == &vals[2], "MPI_DUP_FN through Comm_dup");
    reset();
    MPI_OK(MPI_Attr_delete(a, kv));
    CHECK(s.deletes == 1 && s.delete_val == &vals[2], "Attr_delete ran %d", s.deletes);
    MPI_OK(MPI_Keyval_free(&kv));
    CHECK(kv == MPI_KEYVAL_INVALID, "Keyval_free");
    reset();
    MPI_OK(MPI_Comm_free(&b));
    CHECK(s.deletes == 1, "free after Keyval_free ran %d deletes", s.deletes);
    MPI_OK(MPI_Comm_free(&a));
}

static void predefined(void)
{
    int *p = NULL, flag = 0, rc, bogus = 12345;

    MPI_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &p, &flag));
    CHECK(flag && p && *p >= 32767, "MPI_TAG_UB");
    flag = 0;
    MPI_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_HOST, &p, &flag));
    CHECK(flag && p && (*p == MPI_PROC_NULL || (*p >= 0 && *p < lt_size)), "MPI_HOST");
    flag = 0;
    MPI_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_IO, &p, &flag));
    CHECK(flag && p, "MPI_IO");
    flag = 0;
    MPI_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &p, &flag));
    CHECK(flag && p && (*p == 0 || *p == 1), "MPI_WTIME_IS_GLOBAL");
    flag = -1;
    MPI_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &p, &flag));
    CHECK(flag == 0 || (p && *p >= lt_size), "MPI_UNIVERSE_SIZE");
    flag = 0;
    MPI_OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &p, &flag));
    CHECK(flag && p && *p >= MPI_ERR_LASTCODE, "MPI_LASTUSEDCODE");

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Comm_set_attr(MPI_COMM_WORLD, MPI_TAG_UB, &bogus);
    CHECK(rc != MPI_SUCCESS, "set_attr on MPI_TAG_UB succeeded");
    rc = MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_KEYVAL_INVALID, &p, &flag);
    CHECK(rc != MPI_SUCCESS, "get_attr with MPI_KEYVAL_INVALID succeeded");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

static int type_deletes;
static int type_delete(MPI_Datatype t, int kv, void *val, void *extra)
{
    (void)kv, (void)extra;
    CHECK(t == MPI_INT && val == &vals[3], "type delete callback arguments");
    type_deletes++;
    return MPI_SUCCESS;
}

static void datatype_attrs(void)
{
    int kv, flag = -1;
    void *v = NULL;

    MPI_OK(MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, type_delete, &kv, NULL));
    MPI_OK(MPI_Type_get_attr(MPI_INT, kv, &v, &flag));
    CHECK(flag == 0, "type attr set before set");
    MPI_OK(MPI_Type_set_attr(MPI_INT, kv, &vals[3]));
    MPI_OK(MPI_Type_get_attr(MPI_INT, kv, &v, &flag));
    CHECK(flag == 1 && v == &vals[3], "Type_get_attr");
    MPI_OK(MPI_Type_get_attr(MPI_DOUBLE, kv, &v, &flag));
    CHECK(flag == 0, "attribute leaked to another type");
    MPI_OK(MPI_Type_delete_attr(MPI_INT, kv));
    CHECK(type_deletes == 1, "Type_delete_attr ran %d deletes", type_deletes);
    MPI_OK(MPI_Type_free_keyval(&kv));
    CHECK(kv == MPI_KEYVAL_INVALID, "Type_free_keyval");
}

int main(int argc, char **argv)
{
    lt_init("attr_comm", &argc, &argv);
    callbacks();
    failing_copy();
    mpi1_names();
    predefined();
    datatype_attrs();
    return lt_finish();
}
