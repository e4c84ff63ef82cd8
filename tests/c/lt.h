/*
 * Shared helpers for the Lanai conformance programs.
 *
 * Each program calls lt_init() and ends with `return lt_finish();`.
 * Failures are counted per rank and printed as
 *   FAIL <name> rank <r>: line <n>: <what>
 * and rank 0 prints exactly one verdict line: `PASS <name>` or
 * `FAIL <name>: <k> failure(s)`. The verdict is gathered with plain
 * point-to-point messages so that p2p tests do not depend on collectives.
 */
#ifndef LANAI_TEST_H
#define LANAI_TEST_H

/* nanosleep/alarm under strict -std=c11 too; lt.h must come first. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Tag reserved for the verdict exchange; below the minimum TAG_UB (32767). */
#define LT_VERDICT_TAG 32001
/* Watchdog: a hung program dies by SIGALRM rather than stalling CI. */
#define LT_DEFAULT_ALARM_S 150

static const char *lt_name = "?";
static int lt_rank = 0;
static int lt_size = 1;
static long lt_errs = 0;

static inline void lt_fail_at(int line, const char *fmt, ...)
{
    va_list ap;
    lt_errs++;
    if (lt_errs > 20)
        return; /* keep the log readable when a whole loop fails */
    printf("FAIL %s rank %d: line %d: ", lt_name, lt_rank, line);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        if (!(cond))                                                          \
            lt_fail_at(__LINE__, __VA_ARGS__);                                \
    } while (0)

/* Check an MPI return code for MPI_SUCCESS and name the call on failure. */
#define MPI_OK(call)                                                          \
    do {                                                                      \
        int lt_rc_ = (call);                                                  \
        if (lt_rc_ != MPI_SUCCESS) {                                          \
            char lt_msg_[MPI_MAX_ERROR_STRING];                               \
            int lt_len_ = 0;                                                  \
            lt_msg_[0] = 0;                                                   \
            MPI_Error_string(lt_rc_, lt_msg_, &lt_len_);                      \
            lt_fail_at(__LINE__, "%s returned %d (%s)", #call, lt_rc_,        \
                       lt_msg_);                                              \
        }                                                                     \
    } while (0)

static inline void lt_start_watchdog(void)
{
    const char *s = getenv("LANAI_TEST_ALARM");
    int secs = s ? atoi(s) : LT_DEFAULT_ALARM_S;
    if (secs > 0)
        alarm((unsigned)secs);
}

static inline void lt_after_init(const char *name)
{
    lt_name = name;
    MPI_Comm_rank(MPI_COMM_WORLD, &lt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &lt_size);
    lt_start_watchdog();
}

static inline void lt_init(const char *name, int *argc, char ***argv)
{
    MPI_Init(argc, argv);
    lt_after_init(name);
}

/* Sum the failure counts on rank 0 and share the total with every rank. */
static inline long lt_total_failures(void)
{
    long total = lt_errs;
    int r;
    if (lt_rank == 0) {
        for (r = 1; r < lt_size; r++) {
            long e = 0;
            MPI_Recv(&e, 1, MPI_LONG, r, LT_VERDICT_TAG, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            total += e;
        }
        for (r = 1; r < lt_size; r++)
            MPI_Send(&total, 1, MPI_LONG, r, LT_VERDICT_TAG, MPI_COMM_WORLD);
    } else {
        MPI_Send(&lt_errs, 1, MPI_LONG, 0, LT_VERDICT_TAG, MPI_COMM_WORLD);
        MPI_Recv(&total, 1, MPI_LONG, 0, LT_VERDICT_TAG, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    }
    return total;
}

static inline void lt_print_verdict(long total)
{
    if (lt_rank != 0)
        return;
    if (total == 0)
        printf("PASS %s\n", lt_name);
    else
        printf("FAIL %s: %ld failure(s)\n", lt_name, total);
    fflush(stdout);
}

static inline int lt_finish(void)
{
    long total = lt_total_failures();
    lt_print_verdict(total);
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}

static inline void lt_sleep_ms(int ms)
{
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}

/* True when running on the real MPICH library (not on Lanai): used only to
 * excuse documented MPICH quirks, so Lanai is always held to the standard. */
static inline int lt_running_on_mpich(void)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    v[0] = 0;
    MPI_Get_library_version(v, &len);
    return strstr(v, "MPICH Version") != NULL && strstr(v, "Lanai") == NULL;
}

/* Peak resident size of this process so far, in KiB (VmHWM); -1 if unknown. */
static inline long lt_peak_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
            break;
    fclose(f);
    return kib;
}

/* Fails, naming `what`, when this process's peak resident size has grown
 * by more than `limit_mib` MiB since `base_kib` (an lt_peak_kib() reading);
 * a limit of 0 checks nothing. */
#define LT_CHECK_GROWTH(base_kib, limit_mib, what)                            \
    do {                                                                      \
        long lt_grew_ = lt_peak_kib() - (base_kib);                           \
        if ((limit_mib) > 0)                                                  \
            CHECK((base_kib) >= 0 && lt_grew_ <= (limit_mib) * 1024L,         \
                  "peak resident size grew by %ld KiB over %s (limit %ld MiB)", \
                  lt_grew_, what, (long)(limit_mib));                         \
    } while (0)

static inline int lt_next(void) { return (lt_rank + 1) % lt_size; }
static inline int lt_prev(void) { return (lt_rank + lt_size - 1) % lt_size; }

#endif
