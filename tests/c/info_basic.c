/* Info objects: set/get/valuelen/get_string/nkeys/nthkey/dup/delete/free,
 * the error classes for bad keys and values, MPI_INFO_ENV, and infos on
 * communicators (set_info, get_info, dup_with_info). */
#include "lt.h"

static int class_of(int rc)
{
    int cls = -1;
    if (rc == MPI_SUCCESS)
        return MPI_SUCCESS;
    MPI_Error_class(rc, &cls);
    return cls;
}

static void basics(void)
{
    MPI_Info info, copy;
    char key[MPI_MAX_INFO_KEY + 1], val[64];
    int n = -1, flag = -1, len = -1, buflen;

    MPI_OK(MPI_Info_create(&info));
    CHECK(info != MPI_INFO_NULL, "Info_create gave MPI_INFO_NULL");
    MPI_OK(MPI_Info_get_nkeys(info, &n));
    CHECK(n == 0, "new info has %d keys", n);
    MPI_OK(MPI_Info_set(info, "alpha", "one"));
    MPI_OK(MPI_Info_set(info, "beta", "twenty-two"));
    MPI_OK(MPI_Info_set(info, "gamma", ""));
    MPI_OK(MPI_Info_set(info, "alpha", "uno")); /* overwrite keeps one key */
    MPI_OK(MPI_Info_get_nkeys(info, &n));
    CHECK(n == 3, "nkeys %d want 3", n);
    MPI_OK(MPI_Info_get_nthkey(info, 0, key));
    CHECK(strcmp(key, "alpha") == 0, "key 0 is '%s'", key);
    MPI_OK(MPI_Info_get_nthkey(info, 1, key));
    CHECK(strcmp(key, "beta") == 0, "key 1 is '%s'", key);
    MPI_OK(MPI_Info_get_nthkey(info, 2, key));
    CHECK(strcmp(key, "gamma") == 0, "key 2 is '%s'", key);

    MPI_OK(MPI_Info_get(info, "alpha", sizeof val - 1, val, &flag));
    CHECK(flag == 1 && strcmp(val, "uno") == 0, "get alpha: flag %d '%s'", flag, val);
    MPI_OK(MPI_Info_get(info, "ALPHA", sizeof val - 1, val, &flag));
    CHECK(flag == 0, "keys are case sensitive");
    /* Truncation to valuelen characters, as the standard says (MPICH
     * reports an error instead). */
    if (!lt_running_on_mpich()) {
        memset(val, 'x', sizeof val);
        MPI_OK(MPI_Info_get(info, "beta", 6, val, &flag));
        CHECK(flag == 1 && strcmp(val, "twenty") == 0, "truncated get '%s'", val);
    }
    MPI_OK(MPI_Info_get_valuelen(info, "beta", &len, &flag));
    CHECK(flag == 1 && len == 10, "valuelen %d", len);
    MPI_OK(MPI_Info_get_valuelen(info, "nope", &len, &flag));
    CHECK(flag == 0, "valuelen of missing key has flag %d", flag);
    MPI_OK(MPI_Info_get_valuelen(info, "gamma", &len, &flag));
    CHECK(flag == 1 && len == 0, "empty value: flag %d len %d", flag, len);

    /* MPI 4 get_string: buflen in = buffer size, out = length + 1. */
    buflen = 0;
    MPI_OK(MPI_Info_get_string(info, "beta", &buflen, val, &flag));
    CHECK(flag == 1 && buflen == 11, "get_string size query: %d", buflen);
    buflen = 4;
    MPI_OK(MPI_Info_get_string(info, "beta", &buflen, val, &flag));
    CHECK(flag == 1 && buflen == 11 && strcmp(val, "twe") == 0, "short get_string '%s' %d", val,
          buflen);
    buflen = sizeof val;
    MPI_OK(MPI_Info_get_string(info, "beta", &buflen, val, &flag));
    CHECK(flag == 1 && strcmp(val, "twenty-two") == 0, "get_string '%s'", val);
    buflen = sizeof val;
    MPI_OK(MPI_Info_get_string(info, "nope", &buflen, val, &flag));
    CHECK(flag == 0, "get_string of missing key");

    /* Dup is independent of the original. */
    MPI_OK(MPI_Info_dup(info, &copy));
    CHECK(copy != info, "dup returned the same handle");
    MPI_OK(MPI_Info_delete(info, "alpha"));
    MPI_OK(MPI_Info_get_nkeys(info, &n));
    CHECK(n == 2, "after delete nkeys %d", n);
    MPI_OK(MPI_Info_get_nthkey(info, 0, key));
    CHECK(strcmp(key, "beta") == 0, "after delete key 0 is '%s'", key);
    MPI_OK(MPI_Info_get_nkeys(copy, &n));
    CHECK(n == 3, "dup has %d keys", n);
    MPI_OK(MPI_Info_get(copy, "alpha", sizeof val - 1, val, &flag));
    CHECK(flag == 1 && strcmp(val, "uno") == 0, "dup lost alpha");
    MPI_OK(MPI_Info_free(&copy));
    CHECK(copy == MPI_INFO_NULL, "Info_free left the handle");
    MPI_OK(MPI_Info_free(&info));
    CHECK(info == MPI_INFO_NULL, "Info_free left the handle");
}

static void errors(void)
{
    MPI_Info info, freed;
    char longkey[MPI_MAX_INFO_KEY + 8], key[MPI_MAX_INFO_KEY + 1];
    char *longval = malloc(MPI_MAX_INFO_VAL + 8);
    int n, flag;

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    memset(longkey, 'k', sizeof longkey);
    longkey[MPI_MAX_INFO_KEY + 1] = 0; /* one over the limit */
    memset(longval, 'v', MPI_MAX_INFO_VAL + 8);
    longval[MPI_MAX_INFO_VAL + 1] = 0;

    MPI_OK(MPI_Info_create(&info));
    CHECK(class_of(MPI_Info_set(info, longkey, "v")) == MPI_ERR_INFO_KEY, "long key");
    CHECK(class_of(MPI_Info_set(info, "", "v")) == MPI_ERR_INFO_KEY, "empty key");
    CHECK(class_of(MPI_Info_set(info, "k", longval)) == MPI_ERR_INFO_VALUE, "long value");
    CHECK(class_of(MPI_Info_delete(info, "absent")) == MPI_ERR_INFO_NOKEY, "delete absent");
    CHECK(class_of(MPI_Info_get_nthkey(info, 0, key)) == MPI_ERR_ARG, "nthkey on empty");
    MPI_OK(MPI_Info_set(info, "k", "v"));
    CHECK(class_of(MPI_Info_get_nthkey(info, 1, key)) == MPI_ERR_ARG, "nthkey 1 of 1");
    CHECK(class_of(MPI_Info_get_nthkey(info, -1, key)) == MPI_ERR_ARG, "nthkey -1");
    /* Exactly at the limits is fine. */
    longkey[MPI_MAX_INFO_KEY] = 0;
    longval[MPI_MAX_INFO_VAL] = 0;
    MPI_OK(MPI_Info_set(info, longkey, longval));
    MPI_OK(MPI_Info_get_valuelen(info, longkey, &n, &flag));
    CHECK(flag && n == MPI_MAX_INFO_VAL, "max-length value has length %d", n);
    CHECK(class_of(MPI_Info_set(MPI_INFO_NULL, "a", "b")) == MPI_ERR_INFO ||
              class_of(MPI_Info_set(MPI_INFO_NULL, "a", "b")) == MPI_ERR_ARG,
          "set on MPI_INFO_NULL");
    freed = info;
    MPI_OK(MPI_Info_free(&info));
    /* MPICH does not catch this; Lanai does. */
    if (!lt_running_on_mpich())
        CHECK(class_of(MPI_Info_get_nkeys(freed, &n)) != MPI_SUCCESS, "use after free");
    free(longval);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

static void env_and_comms(void)
{
    MPI_Info info, got;
    MPI_Comm dup;
    int n = -1;

    MPI_OK(MPI_Info_get_nkeys(MPI_INFO_ENV, &n));
    CHECK(n >= 0, "MPI_INFO_ENV nkeys %d", n);

    MPI_OK(MPI_Info_create(&info));
    MPI_OK(MPI_Info_set(info, "lanai_test_hint", "yes"));
    MPI_OK(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &dup));
    MPI_OK(MPI_Comm_set_info(dup, info));
    MPI_OK(MPI_Comm_get_info(dup, &got));
    CHECK(got != MPI_INFO_NULL && got != info, "get_info must return a new info");
    MPI_OK(MPI_Info_get_nkeys(got, &n));
    CHECK(n >= 0, "get_info nkeys");
    MPI_OK(MPI_Info_free(&got));
    MPI_OK(MPI_Info_free(&info));
    /* The communicator works. */
    MPI_OK(MPI_Barrier(dup));
    MPI_OK(MPI_Comm_free(&dup));
}

int main(int argc, char **argv)
{
    lt_init("info_basic", &argc, &argv);
    basics();
    errors();
    env_and_comms();
    return lt_finish();
}
