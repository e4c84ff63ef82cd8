#!/usr/bin/env bash
# Lists the MPI_/PMPI_ symbols that binaries or shared objects import but
# Lanai's library does not export. Exits 1 if any are missing.
# Imports are undefined dynamic symbols plus data objects an executable
# copied into itself (R_X86_64_COPY relocations, e.g. MPI_UNWEIGHTED),
# which nm lists as defined.
# Usage: tools/check_symbols.sh BINARY_OR_LIB...   (env: LANAI_LIB)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LIB=${LANAI_LIB:-$ROOT/build/lib/libmpi.so.12}

if [ $# -eq 0 ]; then
    echo "usage: $0 BINARY_OR_LIB..." >&2
    exit 2
fi
if [ ! -r "$LIB" ]; then
    echo "error: Lanai library not found at $LIB (set LANAI_LIB)" >&2
    exit 2
fi

# Symbol names only; nm -D may append @VERSION to imports.
exported=$(nm -D --defined-only "$LIB" | awk '{print $3}' | sed 's/@.*//' | sort -u)
imported=""
for bin in "$@"; do
    if ! syms=$(nm -D --undefined-only "$bin" 2>&1); then
        echo "error: cannot read dynamic symbols of $bin: $syms" >&2
        exit 2
    fi
    copies=$(readelf -rW "$bin" | awk '$3 ~ /_COPY$/ {print $5}')
    imported+=$(printf '%s\n%s\n' "$syms" "$copies" | awk '{print $NF}' | sed 's/@.*//' \
        | grep -E '^P?MPI[A-Z]?_' || true)
    imported+=$'\n'
done
imported=$(printf '%s\n' "$imported" | sed '/^$/d' | sort -u)
total=$(printf '%s\n' "$imported" | sed '/^$/d' | wc -l)
missing=$(comm -23 <(printf '%s\n' "$imported" | sed '/^$/d') <(printf '%s\n' "$exported"))

if [ -n "$missing" ]; then
    count=$(printf '%s\n' "$missing" | wc -l)
    echo "$count of $total imported MPI symbols missing from $LIB:"
    printf '  %s\n' $missing
    exit 1
fi
echo "all $total imported MPI symbols present"
