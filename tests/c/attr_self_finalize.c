/* Attributes on MPI_COMM_SELF are deleted first thing in MPI_Finalize,
 * while MPI still works, in the reverse order of being set. Each rank prints
 * `SELF_DELETE <rank> <order>` from the callbacks; the test checks them. */
#include "lt.h"

static int order;

static int self_delete(MPI_Comm comm, int keyval, void *val, void *extra)
{
    int flag = 1, rank = -1, size = 0;
    (void)keyval, (void)extra;
    MPI_Finalized(&flag);
    /* MPI is fully usable here: query world and talk to ourselves. */
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(comm, &size);
    printf("SELF_DELETE %d %d %d finalized=%d self_size=%d\n", rank, *(int *)val, order++,
           flag, size);
    fflush(stdout);
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    static int first = 1, second = 2;
    int kv1, kv2;
    lt_init("attr_self_finalize", &argc, &argv);
    MPI_OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete, &kv1, NULL));
    MPI_OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete, &kv2, NULL));
    MPI_OK(MPI_Comm_set_attr(MPI_COMM_SELF, kv1, &first));
    MPI_OK(MPI_Comm_set_attr(MPI_COMM_SELF, kv2, &second));
    /* Freeing the keyvals does not remove the attributes. */
    MPI_OK(MPI_Comm_free_keyval(&kv1));
    MPI_OK(MPI_Comm_free_keyval(&kv2));
    return lt_finish();
}
