//! MPICH-ABI constants, handle types and callback types, under their C names.
//!
//! Values match `include/mpi.h`, which matches MPICH 4.0.2's header;
//! `tools/check_header.sh` compiles this file and compares every value.
//! Pointer-valued sentinels (`MPI_IN_PLACE`, `MPI_STATUS_IGNORE`, ...) are
//! given as addresses (`usize`) so a pointer argument can be compared with
//! `ptr as usize == MPI_IN_PLACE`.
#![allow(
    non_upper_case_globals,
    non_camel_case_types,
    non_snake_case,
    dead_code
)]

use std::os::raw::{c_int, c_long, c_void};

// ---- Scalar types (LP64: C `long` is 64 bits) ----
pub type MPI_Aint = isize;
pub type MPI_Offset = c_long;
pub type MPI_Count = c_long;
pub type MPI_Fint = c_int;

// ---- Handles: integers, except MPI_File which is a pointer ----
pub type MPI_Comm = c_int;
pub type MPI_Datatype = c_int;
pub type MPI_Group = c_int;
pub type MPI_Win = c_int;
pub type MPI_Op = c_int;
pub type MPI_Errhandler = c_int;
pub type MPI_Request = c_int;
pub type MPI_Message = c_int;
pub type MPI_Info = c_int;
pub type MPI_Session = c_int;
pub type MPI_File = *mut c_void;

// Tool interface handles are opaque pointers.
pub type MPI_T_enum = *mut c_void;
pub type MPI_T_cvar_handle = *mut c_void;
pub type MPI_T_pvar_handle = *mut c_void;
pub type MPI_T_pvar_session = *mut c_void;
pub type MPI_T_event_registration = *mut c_void;
pub type MPI_T_event_instance = *mut c_void;
pub type MPI_T_cb_safety = c_int;
pub type MPI_T_source_order = c_int;

/// The status a receive fills in; five ints in MPICH's order. The byte
/// count is 64 bits: the low 32 bits are `count_lo` (read as unsigned) and
/// the high bits are `count_hi_and_cancelled >> 1`; bit 0 of
/// `count_hi_and_cancelled` is the cancelled flag.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MPI_Status {
    pub count_lo: c_int,
    pub count_hi_and_cancelled: c_int,
    pub MPI_SOURCE: c_int,
    pub MPI_TAG: c_int,
    pub MPI_ERROR: c_int,
}

/// The Fortran 2008 status has the same layout (`MPI_Fint` is `int`).
pub type MPI_F08_status = MPI_Status;

// ---- Callback types ----
pub type MPI_User_function =
    unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut MPI_Datatype);
pub type MPI_User_function_c =
    unsafe extern "C" fn(*mut c_void, *mut c_void, *mut MPI_Count, *mut MPI_Datatype);

pub type MPI_Copy_function = unsafe extern "C" fn(
    MPI_Comm,
    c_int,
    *mut c_void,
    *mut c_void,
    *mut c_void,
    *mut c_int,
) -> c_int;
pub type MPI_Delete_function =
    unsafe extern "C" fn(MPI_Comm, c_int, *mut c_void, *mut c_void) -> c_int;
pub type MPI_Comm_copy_attr_function = MPI_Copy_function;
pub type MPI_Comm_delete_attr_function = MPI_Delete_function;
pub type MPI_Type_copy_attr_function = unsafe extern "C" fn(
    MPI_Datatype,
    c_int,
    *mut c_void,
    *mut c_void,
    *mut c_void,
    *mut c_int,
) -> c_int;
pub type MPI_Type_delete_attr_function =
    unsafe extern "C" fn(MPI_Datatype, c_int, *mut c_void, *mut c_void) -> c_int;
pub type MPI_Win_copy_attr_function = unsafe extern "C" fn(
    MPI_Win,
    c_int,
    *mut c_void,
    *mut c_void,
    *mut c_void,
    *mut c_int,
) -> c_int;
pub type MPI_Win_delete_attr_function =
    unsafe extern "C" fn(MPI_Win, c_int, *mut c_void, *mut c_void) -> c_int;

pub type MPI_Handler_function = unsafe extern "C" fn(*mut MPI_Comm, *mut c_int, ...);
pub type MPI_Comm_errhandler_function = unsafe extern "C" fn(*mut MPI_Comm, *mut c_int, ...);
pub type MPI_File_errhandler_function = unsafe extern "C" fn(*mut MPI_File, *mut c_int, ...);
pub type MPI_Win_errhandler_function = unsafe extern "C" fn(*mut MPI_Win, *mut c_int, ...);
pub type MPI_Session_errhandler_function = unsafe extern "C" fn(*mut MPI_Session, *mut c_int, ...);

pub type MPI_Grequest_query_function = unsafe extern "C" fn(*mut c_void, *mut MPI_Status) -> c_int;
pub type MPI_Grequest_free_function = unsafe extern "C" fn(*mut c_void) -> c_int;
pub type MPI_Grequest_cancel_function = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;

pub type MPI_Datarep_conversion_function = unsafe extern "C" fn(
    *mut c_void,
    MPI_Datatype,
    c_int,
    *mut c_void,
    MPI_Offset,
    *mut c_void,
) -> c_int;
pub type MPI_Datarep_conversion_function_c = unsafe extern "C" fn(
    *mut c_void,
    MPI_Datatype,
    MPI_Count,
    *mut c_void,
    MPI_Offset,
    *mut c_void,
) -> c_int;
pub type MPI_Datarep_extent_function =
    unsafe extern "C" fn(MPI_Datatype, *mut MPI_Aint, *mut c_void) -> c_int;

pub type MPI_T_event_cb_function = unsafe extern "C" fn(
    MPI_T_event_instance,
    MPI_T_event_registration,
    MPI_T_cb_safety,
    *mut c_void,
);
pub type MPI_T_event_free_cb_function =
    unsafe extern "C" fn(MPI_T_event_registration, MPI_T_cb_safety, *mut c_void);
pub type MPI_T_event_dropped_cb_function =
    unsafe extern "C" fn(MPI_Count, MPI_T_event_registration, c_int, MPI_T_cb_safety, *mut c_void);

/// Library version string (the header's `LANAI_VERSION`).
pub const LANAI_VERSION: &str = "0.1.0";

pub const MPI_VERSION: c_int = 4;
pub const MPI_SUBVERSION: c_int = 0;

pub const MPI_AINT_FMT_DEC_SPEC: &str = "%ld";
pub const MPI_AINT_FMT_HEX_SPEC: &str = "%lx";

// ---- Status and argument sentinels (compare a pointer's address) ----
pub const MPI_F_STATUS_SIZE: c_int = 5;
pub const MPI_F_SOURCE: c_int = 2;
pub const MPI_F_TAG: c_int = 3;
pub const MPI_F_ERROR: c_int = 4;
pub const MPI_STATUS_IGNORE: usize = 1;
pub const MPI_STATUSES_IGNORE: usize = 1;
pub const MPI_ERRCODES_IGNORE: usize = 0;
pub const MPI_ARGV_NULL: usize = 0;
pub const MPI_ARGVS_NULL: usize = 0;

// ---- Null handles ----
pub const MPI_COMM_NULL: MPI_Comm = 0x04000000;
pub const MPI_GROUP_NULL: MPI_Group = 0x08000000;
pub const MPI_DATATYPE_NULL: MPI_Datatype = 0x0c000000;
pub const MPI_ERRHANDLER_NULL: MPI_Errhandler = 0x14000000;
pub const MPI_OP_NULL: MPI_Op = 0x18000000;
pub const MPI_INFO_NULL: MPI_Info = 0x1c000000;
pub const MPI_WIN_NULL: MPI_Win = 0x20000000;
pub const MPI_REQUEST_NULL: MPI_Request = 0x2c000000;
pub const MPI_MESSAGE_NULL: MPI_Message = 0x2c000000;
pub const MPI_MESSAGE_NO_PROC: MPI_Message = 0x6c000000;
pub const MPI_SESSION_NULL: MPI_Session = 0x38000000;
pub const MPI_FILE_NULL: MPI_File = std::ptr::null_mut();

// ---- Predefined communicators, groups, info objects ----
pub const MPI_COMM_WORLD: MPI_Comm = 0x44000000;
pub const MPI_COMM_SELF: MPI_Comm = 0x44000001;
pub const MPI_GROUP_EMPTY: MPI_Group = 0x48000000;
pub const MPI_INFO_ENV: MPI_Info = 0x5c000001;

// ---- Predefined error handlers ----
pub const MPI_ERRORS_ARE_FATAL: MPI_Errhandler = 0x54000000;
pub const MPI_ERRORS_RETURN: MPI_Errhandler = 0x54000001;
pub const MPI_ERRORS_ABORT: MPI_Errhandler = 0x54000003;

// ---- Predefined datatypes ----
// Builtin types encode their size in bits 8..15 (0x4c00SSNN).
pub const MPI_CHAR: MPI_Datatype = 0x4c000101;
pub const MPI_UNSIGNED_CHAR: MPI_Datatype = 0x4c000102;
pub const MPI_SHORT: MPI_Datatype = 0x4c000203;
pub const MPI_UNSIGNED_SHORT: MPI_Datatype = 0x4c000204;
pub const MPI_INT: MPI_Datatype = 0x4c000405;
pub const MPI_UNSIGNED: MPI_Datatype = 0x4c000406;
pub const MPI_LONG: MPI_Datatype = 0x4c000807;
pub const MPI_UNSIGNED_LONG: MPI_Datatype = 0x4c000808;
pub const MPI_LONG_LONG_INT: MPI_Datatype = 0x4c000809;
pub const MPI_LONG_LONG: MPI_Datatype = MPI_LONG_LONG_INT;
pub const MPI_FLOAT: MPI_Datatype = 0x4c00040a;
pub const MPI_DOUBLE: MPI_Datatype = 0x4c00080b;
pub const MPI_LONG_DOUBLE: MPI_Datatype = 0x4c00100c;
pub const MPI_BYTE: MPI_Datatype = 0x4c00010d;
pub const MPI_WCHAR: MPI_Datatype = 0x4c00040e;
pub const MPI_PACKED: MPI_Datatype = 0x4c00010f;
pub const MPI_LB: MPI_Datatype = 0x4c000010;
pub const MPI_UB: MPI_Datatype = 0x4c000011;
pub const MPI_2INT: MPI_Datatype = 0x4c000816;
pub const MPI_SIGNED_CHAR: MPI_Datatype = 0x4c000118;
pub const MPI_UNSIGNED_LONG_LONG: MPI_Datatype = 0x4c000819;
// Fortran types
pub const MPI_CHARACTER: MPI_Datatype = 0x4c00011a;
pub const MPI_INTEGER: MPI_Datatype = 0x4c00041b;
pub const MPI_REAL: MPI_Datatype = 0x4c00041c;
pub const MPI_LOGICAL: MPI_Datatype = 0x4c00041d;
pub const MPI_COMPLEX: MPI_Datatype = 0x4c00081e;
pub const MPI_DOUBLE_PRECISION: MPI_Datatype = 0x4c00081f;
pub const MPI_2INTEGER: MPI_Datatype = 0x4c000820;
pub const MPI_2REAL: MPI_Datatype = 0x4c000821;
pub const MPI_DOUBLE_COMPLEX: MPI_Datatype = 0x4c001022;
pub const MPI_2DOUBLE_PRECISION: MPI_Datatype = 0x4c001023;
pub const MPI_REAL4: MPI_Datatype = 0x4c000427;
pub const MPI_COMPLEX8: MPI_Datatype = 0x4c000828;
pub const MPI_REAL8: MPI_Datatype = 0x4c000829;
pub const MPI_COMPLEX16: MPI_Datatype = 0x4c00102a;
pub const MPI_REAL16: MPI_Datatype = 0x4c00102b;
pub const MPI_COMPLEX32: MPI_Datatype = 0x4c00202c;
pub const MPI_INTEGER1: MPI_Datatype = 0x4c00012d;
pub const MPI_INTEGER2: MPI_Datatype = 0x4c00022f;
pub const MPI_INTEGER4: MPI_Datatype = 0x4c000430;
pub const MPI_INTEGER8: MPI_Datatype = 0x4c000831;
// No 16-byte Fortran integer in this ABI.
pub const MPI_INTEGER16: MPI_Datatype = MPI_DATATYPE_NULL;
// C++ types
pub const MPI_CXX_BOOL: MPI_Datatype = 0x4c000133;
pub const MPI_CXX_FLOAT_COMPLEX: MPI_Datatype = 0x4c000834;
pub const MPI_CXX_DOUBLE_COMPLEX: MPI_Datatype = 0x4c001035;
pub const MPI_CXX_LONG_DOUBLE_COMPLEX: MPI_Datatype = 0x4c002036;
// Fixed-width C types
pub const MPI_INT8_T: MPI_Datatype = 0x4c000137;
pub const MPI_INT16_T: MPI_Datatype = 0x4c000238;
pub const MPI_INT32_T: MPI_Datatype = 0x4c000439;
pub const MPI_INT64_T: MPI_Datatype = 0x4c00083a;
pub const MPI_UINT8_T: MPI_Datatype = 0x4c00013b;
pub const MPI_UINT16_T: MPI_Datatype = 0x4c00023c;
pub const MPI_UINT32_T: MPI_Datatype = 0x4c00043d;
pub const MPI_UINT64_T: MPI_Datatype = 0x4c00083e;
// C99 bool and complex types
pub const MPI_C_BOOL: MPI_Datatype = 0x4c00013f;
pub const MPI_C_FLOAT_COMPLEX: MPI_Datatype = 0x4c000840;
pub const MPI_C_COMPLEX: MPI_Datatype = MPI_C_FLOAT_COMPLEX;
pub const MPI_C_DOUBLE_COMPLEX: MPI_Datatype = 0x4c001041;
pub const MPI_C_LONG_DOUBLE_COMPLEX: MPI_Datatype = 0x4c002042;
// Address, offset and count types
pub const MPI_AINT: MPI_Datatype = 0x4c000843;
pub const MPI_OFFSET: MPI_Datatype = 0x4c000844;
pub const MPI_COUNT: MPI_Datatype = 0x4c000845;
// Pair types for MINLOC/MAXLOC (not builtin: no size bits)
pub const MPI_FLOAT_INT: MPI_Datatype = 0x8c000000_u32 as i32;
pub const MPI_DOUBLE_INT: MPI_Datatype = 0x8c000001_u32 as i32;
pub const MPI_LONG_INT: MPI_Datatype = 0x8c000002_u32 as i32;
pub const MPI_SHORT_INT: MPI_Datatype = 0x8c000003_u32 as i32;
pub const MPI_LONG_DOUBLE_INT: MPI_Datatype = 0x8c000004_u32 as i32;
pub const MPI_TYPECLASS_REAL: c_int = 1;
pub const MPI_TYPECLASS_INTEGER: c_int = 2;
pub const MPI_TYPECLASS_COMPLEX: c_int = 3;

// ---- Predefined reduction operations ----
pub const MPI_MAX: MPI_Op = 0x58000001;
pub const MPI_MIN: MPI_Op = 0x58000002;
pub const MPI_SUM: MPI_Op = 0x58000003;
pub const MPI_PROD: MPI_Op = 0x58000004;
pub const MPI_LAND: MPI_Op = 0x58000005;
pub const MPI_BAND: MPI_Op = 0x58000006;
pub const MPI_LOR: MPI_Op = 0x58000007;
pub const MPI_BOR: MPI_Op = 0x58000008;
pub const MPI_LXOR: MPI_Op = 0x58000009;
pub const MPI_BXOR: MPI_Op = 0x5800000a;
pub const MPI_MINLOC: MPI_Op = 0x5800000b;
pub const MPI_MAXLOC: MPI_Op = 0x5800000c;
pub const MPI_REPLACE: MPI_Op = 0x5800000d;
pub const MPI_NO_OP: MPI_Op = 0x5800000e;

// ---- Results of MPI_Comm_compare / MPI_Group_compare ----
pub const MPI_IDENT: c_int = 0;
pub const MPI_CONGRUENT: c_int = 1;
pub const MPI_SIMILAR: c_int = 2;
pub const MPI_UNEQUAL: c_int = 3;

// ---- Ranks, tags and other special values ----
pub const MPI_PROC_NULL: c_int = -1;
pub const MPI_ANY_SOURCE: c_int = -2;
pub const MPI_ROOT: c_int = -3;
pub const MPI_ANY_TAG: c_int = -1;
pub const MPI_UNDEFINED: c_int = -32766;
pub const MPI_KEYVAL_INVALID: c_int = 0x24000000;
pub const MPI_BSEND_OVERHEAD: c_int = 96;
pub const MPI_BOTTOM: usize = 0;
pub const MPI_IN_PLACE: usize = usize::MAX;

// ---- Predefined attribute keys ----
pub const MPI_TAG_UB: c_int = 0x64400001;
pub const MPI_HOST: c_int = 0x64400003;
pub const MPI_IO: c_int = 0x64400005;
pub const MPI_WTIME_IS_GLOBAL: c_int = 0x64400007;
pub const MPI_UNIVERSE_SIZE: c_int = 0x64400009;
pub const MPI_LASTUSEDCODE: c_int = 0x6440000b;
pub const MPI_APPNUM: c_int = 0x6440000d;
pub const MPI_WIN_BASE: c_int = 0x66000001;
pub const MPI_WIN_SIZE: c_int = 0x66000003;
pub const MPI_WIN_DISP_UNIT: c_int = 0x66000005;
pub const MPI_WIN_CREATE_FLAVOR: c_int = 0x66000007;
pub const MPI_WIN_MODEL: c_int = 0x66000009;

// ---- String lengths (buffers include the terminating NUL) ----
pub const MPI_MAX_PROCESSOR_NAME: c_int = 128;
pub const MPI_MAX_LIBRARY_VERSION_STRING: c_int = 8192;
pub const MPI_MAX_ERROR_STRING: c_int = 512;
pub const MPI_MAX_PORT_NAME: c_int = 256;
pub const MPI_MAX_OBJECT_NAME: c_int = 128;
pub const MPI_MAX_STRINGTAG_LEN: c_int = 256;
pub const MPI_MAX_PSET_NAME_LEN: c_int = 256;
pub const MPI_MAX_INFO_KEY: c_int = 255;
pub const MPI_MAX_INFO_VAL: c_int = 1024;
pub const MPI_MAX_DATAREP_STRING: c_int = 128;

// ---- Thread support levels ----
pub const MPI_THREAD_SINGLE: c_int = 0;
pub const MPI_THREAD_FUNNELED: c_int = 1;
pub const MPI_THREAD_SERIALIZED: c_int = 2;
pub const MPI_THREAD_MULTIPLE: c_int = 3;

// ---- Topologies ----
pub const MPI_GRAPH: c_int = 1;
pub const MPI_CART: c_int = 2;
pub const MPI_DIST_GRAPH: c_int = 3;

// ---- One-sided communication ----
pub const MPI_WIN_FLAVOR_CREATE: c_int = 1;
pub const MPI_WIN_FLAVOR_ALLOCATE: c_int = 2;
pub const MPI_WIN_FLAVOR_DYNAMIC: c_int = 3;
pub const MPI_WIN_FLAVOR_SHARED: c_int = 4;
pub const MPI_WIN_SEPARATE: c_int = 1;
pub const MPI_WIN_UNIFIED: c_int = 2;
pub const MPI_LOCK_EXCLUSIVE: c_int = 234;
pub const MPI_LOCK_SHARED: c_int = 235;
pub const MPI_MODE_NOCHECK: c_int = 1024;
pub const MPI_MODE_NOSTORE: c_int = 2048;
pub const MPI_MODE_NOPUT: c_int = 4096;
pub const MPI_MODE_NOPRECEDE: c_int = 8192;
pub const MPI_MODE_NOSUCCEED: c_int = 16384;

// ---- MPI_Comm_split_type ----
pub const MPI_COMM_TYPE_SHARED: c_int = 1;
pub const MPI_COMM_TYPE_HW_GUIDED: c_int = 2;
pub const MPI_COMM_TYPE_HW_UNGUIDED: c_int = 3;

// ---- Datatype decoding ----
pub const MPI_COMBINER_NAMED: c_int = 1;
pub const MPI_COMBINER_DUP: c_int = 2;
pub const MPI_COMBINER_CONTIGUOUS: c_int = 3;
pub const MPI_COMBINER_VECTOR: c_int = 4;
pub const MPI_COMBINER_HVECTOR_INTEGER: c_int = 5;
pub const MPI_COMBINER_HVECTOR: c_int = 6;
pub const MPI_COMBINER_INDEXED: c_int = 7;
pub const MPI_COMBINER_HINDEXED_INTEGER: c_int = 8;
pub const MPI_COMBINER_HINDEXED: c_int = 9;
pub const MPI_COMBINER_INDEXED_BLOCK: c_int = 10;
pub const MPI_COMBINER_STRUCT_INTEGER: c_int = 11;
pub const MPI_COMBINER_STRUCT: c_int = 12;
pub const MPI_COMBINER_SUBARRAY: c_int = 13;
pub const MPI_COMBINER_DARRAY: c_int = 14;
pub const MPI_COMBINER_F90_REAL: c_int = 15;
pub const MPI_COMBINER_F90_COMPLEX: c_int = 16;
pub const MPI_COMBINER_F90_INTEGER: c_int = 17;
pub const MPI_COMBINER_RESIZED: c_int = 18;
pub const MPI_COMBINER_HINDEXED_BLOCK: c_int = 19;

// ---- Subarray and darray constructors ----
pub const MPI_ORDER_C: c_int = 56;
pub const MPI_ORDER_FORTRAN: c_int = 57;
pub const MPI_DISTRIBUTE_BLOCK: c_int = 121;
pub const MPI_DISTRIBUTE_CYCLIC: c_int = 122;
pub const MPI_DISTRIBUTE_NONE: c_int = 123;
pub const MPI_DISTRIBUTE_DFLT_DARG: c_int = -49767;

// ---- File access modes, seek whence, displacements ----
pub const MPI_MODE_CREATE: c_int = 1;
pub const MPI_MODE_RDONLY: c_int = 2;
pub const MPI_MODE_WRONLY: c_int = 4;
pub const MPI_MODE_RDWR: c_int = 8;
pub const MPI_MODE_DELETE_ON_CLOSE: c_int = 16;
pub const MPI_MODE_UNIQUE_OPEN: c_int = 32;
pub const MPI_MODE_EXCL: c_int = 64;
pub const MPI_MODE_APPEND: c_int = 128;
pub const MPI_MODE_SEQUENTIAL: c_int = 256;
pub const MPI_SEEK_SET: c_int = 600;
pub const MPI_SEEK_CUR: c_int = 602;
pub const MPI_SEEK_END: c_int = 604;
pub const MPI_DISPLACEMENT_CURRENT: c_int = -54278278;

// ---- Error classes ----
pub const MPI_SUCCESS: c_int = 0;
pub const MPI_ERR_BUFFER: c_int = 1;
pub const MPI_ERR_COUNT: c_int = 2;
pub const MPI_ERR_TYPE: c_int = 3;
pub const MPI_ERR_TAG: c_int = 4;
pub const MPI_ERR_COMM: c_int = 5;
pub const MPI_ERR_RANK: c_int = 6;
pub const MPI_ERR_ROOT: c_int = 7;
pub const MPI_ERR_GROUP: c_int = 8;
pub const MPI_ERR_OP: c_int = 9;
pub const MPI_ERR_TOPOLOGY: c_int = 10;
pub const MPI_ERR_DIMS: c_int = 11;
pub const MPI_ERR_ARG: c_int = 12;
pub const MPI_ERR_UNKNOWN: c_int = 13;
pub const MPI_ERR_TRUNCATE: c_int = 14;
pub const MPI_ERR_OTHER: c_int = 15;
pub const MPI_ERR_INTERN: c_int = 16;
pub const MPI_ERR_IN_STATUS: c_int = 17;
pub const MPI_ERR_PENDING: c_int = 18;
pub const MPI_ERR_REQUEST: c_int = 19;
pub const MPI_ERR_ACCESS: c_int = 20;
pub const MPI_ERR_AMODE: c_int = 21;
pub const MPI_ERR_BAD_FILE: c_int = 22;
pub const MPI_ERR_CONVERSION: c_int = 23;
pub const MPI_ERR_DUP_DATAREP: c_int = 24;
pub const MPI_ERR_FILE_EXISTS: c_int = 25;
pub const MPI_ERR_FILE_IN_USE: c_int = 26;
pub const MPI_ERR_FILE: c_int = 27;
pub const MPI_ERR_INFO: c_int = 28;
pub const MPI_ERR_INFO_KEY: c_int = 29;
pub const MPI_ERR_INFO_VALUE: c_int = 30;
pub const MPI_ERR_INFO_NOKEY: c_int = 31;
pub const MPI_ERR_IO: c_int = 32;
pub const MPI_ERR_NAME: c_int = 33;
pub const MPI_ERR_NO_MEM: c_int = 34;
pub const MPI_ERR_NOT_SAME: c_int = 35;
pub const MPI_ERR_NO_SPACE: c_int = 36;
pub const MPI_ERR_NO_SUCH_FILE: c_int = 37;
pub const MPI_ERR_PORT: c_int = 38;
pub const MPI_ERR_QUOTA: c_int = 39;
pub const MPI_ERR_READ_ONLY: c_int = 40;
pub const MPI_ERR_SERVICE: c_int = 41;
pub const MPI_ERR_SPAWN: c_int = 42;
pub const MPI_ERR_UNSUPPORTED_DATAREP: c_int = 43;
pub const MPI_ERR_UNSUPPORTED_OPERATION: c_int = 44;
pub const MPI_ERR_WIN: c_int = 45;
pub const MPI_ERR_BASE: c_int = 46;
pub const MPI_ERR_LOCKTYPE: c_int = 47;
pub const MPI_ERR_KEYVAL: c_int = 48;
pub const MPI_ERR_RMA_CONFLICT: c_int = 49;
pub const MPI_ERR_RMA_SYNC: c_int = 50;
pub const MPI_ERR_SIZE: c_int = 51;
pub const MPI_ERR_DISP: c_int = 52;
pub const MPI_ERR_ASSERT: c_int = 53;
// 54 is unused in this ABI
pub const MPI_ERR_RMA_RANGE: c_int = 55;
pub const MPI_ERR_RMA_ATTACH: c_int = 56;
pub const MPI_ERR_RMA_SHARED: c_int = 57;
pub const MPI_ERR_RMA_FLAVOR: c_int = 58;
pub const MPI_T_ERR_MEMORY: c_int = 59;
pub const MPI_T_ERR_NOT_INITIALIZED: c_int = 60;
pub const MPI_T_ERR_CANNOT_INIT: c_int = 61;
pub const MPI_T_ERR_INVALID_INDEX: c_int = 62;
pub const MPI_T_ERR_INVALID_ITEM: c_int = 63;
pub const MPI_T_ERR_INVALID_HANDLE: c_int = 64;
pub const MPI_T_ERR_OUT_OF_HANDLES: c_int = 65;
pub const MPI_T_ERR_OUT_OF_SESSIONS: c_int = 66;
pub const MPI_T_ERR_INVALID_SESSION: c_int = 67;
pub const MPI_T_ERR_CVAR_SET_NOT_NOW: c_int = 68;
pub const MPI_T_ERR_CVAR_SET_NEVER: c_int = 69;
pub const MPI_T_ERR_PVAR_NO_STARTSTOP: c_int = 70;
pub const MPI_T_ERR_PVAR_NO_WRITE: c_int = 71;
pub const MPI_T_ERR_PVAR_NO_ATOMIC: c_int = 72;
pub const MPI_T_ERR_INVALID_NAME: c_int = 73;
pub const MPI_T_ERR_INVALID: c_int = 74;
pub const MPI_ERR_SESSION: c_int = 75;
pub const MPI_ERR_PROC_ABORTED: c_int = 76;
pub const MPI_ERR_VALUE_TOO_LARGE: c_int = 77;
pub const MPI_T_ERR_NOT_SUPPORTED: c_int = 78;
pub const MPI_ERR_LASTCODE: c_int = 0x3fffffff;

// ---- Null callbacks ----
pub const MPI_CONVERSION_FN_NULL: Option<MPI_Datarep_conversion_function> = None;
pub const MPI_CONVERSION_FN_NULL_C: Option<MPI_Datarep_conversion_function_c> = None;
pub const MPI_NULL_COPY_FN: Option<MPI_Copy_function> = None;
pub const MPI_NULL_DELETE_FN: Option<MPI_Delete_function> = None;
pub const MPI_COMM_NULL_COPY_FN: Option<MPI_Comm_copy_attr_function> = None;
pub const MPI_COMM_NULL_DELETE_FN: Option<MPI_Comm_delete_attr_function> = None;
pub const MPI_TYPE_NULL_COPY_FN: Option<MPI_Type_copy_attr_function> = None;
pub const MPI_TYPE_NULL_DELETE_FN: Option<MPI_Type_delete_attr_function> = None;
pub const MPI_WIN_NULL_COPY_FN: Option<MPI_Win_copy_attr_function> = None;
pub const MPI_WIN_NULL_DELETE_FN: Option<MPI_Win_delete_attr_function> = None;

// ---- Tool information interface (MPI_T) ----
pub const MPI_T_ENUM_NULL: MPI_T_enum = std::ptr::null_mut();
pub const MPI_T_CVAR_HANDLE_NULL: MPI_T_cvar_handle = std::ptr::null_mut();
pub const MPI_T_PVAR_HANDLE_NULL: MPI_T_pvar_handle = std::ptr::null_mut();
pub const MPI_T_PVAR_SESSION_NULL: MPI_T_pvar_session = std::ptr::null_mut();
pub const MPI_T_VERBOSITY_INVALID: c_int = 0;
pub const MPI_T_VERBOSITY_USER_BASIC: c_int = 221;
pub const MPI_T_VERBOSITY_USER_DETAIL: c_int = 222;
pub const MPI_T_VERBOSITY_USER_ALL: c_int = 223;
pub const MPI_T_VERBOSITY_TUNER_BASIC: c_int = 224;
pub const MPI_T_VERBOSITY_TUNER_DETAIL: c_int = 225;
pub const MPI_T_VERBOSITY_TUNER_ALL: c_int = 226;
pub const MPI_T_VERBOSITY_MPIDEV_BASIC: c_int = 227;
pub const MPI_T_VERBOSITY_MPIDEV_DETAIL: c_int = 228;
pub const MPI_T_VERBOSITY_MPIDEV_ALL: c_int = 229;
pub const MPI_T_BIND_INVALID: c_int = 0;
pub const MPI_T_BIND_NO_OBJECT: c_int = 9700;
pub const MPI_T_BIND_MPI_COMM: c_int = 9701;
pub const MPI_T_BIND_MPI_DATATYPE: c_int = 9702;
pub const MPI_T_BIND_MPI_ERRHANDLER: c_int = 9703;
pub const MPI_T_BIND_MPI_FILE: c_int = 9704;
pub const MPI_T_BIND_MPI_GROUP: c_int = 9705;
pub const MPI_T_BIND_MPI_OP: c_int = 9706;
pub const MPI_T_BIND_MPI_REQUEST: c_int = 9707;
pub const MPI_T_BIND_MPI_WIN: c_int = 9708;
pub const MPI_T_BIND_MPI_MESSAGE: c_int = 9709;
pub const MPI_T_BIND_MPI_INFO: c_int = 9710;
pub const MPI_T_SCOPE_INVALID: c_int = 0;
pub const MPI_T_SCOPE_CONSTANT: c_int = 60438;
pub const MPI_T_SCOPE_READONLY: c_int = 60439;
pub const MPI_T_SCOPE_LOCAL: c_int = 60440;
pub const MPI_T_SCOPE_GROUP: c_int = 60441;
pub const MPI_T_SCOPE_GROUP_EQ: c_int = 60442;
pub const MPI_T_SCOPE_ALL: c_int = 60443;
pub const MPI_T_SCOPE_ALL_EQ: c_int = 60444;
pub const MPI_T_PVAR_CLASS_INVALID: c_int = 0;
pub const MPI_T_PVAR_CLASS_STATE: c_int = 240;
pub const MPI_T_PVAR_CLASS_LEVEL: c_int = 241;
pub const MPI_T_PVAR_CLASS_SIZE: c_int = 242;
pub const MPI_T_PVAR_CLASS_PERCENTAGE: c_int = 243;
pub const MPI_T_PVAR_CLASS_HIGHWATERMARK: c_int = 244;
pub const MPI_T_PVAR_CLASS_LOWWATERMARK: c_int = 245;
pub const MPI_T_PVAR_CLASS_COUNTER: c_int = 246;
pub const MPI_T_PVAR_CLASS_AGGREGATE: c_int = 247;
pub const MPI_T_PVAR_CLASS_TIMER: c_int = 248;
pub const MPI_T_PVAR_CLASS_GENERIC: c_int = 249;
pub const MPI_T_CB_REQUIRE_NONE: MPI_T_cb_safety = 0;
pub const MPI_T_CB_REQUIRE_MPI_RESTRICTED: MPI_T_cb_safety = 1;
pub const MPI_T_CB_REQUIRE_THREAD_SAFE: MPI_T_cb_safety = 2;
pub const MPI_T_CB_REQUIRE_ASYNC_SIGNAL_SAFE: MPI_T_cb_safety = 3;
pub const MPI_T_SOURCE_ORDERED: MPI_T_source_order = 0;
pub const MPI_T_SOURCE_UNORDERED: MPI_T_source_order = 1;
