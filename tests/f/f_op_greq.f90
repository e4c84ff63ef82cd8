! Fortran user reduction operators and generalized requests with Fortran
! callbacks, through MPICH's `use mpi` bindings.
module f_op_greq_cb
  use mpi
  implicit none
  integer, parameter :: p = 251
  integer :: op_calls = 0, op_bad_type = 0
  integer :: query_count = 0, free_count = 0, cancel_count = 0
  integer(kind=MPI_ADDRESS_KIND) :: free_extra = -1, cancel_extra = -1
  logical :: cancel_complete = .true.
contains

  ! Each integer encodes the affine map t -> a*t + b (mod p) as a*1000 + b;
  ! composing maps is associative but not commutative, so a result in the
  ! wrong rank order shows up.
  integer function compose(x, y)
    integer, intent(in) :: x, y
    integer :: ax, bx, ay, by
    ax = x / 1000
    bx = mod(x, 1000)
    ay = y / 1000
    by = mod(y, 1000)
    ! x applied first, then y.
    compose = mod(ax * ay, p) * 1000 + mod(ay * bx + by, p)
  end function compose

  subroutine affine_op(invec, inoutvec, len, datatype)
    integer :: len, datatype
    integer :: invec(len), inoutvec(len)
    integer :: i
    op_calls = op_calls + 1
    if (datatype /= MPI_INTEGER) op_bad_type = op_bad_type + 1
    do i = 1, len
       inoutvec(i) = compose(invec(i), inoutvec(i))
    end do
  end subroutine affine_op

  subroutine query_fn(extra_state, status, ierror)
    integer(kind=MPI_ADDRESS_KIND) :: extra_state
    integer :: status(MPI_STATUS_SIZE), ierror
    integer :: e
    query_count = query_count + 1
    call MPI_Status_set_elements(status, MPI_INTEGER, int(extra_state) + 10, e)
    ! Odd extra_state marks the request that gets cancelled.
    call MPI_Status_set_cancelled(status, mod(extra_state, 2_MPI_ADDRESS_KIND) == 1, e)
    status(MPI_SOURCE) = int(extra_state) + 3
    status(MPI_TAG) = int(extra_state) * 2 + 1000
    status(MPI_ERROR) = MPI_SUCCESS
    ierror = MPI_SUCCESS
  end subroutine query_fn

  subroutine free_fn(extra_state, ierror)
    integer(kind=MPI_ADDRESS_KIND) :: extra_state
    integer :: ierror
    free_count = free_count + 1
    free_extra = extra_state
    ierror = MPI_SUCCESS
  end subroutine free_fn

  subroutine cancel_fn(extra_state, complete, ierror)
    integer(kind=MPI_ADDRESS_KIND) :: extra_state
    logical :: complete
    integer :: ierror
    cancel_count = cancel_count + 1
    cancel_extra = extra_state
    cancel_complete = complete
    ierror = MPI_SUCCESS
  end subroutine cancel_fn

end module f_op_greq_cb

program f_op_greq
  use ftest
  use mpi
  use f_op_greq_cb
  implicit none
  integer, parameter :: n = 37
  integer :: ierr, rank, nprocs, i, r, root, op, cnt, req, q0
  integer :: x(n), res(n), expect(n)
  integer :: status(MPI_STATUS_SIZE)
  integer(kind=MPI_ADDRESS_KIND) :: extra
  logical :: flag

  rank = -1
  call MPI_Init(ierr)
  test_name = 'f_op_greq'
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)

  ! Serial fold in rank order.
  do i = 1, n
     expect(i) = element(0, i)
     do r = 1, nprocs - 1
        expect(i) = compose(expect(i), element(r, i))
     end do
     x(i) = element(rank, i)
  end do

  call MPI_Op_create(affine_op, .false., op, ierr)
  call check(ierr == MPI_SUCCESS .and. op /= MPI_OP_NULL, 'Op_create')

  res = -1
  call MPI_Allreduce(x, res, n, MPI_INTEGER, op, MPI_COMM_WORLD, ierr)
  call check(ierr == MPI_SUCCESS, 'Allreduce ierr')
  call check(all(res == expect), 'Allreduce with the user op')
  call check(op_bad_type == 0, 'user op got a datatype other than MPI_INTEGER')
  call check(all(x == (/ (element(rank, i), i = 1, n) /)), 'Allreduce changed the send buffer')

  do root = 0, nprocs - 1, max(1, nprocs - 1)
     res = -1
     call MPI_Reduce(x, res, n, MPI_INTEGER, op, root, MPI_COMM_WORLD, ierr)
     call check(ierr == MPI_SUCCESS, 'Reduce ierr')
     if (rank == root) call check(all(res == expect), 'Reduce with the user op')
  end do

  ! Some rank may only send, so the op's use is checked job-wide.
  call MPI_Allreduce(op_calls, cnt, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(nprocs == 1 .or. cnt > 0, 'user op never called')

  call MPI_Op_free(op, ierr)
  call check(ierr == MPI_SUCCESS .and. op == MPI_OP_NULL, 'Op_free')

  ! Generalized request completed before the wait.
  extra = 40 + 2 * rank
  call MPI_Grequest_start(query_fn, free_fn, cancel_fn, extra, req, ierr)
  call check(ierr == MPI_SUCCESS .and. req /= MPI_REQUEST_NULL, 'Grequest_start')
  flag = .true.
  call MPI_Test(req, flag, status, ierr)
  call check(.not. flag, 'generalized request complete before Grequest_complete')
  call check(req /= MPI_REQUEST_NULL, 'Test freed an incomplete request')
  call MPI_Grequest_complete(req, ierr)
  call check(ierr == MPI_SUCCESS, 'Grequest_complete ierr')
  call check(free_count == 0, 'free_fn ran before the wait')
  status = -99
  call MPI_Wait(req, status, ierr)
  call check(ierr == MPI_SUCCESS, 'Wait on the generalized request')
  call check(req == MPI_REQUEST_NULL, 'Wait did not null the request')
  call check(query_count >= 1, 'query_fn never ran')
  call check(free_count == 1 .and. free_extra == extra, 'free_fn did not run exactly once')
  call check(cancel_count == 0, 'cancel_fn ran without MPI_Cancel')
  call check(status(MPI_SOURCE) == extra + 3, 'status(MPI_SOURCE) from query_fn')
  call check(status(MPI_TAG) == extra * 2 + 1000, 'status(MPI_TAG) from query_fn')
  call MPI_Get_count(status, MPI_INTEGER, cnt, ierr)
  call check(cnt == extra + 10, 'Get_count of the elements query_fn set')
  flag = .true.
  call MPI_Test_cancelled(status, flag, ierr)
  call check(.not. flag, 'request marked cancelled')

  ! Cancelled, then completed; odd extra_state makes query_fn say cancelled.
  extra = 41 + 2 * rank
  call MPI_Grequest_start(query_fn, free_fn, cancel_fn, extra, req, ierr)
  call MPI_Cancel(req, ierr)
  call check(ierr == MPI_SUCCESS, 'Cancel ierr')
  call check(cancel_count == 1 .and. cancel_extra == extra, 'cancel_fn did not run once')
  call check(.not. cancel_complete, 'cancel_fn told complete before Grequest_complete')
  call MPI_Grequest_complete(req, ierr)
  q0 = query_count
  status = -99
  flag = .false.
  do while (.not. flag)
     call MPI_Test(req, flag, status, ierr)
  end do
  call check(req == MPI_REQUEST_NULL, 'Test did not null the request')
  call check(query_count > q0, 'query_fn not run for the second request')
  call check(free_count == 2 .and. free_extra == extra, 'free_fn for the second request')
  call check(status(MPI_SOURCE) == extra + 3 .and. status(MPI_TAG) == extra * 2 + 1000, &
       'second request status fields')
  call MPI_Test_cancelled(status, flag, ierr)
  call check(flag, 'cancelled flag from query_fn not seen')

  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) then
     write (*, '(a)') 'PASS f_op_greq'
     flush (6)
  end if
  call MPI_Finalize(ierr)

contains

  ! Rank r's map for element i; a is never 0 so no map is constant.
  integer function element(r, i)
    integer, intent(in) :: r, i
    element = (mod(3 + r * 7 + i * 5, p - 1) + 1) * 1000 + mod(r * 13 + i * 11 + 1, p)
  end function element

end program f_op_greq
