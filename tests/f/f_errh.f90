! Error handlers and error codes through MPICH's `use mpi` bindings.
module f_errh_cb
  implicit none
  integer :: handler_calls = 0, handler_code = -1, handler_comm = -1
contains
  subroutine my_handler(comm, error_code)
    integer :: comm, error_code
    handler_calls = handler_calls + 1
    handler_comm = comm
    handler_code = error_code
  end subroutine my_handler
end module f_errh_cb

program f_errh
  use ftest
  use mpi
  use f_errh_cb
  implicit none
  integer :: ierr, e2, rank, nprocs, cls, slen, buf(4), sum, eh, comm, ueh
  character(len=MPI_MAX_ERROR_STRING) :: msg

  rank = -1
  call MPI_Init(ierr)
  test_name = 'f_errh'
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  buf = rank

  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
  call check(ierr == MPI_SUCCESS, 'Comm_set_errhandler ierr')
  call MPI_Comm_get_errhandler(MPI_COMM_WORLD, eh, ierr)
  call check(eh == MPI_ERRORS_RETURN, 'Comm_get_errhandler is not MPI_ERRORS_RETURN')
  call MPI_Errhandler_free(eh, ierr)

  ! Rank `nprocs` does not exist.
  ierr = MPI_SUCCESS
  call MPI_Send(buf, 1, MPI_INTEGER, nprocs, 0, MPI_COMM_WORLD, ierr)
  call check(ierr /= MPI_SUCCESS, 'Send to an invalid rank returned MPI_SUCCESS')
  cls = -1
  call MPI_Error_class(ierr, cls, e2)
  call check(e2 == MPI_SUCCESS, 'Error_class ierr')
  call check(cls == MPI_ERR_RANK, 'Send to an invalid rank: class is not MPI_ERR_RANK')
  msg = ' '
  slen = -1
  call MPI_Error_string(ierr, msg, slen, e2)
  call check(e2 == MPI_SUCCESS, 'Error_string ierr')
  call check(slen > 0 .and. slen <= MPI_MAX_ERROR_STRING, 'Error_string length')
  call check(len_trim(msg(1:slen)) > 0, 'Error_string is blank')

  ! A negative tag and a negative count.
  call MPI_Send(buf, 1, MPI_INTEGER, rank, -5, MPI_COMM_WORLD, ierr)
  call MPI_Error_class(ierr, cls, e2)
  call check(ierr /= MPI_SUCCESS .and. cls == MPI_ERR_TAG, 'negative tag: not MPI_ERR_TAG')
  call MPI_Send(buf, -1, MPI_INTEGER, rank, 0, MPI_COMM_WORLD, ierr)
  call MPI_Error_class(ierr, cls, e2)
  call check(ierr /= MPI_SUCCESS .and. cls == MPI_ERR_COUNT, 'negative count: not MPI_ERR_COUNT')
  call MPI_Error_class(MPI_SUCCESS, cls, e2)
  call check(cls == MPI_SUCCESS, 'class of MPI_SUCCESS')

  ! A Fortran handler on a dup gets the communicator and the code, and the
  ! call still returns that code.
  call MPI_Comm_dup(MPI_COMM_WORLD, comm, ierr)
  call MPI_Comm_create_errhandler(my_handler, ueh, ierr)
  call check(ierr == MPI_SUCCESS, 'Comm_create_errhandler ierr')
  call MPI_Comm_set_errhandler(comm, ueh, ierr)
  call MPI_Errhandler_free(ueh, ierr)
  call check(ueh == MPI_ERRHANDLER_NULL, 'Errhandler_free did not null the handle')
  call MPI_Send(buf, 1, MPI_INTEGER, nprocs + 3, 0, comm, ierr)
  call check(handler_calls == 1, 'user error handler did not run once')
  call check(handler_comm == comm, 'user error handler got the wrong communicator')
  call MPI_Error_class(handler_code, cls, e2)
  call check(cls == MPI_ERR_RANK, 'user error handler got the wrong code')
  call check(ierr == handler_code, 'call did not return the code the handler saw')
  call MPI_Comm_free(comm, ierr)

  ! The job still works.
  call MPI_Allreduce(rank, sum, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(ierr == MPI_SUCCESS .and. sum == nprocs * (nprocs - 1) / 2, 'Allreduce after errors')

  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) then
     write (*, '(a)') 'PASS f_errh'
     flush (6)
  end if
  call MPI_Finalize(ierr)

end program f_errh
