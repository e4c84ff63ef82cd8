#!/usr/bin/env bash
# Checks include/mpi.h against MPICH's mpi.h (the ABI reference):
#  - the same set of MPI_/PMPI_/MPIO_ macros, enum constants and prototypes;
#  - every constant has the same type class and value (a generated C program
#    prints them all, built once with each header, and the outputs are diffed);
#  - every MPICH prototype, extern object and typedef, redeclared under our
#    header, is compatible (the C compiler rejects conflicting redeclarations);
#  - type sizes and MPI_Status field offsets agree;
#  - crates/lanai/src/abi/consts.rs holds the same values (compiled with rustc).
# Exits non-zero on any mismatch.
# Usage: tools/check_header.sh   (env: MPICH_INCLUDE, LANAI_INCLUDE, KEEP_WORK=1)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OURS=${LANAI_INCLUDE:-$ROOT/include}
MPICH_INC=${MPICH_INCLUDE:-/usr/include/x86_64-linux-gnu/mpich}
CONSTS=$ROOT/crates/lanai/src/abi/consts.rs
WORK=$(mktemp -d /tmp/lanai-check-header.XXXXXX)
if [ "${KEEP_WORK:-0}" = 1 ]; then echo "work dir: $WORK"; else trap 'rm -rf "$WORK"' EXIT; fi

python3 - "$OURS" "$MPICH_INC" "$WORK" "$CONSTS" <<'PY'
import os, re, subprocess, sys

ours_inc, mpich_inc, work, consts_rs = sys.argv[1:5]
failures = []

def fail(msg):
    failures.append(msg)

def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        out = (r.stdout + r.stderr)[-3000:]
        sys.stderr.write(f"command failed (status {r.returncode}): {' '.join(cmd)}\n{out}\n")
        sys.exit(2)
    return r.stdout

def preprocess(inc, flags):
    src = "#include <mpi.h>\n"
    base = ["gcc", "-E", "-DMPICH_SKIP_MPICXX", "-I", inc, "-x", "c", "-"]
    macros = run(base + ["-dM"], input=src)
    text = run(base + ["-P"], input=src)
    return macros, text

# Names that are MPICH's own business, not part of the MPI ABI we promise.
def mpich_only(name):
    return (name.startswith(("MPICH", "MPIX", "PMPIX", "QMPI", "MPIR", "MPIIMPL", "ROMIO",
                             "HAVE_", "MPIU_", "NO_TAGS"))
            or name in ("MPI_FILE_DEFINED", "MPI_INCLUDED", "MPIO_INCLUDE",
                        "MPIO_REQUEST_DEFINED", "MPIO_USES_MPI_REQUEST", "MPI_PROTO_H_INCLUDED"))

def ours_only(name):
    return name.startswith("LANAI_")

def analyse(inc):
    macros, text = preprocess(inc, [])
    objs, funcs = {}, set()
    for line in macros.splitlines():
        m = re.match(r"#define (\w+)(\([^)]*\))?(?: (.*))?$", line)
        if not m:
            continue
        name = m.group(1)
        if not re.match(r"P?MPIO?_", name) and not name.startswith("LANAI_"):
            continue
        if m.group(2):
            funcs.add(name)
        else:
            objs[name] = m.group(3) or ""
    flat = re.sub(r"\s+", " ", text)
    enums = set()
    for m in re.finditer(r"enum\s*(\w*)\s*\{([^}]*)\}", flat):
        if m.group(1).startswith("QMPI"):
            continue
        for item in m.group(2).split(","):
            ident = item.split("=")[0].strip()
            if ident:
                enums.add(ident)
    protos, externs, typedefs = {}, {}, []
    for decl in flat.split(";"):
        d = decl.strip()
        if d.startswith("typedef"):
            if "{" not in d and "}" not in d:
                typedefs.append(d)
            continue
        if "{" in d or "}" in d:
            d = d.split("}")[-1].strip()
        m = re.match(r"^([\w\s\*]+?)\s*\b((?:P?MPI|MPIR)_\w+)\s*\((.*)\)$", d)
        if m:
            protos[m.group(2)] = d
            continue
        m = re.match(r"^extern .*?\b((?:P?MPI|MPIR)_\w+)(\[\d*\])?$", d)
        if m:
            externs[m.group(1)] = d
    return objs, funcs, enums, protos, externs, typedefs

o_objs, o_funcs, o_enums, o_protos, o_externs, o_typedefs = analyse(ours_inc)
m_objs, m_funcs, m_enums, m_protos, m_externs, m_typedefs = analyse(mpich_inc)

def compare_sets(what, ours, theirs, extra_ok=lambda n: False):
    for n in sorted(set(theirs) - set(ours)):
        if not mpich_only(n):
            fail(f"{what} missing from our header: {n}")
    for n in sorted(set(ours) - set(theirs)):
        if not ours_only(n) and not extra_ok(n):
            fail(f"{what} in our header but not MPICH's: {n}")

handle_conv = re.compile(r"^P?MPI_(Comm|Type|Group|Info|Request|Op|Errhandler|Win|Message|Session)_(c2f|f2c)$")
compare_sets("macro", o_objs, m_objs)
compare_sets("function-like macro", o_funcs, m_funcs)
compare_sets("enum constant", o_enums, m_enums)
# We also declare the handle conversions as functions (MPICH has only macros).
compare_sets("prototype", o_protos, m_protos, lambda n: bool(handle_conv.match(n)))
compare_sets("extern object", o_externs, m_externs)

# ---- Values: one program, built with each header ----
consts = sorted((set(o_objs) & set(m_objs)) | (o_enums & m_enums))
consts = [n for n in consts if not mpich_only(n)
          and not re.match(r"^P?MPIO_(Wait|Test|Request)$", n)]  # type/function aliases
convs = sorted(n for n in (o_funcs & m_funcs) if handle_conv.match(n))
prog = [r'''
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
typedef int (*copy_t)(int, int, void *, void *, void *, int *);
typedef int (*delete_t)(int, int, void *, void *);
typedef MPI_Datarep_conversion_function *conv_t;
typedef MPI_Datarep_conversion_function_c *convc_t;
#define KIND(x) _Generic((x), int: "int", unsigned: "unsigned", long: "long", \
    long long: "long long", char *: "string", void *: "void*", int *: "int*", \
    char **: "char**", char ***: "char***", MPI_Status *: "MPI_Status*", MPI_File: "MPI_File", \
    MPI_T_enum: "MPI_T_enum", MPI_T_cvar_handle: "MPI_T_cvar_handle", \
    MPI_T_pvar_handle: "MPI_T_pvar_handle", MPI_T_pvar_session: "MPI_T_pvar_session", \
    copy_t: "copy_fn", delete_t: "delete_fn", conv_t: "conv_fn", convc_t: "convc_fn", \
    default: "other")
/* Function pointers print as 0 (null) or 1 (not null): addresses differ per build. */
#define NUM(x) ((long long)(intptr_t)_Generic((x), char *: 0, copy_t: (x) != 0, \
    delete_t: (x) != 0, conv_t: (x) != 0, convc_t: (x) != 0, default: (x)))
#define STR(x) _Generic((x), char *: (x), default: "")
#define SHOW(x) printf("%s %s %lld %s\n", #x, KIND(x), NUM(x), STR(x))
#define SIZE(t) printf("sizeof(%s) %zu\n", #t, sizeof(t))
#define OFF(t, f) printf("offsetof(%s,%s) %zu\n", #t, #f, offsetof(t, f))
int main(void) {
''']
for n in consts:
    prog.append(f"    SHOW({n});")
for n in sorted(n for n in o_objs if ours_only(n) and o_objs[n]):
    prog.append(f"#ifdef {n}\n    SHOW({n});\n#endif")
for n in convs:
    prog.append(f"    SHOW({n}(0x44000001));")
for t in ["MPI_Aint", "MPI_Offset", "MPI_Count", "MPI_Fint", "MPI_Comm", "MPI_Datatype",
          "MPI_Group", "MPI_Win", "MPI_Op", "MPI_Errhandler", "MPI_Request", "MPI_Message",
          "MPI_Info", "MPI_Session", "MPI_File", "MPI_Status", "MPI_F08_status",
          "MPI_T_enum", "MPI_T_cb_safety", "MPI_T_source_order"]:
    prog.append(f"    SIZE({t});")
for t in ["MPI_Status", "MPI_F08_status"]:
    for f in ["count_lo", "count_hi_and_cancelled", "MPI_SOURCE", "MPI_TAG", "MPI_ERROR"]:
        prog.append(f"    OFF({t}, {f});")
prog.append("    return 0;\n}\n")
with open(os.path.join(work, "values.c"), "w") as f:
    f.write("\n".join(prog))

def build_and_run(tag, cc):
    exe = os.path.join(work, f"values-{tag}")
    run(cc + ["-std=c11", "-O0", "-o", exe, os.path.join(work, "values.c")])
    return run([exe])

ours_out = build_and_run("ours", ["gcc", "-Wall", "-Werror", "-I", ours_inc])
mpicc = "mpicc.mpich"
if mpich_inc == "/usr/include/x86_64-linux-gnu/mpich" and subprocess.run(
        ["sh", "-c", f"command -v {mpicc}"], capture_output=True).returncode == 0:
    mpich_cc = [mpicc]
else:
    mpich_cc = ["gcc", "-I", mpich_inc]
mpich_out = build_and_run("mpich", mpich_cc + ["-DMPICH_SKIP_MPICXX"])
o_lines = ours_out.splitlines()
m_lines = mpich_out.splitlines()
o_common = [l for l in o_lines if not ours_only(l)]
for a, b in zip(o_common, m_lines):
    if a != b:
        fail(f"value differs: ours '{a}' vs MPICH '{b}'")
if len(o_common) != len(m_lines):
    fail("value programs printed different numbers of lines")

# ---- Compatibility: MPICH's declarations, redeclared under our header ----
redecl = ["#include <mpi.h>"]
for t in m_typedefs:
    if not re.search(r"\b(MPIX|QMPI|MPIR_T_\w+_t\b)", t) and re.search(r"\bMPI_\w+\b", t):
        redecl.append(t + ";")
for n, d in sorted(m_externs.items()):
    if not mpich_only(n):
        redecl.append(d + ";")
for n, d in sorted(m_protos.items()):
    if not n.startswith(("MPIX", "PMPIX")):
        redecl.append(d + ";")
with open(os.path.join(work, "redecl.c"), "w") as f:
    f.write("\n".join(redecl) + "\n")
r = subprocess.run(["gcc", "-std=c11", "-fsyntax-only", "-Werror", "-I", ours_inc,
                    os.path.join(work, "redecl.c")], capture_output=True, text=True)
if r.returncode != 0:
    errs = [l for l in r.stderr.splitlines() if "error" in l]
    for l in errs[:40]:
        fail(f"incompatible declaration: {l}")
    if not errs:
        fail("redeclaration check failed:\n" + r.stderr)

# ---- consts.rs must agree with the C values ----
c_values = {}
for line in o_lines:
    parts = line.split(" ", 3)
    if len(parts) >= 3 and "(" not in parts[0]:
        c_values[parts[0]] = (parts[1], parts[2], parts[3] if len(parts) > 3 else "")
rust_consts = []
if os.path.exists(consts_rs):
    for m in re.finditer(r"pub const (\w+):\s*([^=]+?)\s*=", open(consts_rs).read()):
        rust_consts.append((m.group(1), m.group(2)))
else:
    fail(f"{consts_rs} not found")
rs = [f'#[path = "{consts_rs}"]', "#[allow(dead_code, clippy::all)]", "mod consts;",
      "#[allow(unused_imports)]", "use consts::*;", "fn main() {"]
checked = []
for name, ty in rust_consts:
    if name not in c_values:
        fail(f"consts.rs defines {name}, which our header lacks")
        continue
    if ty == "&str":
        expr = f"{name}.to_string()"
    elif ty.startswith("Option"):
        expr = f"({name}.is_some() as i64).to_string()"
    elif ty in ("MPI_File",) or ty.startswith(("*", "MPI_T_")):
        expr = f"({name} as usize as i64).to_string()"
    else:
        expr = f"({name} as i64).to_string()"
    rs.append(f'    println!("{name} {{}}", {expr});')
    checked.append(name)
rs.append("}")
missing_rs = [n for n in c_values if n not in dict(rust_consts) and not ours_only(n)
              and not n.endswith("_DUP_FN") and n != "MPI_DUP_FN"
              and not re.match(r"^P?MPIO_", n)]
for n in missing_rs:
    fail(f"consts.rs lacks {n}")
if rust_consts:
    main_rs = os.path.join(work, "consts_check.rs")
    with open(main_rs, "w") as f:
        f.write("\n".join(rs) + "\n")
    exe = os.path.join(work, "consts_check")
    run(["rustc", "--edition", "2021", "-o", exe, main_rs])
    for line in run([exe]).splitlines():
        name, val = line.split(" ", 1)
        kind, num, s = c_values[name]
        want = s if kind == "string" else num
        if val != want:
            fail(f"consts.rs {name} = {val}, header says {want}")

print(f"checked {len(consts)} constants, {len(convs)} conversion macros, "
      f"{len(m_protos)} MPICH prototypes, {len(checked)} Rust constants")
if failures:
    for f in failures:
        print("MISMATCH:", f)
    print(f"{len(failures)} mismatches")
    sys.exit(1)
print("header matches MPICH's ABI")
PY
