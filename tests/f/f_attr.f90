! Attribute caching through MPICH's Fortran bindings: predefined attributes,
! user keyvals with Fortran copy/delete callbacks on communicators, types
! and windows, and the old MPI-1 calls.
module f_attr_cb
  use mpi
  implicit none
  integer :: del_count = 0, del_keyval = -1, del_comm = -1
  integer(kind=MPI_ADDRESS_KIND) :: del_val = -1, del_extra = -1
  integer :: copy_count = 0, copy_keyval = -1, copy_comm = -1
  integer(kind=MPI_ADDRESS_KIND) :: copy_in = -1, copy_extra = -1
  integer :: tdel_count = 0, tdel_keyval = -1
  integer(kind=MPI_ADDRESS_KIND) :: tdel_val = -1, tdel_extra = -1
contains

  subroutine my_delete(comm, comm_keyval, attribute_val, extra_state, ierror)
    integer :: comm, comm_keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: attribute_val, extra_state
    del_count = del_count + 1
    del_comm = comm
    del_keyval = comm_keyval
    del_val = attribute_val
    del_extra = extra_state
    ierror = MPI_SUCCESS
  end subroutine my_delete

  subroutine my_copy(oldcomm, comm_keyval, extra_state, attribute_val_in, &
       attribute_val_out, flag, ierror)
    integer :: oldcomm, comm_keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out
    logical :: flag
    copy_count = copy_count + 1
    copy_comm = oldcomm
    copy_keyval = comm_keyval
    copy_in = attribute_val_in
    copy_extra = extra_state
    attribute_val_out = attribute_val_in + 1
    flag = .true.
    ierror = MPI_SUCCESS
  end subroutine my_copy

  subroutine my_type_delete(datatype, type_keyval, attribute_val, extra_state, ierror)
    integer :: datatype, type_keyval, ierror
    integer(kind=MPI_ADDRESS_KIND) :: attribute_val, extra_state
    tdel_count = tdel_count + 1
    tdel_keyval = type_keyval
    tdel_val = attribute_val
    tdel_extra = extra_state
    ierror = MPI_SUCCESS
  end subroutine my_type_delete

end module f_attr_cb

program f_attr
  use ftest
  use mpi
  use f_attr_cb
  implicit none
  integer :: ierr, rank, nprocs, ival, d0, isize, tsize, okey, oval
  integer :: key1, key2, key3, tkey, wkey, comm1, comm2, t1, t2, win, req
  integer :: status(MPI_STATUS_SIZE), ibuf(2)
  integer(kind=MPI_ADDRESS_KIND) :: val, tag_ub, v1, wsize, addr
  integer(kind=MPI_ADDRESS_KIND), parameter :: extra1 = 77, extra3 = 300, textra = 55
  logical :: flag
  double precision :: wbuf(10)

  rank = -1
  call MPI_Init(ierr)
  test_name = 'f_attr'
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)

  ! Predefined attributes of MPI_COMM_WORLD.
  flag = .false.
  tag_ub = -1
  call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, tag_ub, flag, ierr)
  call check(ierr == MPI_SUCCESS, 'Comm_get_attr(MPI_TAG_UB) ierr')
  call check(flag, 'MPI_TAG_UB flag false')
  call check(tag_ub >= 32767 .and. tag_ub <= huge(0), 'MPI_TAG_UB out of range')
  flag = .false.
  ival = -1
  call MPI_Attr_get(MPI_COMM_WORLD, MPI_TAG_UB, ival, flag, ierr)
  call check(flag .and. ival == tag_ub, 'MPI_Attr_get(MPI_TAG_UB) differs')
  ! The bound is real: a message with that tag goes through.
  call MPI_Irecv(ibuf, 1, MPI_INTEGER, rank, MPI_ANY_TAG, MPI_COMM_WORLD, req, ierr)
  call MPI_Send(rank + 5, 1, MPI_INTEGER, rank, int(tag_ub), MPI_COMM_WORLD, ierr)
  call check(ierr == MPI_SUCCESS, 'send with tag MPI_TAG_UB')
  call MPI_Wait(req, status, ierr)
  call check(status(MPI_TAG) == tag_ub .and. ibuf(1) == rank + 5, 'message tagged MPI_TAG_UB')
  flag = .false.
  val = -1
  call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, val, flag, ierr)
  call check(flag, 'MPI_WTIME_IS_GLOBAL missing')
  call check(val == 0 .or. val == 1, 'MPI_WTIME_IS_GLOBAL not 0 or 1')

  call MPI_Comm_dup(MPI_COMM_WORLD, comm1, ierr)

  ! key1: copied by MPI_COMM_DUP_FN, deleted by the user callback.
  call MPI_Comm_create_keyval(MPI_COMM_DUP_FN, my_delete, key1, extra1, ierr)
  call check(ierr == MPI_SUCCESS .and. key1 /= MPI_KEYVAL_INVALID, 'Comm_create_keyval key1')
  v1 = 1111 + rank
  call MPI_Comm_set_attr(comm1, key1, v1, ierr)
  call check(del_count == 0, 'delete ran on the first set')
  ! Replacing a value deletes the old one.
  v1 = 1234567 + rank
  call MPI_Comm_set_attr(comm1, key1, v1, ierr)
  call check(ierr == MPI_SUCCESS, 'Comm_set_attr ierr')
  call check(del_count == 1, 'replacing a value did not run delete')
  call check(del_val == 1111 + rank .and. del_keyval == key1 .and. del_extra == extra1 &
       .and. del_comm == comm1, 'delete on replace got wrong arguments')
  val = -1
  flag = .false.
  call MPI_Comm_get_attr(comm1, key1, val, flag, ierr)
  call check(flag .and. val == 1234567 + rank, 'Comm_get_attr key1 on comm1')
  ! The MPI-1 call sees the same (INTEGER-sized) value.
  ival = -1
  call MPI_Attr_get(comm1, key1, ival, flag, ierr)
  call check(flag .and. ival == 1234567 + rank, 'MPI_Attr_get key1 on comm1')

  ! key2: never copied.
  call MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, key2, &
       0_MPI_ADDRESS_KIND, ierr)
  call MPI_Comm_set_attr(comm1, key2, int(42 + rank, MPI_ADDRESS_KIND), ierr)

  ! key3: the user copy adds one.
  call MPI_Comm_create_keyval(my_copy, MPI_COMM_NULL_DELETE_FN, key3, extra3, ierr)
  call MPI_Comm_set_attr(comm1, key3, int(5000 + rank, MPI_ADDRESS_KIND), ierr)

  call check(key1 /= key2 .and. key2 /= key3 .and. key1 /= key3, 'keyvals not distinct')

  d0 = del_count
  call MPI_Comm_dup(comm1, comm2, ierr)
  call check(ierr == MPI_SUCCESS, 'Comm_dup ierr')
  call check(del_count == d0, 'Comm_dup ran a delete')
  val = -1
  flag = .false.
  call MPI_Comm_get_attr(comm2, key1, val, flag, ierr)
  call check(flag .and. val == 1234567 + rank, 'MPI_COMM_DUP_FN did not copy key1')
  flag = .true.
  call MPI_Comm_get_attr(comm2, key2, val, flag, ierr)
  call check(.not. flag, 'MPI_COMM_NULL_COPY_FN copied key2')
  val = -1
  flag = .false.
  call MPI_Comm_get_attr(comm2, key3, val, flag, ierr)
  call check(flag .and. val == 5001 + rank, 'user copy result not seen on the dup')
  call check(copy_count == 1, 'user copy did not run exactly once')
  call check(copy_in == 5000 + rank .and. copy_keyval == key3 .and. copy_extra == extra3 &
       .and. copy_comm == comm1, 'user copy got wrong arguments')
  ! The original keeps its values.
  call MPI_Comm_get_attr(comm1, key3, val, flag, ierr)
  call check(flag .and. val == 5000 + rank, 'user copy changed the original')
  call MPI_Comm_get_attr(comm1, key2, val, flag, ierr)
  call check(flag .and. val == 42 + rank, 'key2 lost on the original')
  ! The dup works as a communicator.
  call MPI_Allreduce(rank, ival, 1, MPI_INTEGER, MPI_SUM, comm2, ierr)
  call check(ival == nprocs * (nprocs - 1) / 2, 'Allreduce on the dup')

  ! Freeing the dup deletes its copy of key1 (key3 has the null delete).
  d0 = del_count
  del_val = -1
  del_keyval = -1
  del_extra = -1
  ival = comm2
  call MPI_Comm_free(comm2, ierr)
  call check(comm2 == MPI_COMM_NULL, 'Comm_free did not null the handle')
  call check(del_count == d0 + 1, 'Comm_free did not run delete exactly once')
  call check(del_val == 1234567 + rank .and. del_keyval == key1 .and. del_extra == extra1 &
       .and. del_comm == ival, 'delete on Comm_free got wrong arguments')

  ! Explicit delete.
  del_val = -1
  call MPI_Comm_delete_attr(comm1, key1, ierr)
  call check(ierr == MPI_SUCCESS, 'Comm_delete_attr ierr')
  call check(del_count == d0 + 2, 'Comm_delete_attr did not run delete')
  call check(del_val == 1234567 + rank .and. del_keyval == key1 .and. del_comm == comm1, &
       'delete on Comm_delete_attr got wrong arguments')
  flag = .true.
  call MPI_Comm_get_attr(comm1, key1, val, flag, ierr)
  call check(.not. flag, 'attribute still there after Comm_delete_attr')

  ! MPI-1 keyval with INTEGER values, copied by MPI_DUP_FN.
  call MPI_Keyval_create(MPI_DUP_FN, MPI_NULL_DELETE_FN, okey, 9, ierr)
  call MPI_Attr_put(comm1, okey, 4321 + rank, ierr)
  oval = -1
  call MPI_Attr_get(comm1, okey, oval, flag, ierr)
  call check(flag .and. oval == 4321 + rank, 'MPI_Attr_get after MPI_Attr_put')
  call MPI_Comm_dup(comm1, comm2, ierr)
  oval = -1
  call MPI_Attr_get(comm2, okey, oval, flag, ierr)
  call check(flag .and. oval == 4321 + rank, 'MPI_DUP_FN did not copy')
  call MPI_Comm_free(comm2, ierr)
  call MPI_Keyval_free(okey, ierr)
  call check(okey == MPI_KEYVAL_INVALID, 'Keyval_free did not invalidate')

  call MPI_Comm_free_keyval(key1, ierr)
  call check(ierr == MPI_SUCCESS .and. key1 == MPI_KEYVAL_INVALID, 'Comm_free_keyval key1')
  call MPI_Comm_free_keyval(key2, ierr)
  call MPI_Comm_free_keyval(key3, ierr)
  call check(key2 == MPI_KEYVAL_INVALID .and. key3 == MPI_KEYVAL_INVALID, 'Comm_free_keyval')
  d0 = del_count
  call MPI_Comm_free(comm1, ierr)
  call check(del_count == d0, 'delete ran for an attribute already deleted')

  ! Datatype attributes on a dup of MPI_INTEGER.
  call MPI_Type_dup(MPI_INTEGER, t1, ierr)
  call MPI_Type_create_keyval(MPI_TYPE_DUP_FN, my_type_delete, tkey, textra, ierr)
  call check(ierr == MPI_SUCCESS .and. tkey /= MPI_KEYVAL_INVALID, 'Type_create_keyval')
  call MPI_Type_set_attr(t1, tkey, int(999 + rank, MPI_ADDRESS_KIND), ierr)
  val = -1
  flag = .false.
  call MPI_Type_get_attr(t1, tkey, val, flag, ierr)
  call check(flag .and. val == 999 + rank, 'Type_get_attr on the dup')
  call MPI_Type_dup(t1, t2, ierr)
  val = -1
  flag = .false.
  call MPI_Type_get_attr(t2, tkey, val, flag, ierr)
  call check(flag .and. val == 999 + rank, 'MPI_TYPE_DUP_FN did not copy')
  call MPI_Type_size(t2, tsize, ierr)
  call MPI_Type_size(MPI_INTEGER, isize, ierr)
  call check(tsize == isize .and. isize == storage_size(ival) / 8, 'Type_size of the dup')
  ibuf = -1
  call MPI_Sendrecv((/ rank * 3 + 1 /), 1, t2, mod(rank + 1, nprocs), 7, ibuf, 1, t2, &
       mod(rank - 1 + nprocs, nprocs), 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call check(ibuf(1) == mod(rank - 1 + nprocs, nprocs) * 3 + 1, 'Sendrecv with the dup type')
  call MPI_Type_free(t2, ierr)
  call check(tdel_count == 1, 'Type_free did not run the type delete')
  call check(tdel_val == 999 + rank .and. tdel_keyval == tkey .and. tdel_extra == textra, &
       'type delete got wrong arguments')
  call MPI_Type_free(t1, ierr)
  call check(tdel_count == 2, 'second Type_free did not run the type delete')
  call MPI_Type_free_keyval(tkey, ierr)
  call check(tkey == MPI_KEYVAL_INVALID, 'Type_free_keyval')

  ! Window attributes: predefined ones and a user keyval.
  wsize = 8 * (rank + 2)
  call MPI_Win_create(wbuf, wsize, 8, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
  call check(ierr == MPI_SUCCESS, 'Win_create ierr')
  call MPI_Win_get_attr(win, MPI_WIN_SIZE, val, flag, ierr)
  call check(flag .and. val == wsize, 'MPI_WIN_SIZE')
  call MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, val, flag, ierr)
  call check(flag .and. val == 8, 'MPI_WIN_DISP_UNIT')
  call MPI_Get_address(wbuf, addr, ierr)
  call MPI_Win_get_attr(win, MPI_WIN_BASE, val, flag, ierr)
  call check(flag .and. val == addr, 'MPI_WIN_BASE')
  call MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, wkey, &
       0_MPI_ADDRESS_KIND, ierr)
  call MPI_Win_set_attr(win, wkey, int(777 + rank, MPI_ADDRESS_KIND), ierr)
  val = -1
  call MPI_Win_get_attr(win, wkey, val, flag, ierr)
  call check(flag .and. val == 777 + rank, 'Win_get_attr user keyval')
  call MPI_Win_delete_attr(win, wkey, ierr)
  call MPI_Win_get_attr(win, wkey, val, flag, ierr)
  call check(.not. flag, 'Win_delete_attr')
  call MPI_Win_free_keyval(wkey, ierr)
  call MPI_Win_free(win, ierr)
  call check(win == MPI_WIN_NULL, 'Win_free did not null the handle')

  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) then
     write (*, '(a)') 'PASS f_attr'
     flush (6)
  end if
  call MPI_Finalize(ierr)

end program f_attr
