/* A sender that runs ahead of a slow receiver. Each even rank sends
 * `calls` messages of `bytes` to the odd rank after it, which lingers
 * before each receive (every other one from MPI_ANY_SOURCE), so the
 * messages arrive long before their receives. Every byte is checked. A
 * library that sends large messages eagerly keeps them all, queued at the
 * sender or unexpected at the receiver; each rank's peak resident size may
 * grow by at most `limit_mib` over the loop.
 * usage: p2p_runahead [calls] [bytes] [limit_mib]   (limit 0: no check) */
#include "lt.h"

static unsigned char pattern(int call, long i) { return (unsigned char)(call * 31 + i * 7 + (i >> 9)); }

int main(int argc, char **argv)
{
    lt_init("p2p_runahead", &argc, &argv);
    int calls = argc > 1 ? atoi(argv[1]) : 400;
    long bytes = argc > 2 ? atol(argv[2]) : 262144;
    long limit_mib = argc > 3 ? atol(argv[3]) : 32;
    unsigned char *buf = malloc(bytes);
    int peer = lt_rank % 2 ? lt_rank - 1 : lt_rank + 1;
    long base = -1;
    if (peer < lt_size) {
        for (int call = 0; call < calls; call++) {
            if (lt_rank % 2 == 0) {
                for (long i = 0; i < bytes; i++)
                    buf[i] = pattern(call, i);
                MPI_OK(MPI_Send(buf, (int)bytes, MPI_BYTE, peer, call % 7, MPI_COMM_WORLD));
            } else {
                MPI_Status st;
                int count = -1;
                lt_sleep_ms(call % 16 == 0 ? 2 : 0);
                memset(buf, 0, bytes);
                MPI_OK(MPI_Recv(buf, (int)bytes, MPI_BYTE, call % 2 ? MPI_ANY_SOURCE : peer,
                                call % 7, MPI_COMM_WORLD, &st));
                MPI_Get_count(&st, MPI_BYTE, &count);
                CHECK(st.MPI_SOURCE == peer && count == bytes, "call %d: source %d count %d",
                      call, st.MPI_SOURCE, count);
                long bad = 0;
                for (long i = 0; i < bytes; i++)
                    bad += buf[i] != pattern(call, i);
                CHECK(bad == 0, "call %d: %ld bytes differ", call, bad);
            }
            if (call == 0)
                base = lt_peak_kib();
        }
        char what[64];
        snprintf(what, sizeof what, "%d messages of %ld bytes", calls, bytes);
        LT_CHECK_GROWTH(base, limit_mib, what);
    }
    free(buf);
    return lt_finish();
}
