/* Attributes on datatypes: a copy callback runs on MPI_Type_dup (and its
 * result lands on the duplicate), a delete callback on overwrite, on
 * MPI_Type_delete_attr and on MPI_Type_free; MPI_TYPE_DUP_FN copies the
 * value as is. Counts are checked against what each call must cause. */
#include "lt.h"

static int copies, deletes;
static void *last_deleted;

static int copy_fn(MPI_Datatype t, int key, void *extra, void *in, void *out, int *flag)
{
    (void)t;
    (void)key;
    CHECK(extra == (void *)&copies, "extra_state passed through");
    copies++;
    *(void **)out = (void *)((char *)in + 1); /* the duplicate gets value + 1 */
    *flag = 1;
    return MPI_SUCCESS;
}

static int delete_fn(MPI_Datatype t, int key, void *val, void *extra)
{
    (void)t;
    (void)key;
    (void)extra;
    deletes++;
    last_deleted = val;
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    MPI_Datatype base, dup1, dup2;
    int key, key2, flag = 0;
    void *val = NULL;
    char *v0 = (char *)0x1000;
    lt_init("attr_type", &argc, &argv);

    MPI_OK(MPI_Type_contiguous(3, MPI_INT, &base));
    MPI_OK(MPI_Type_commit(&base));
    MPI_OK(MPI_Type_create_keyval(copy_fn, delete_fn, &key, &copies));
    MPI_OK(MPI_Type_create_keyval(MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN, &key2, NULL));

    MPI_OK(MPI_Type_set_attr(base, key, v0));
    MPI_OK(MPI_Type_set_attr(base, key2, (void *)0x2000));
    MPI_OK(MPI_Type_get_attr(base, key, &val, &flag));
    CHECK(flag && val == v0, "attribute read back");

    MPI_OK(MPI_Type_dup(base, &dup1));
    CHECK(copies == 1, "copy callback ran once on dup (ran %d)", copies);
    MPI_OK(MPI_Type_get_attr(dup1, key, &val, &flag));
    CHECK(flag && val == v0 + 1, "copy callback's value on the duplicate");
    MPI_OK(MPI_Type_get_attr(dup1, key2, &val, &flag));
    CHECK(flag && val == (void *)0x2000, "MPI_TYPE_DUP_FN copies the value");

    /* Overwrite deletes the old value. */
    MPI_OK(MPI_Type_set_attr(dup1, key, v0 + 7));
    CHECK(deletes == 1 && last_deleted == v0 + 1, "overwrite deleted the old value");

    MPI_OK(MPI_Type_dup(dup1, &dup2));
    CHECK(copies == 2, "second dup copied");
    MPI_OK(MPI_Type_delete_attr(dup2, key));
    CHECK(deletes == 2 && last_deleted == v0 + 8, "delete_attr ran the callback");
    MPI_OK(MPI_Type_get_attr(dup2, key, &val, &flag));
    CHECK(!flag, "deleted attribute is gone");

    /* Newest first: MPICH keeps a type alive (attributes included) while
     * a duplicate of it exists. */
    MPI_OK(MPI_Type_free(&dup2));
    CHECK(deletes == 2, "nothing left to delete on dup2");
    MPI_OK(MPI_Type_free(&dup1));
    CHECK(deletes == 3 && last_deleted == v0 + 7, "free ran the callback");
    CHECK(dup1 == MPI_DATATYPE_NULL, "free wrote MPI_DATATYPE_NULL");
    MPI_OK(MPI_Type_free(&base));
    CHECK(deletes == 4 && last_deleted == v0, "base's attribute deleted on free");

    /* A predefined type cannot be freed, and keeps its attributes. */
    MPI_Datatype named = MPI_INT;
    MPI_OK(MPI_Type_set_attr(named, key, v0 + 3));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int cls = MPI_SUCCESS;
    MPI_Error_class(MPI_Type_free(&named), &cls);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    CHECK(cls == MPI_ERR_TYPE && named == MPI_INT, "freeing MPI_INT is refused (class %d)", cls);
    CHECK(deletes == 4, "the refused free ran no delete callback");
    MPI_OK(MPI_Type_get_attr(MPI_INT, key, &val, &flag));
    CHECK(flag && val == v0 + 3, "MPI_INT keeps its attribute");
    MPI_OK(MPI_Type_delete_attr(MPI_INT, key));
    CHECK(deletes == 5 && last_deleted == v0 + 3, "delete_attr on MPI_INT ran the callback");
    MPI_OK(MPI_Type_free_keyval(&key));
    MPI_OK(MPI_Type_free_keyval(&key2));
    return lt_finish();
}
