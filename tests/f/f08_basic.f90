! The mpi_f08 module: derived-type handles and type(MPI_Status).
program f08_basic
  use ftest
  use mpi_f08
  implicit none
  type(MPI_Comm) :: comm
  type(MPI_Status) :: status
  type(MPI_Request) :: req
  integer :: ierr, rank, nprocs, isum, right, left, i, cnt
  integer :: sbuf(6), rbuf(6), inplace(3)

  rank = -1
  call MPI_Init(ierr)
  test_name = 'f08_basic'
  comm = MPI_COMM_WORLD
  call MPI_Comm_rank(comm, rank, ierr)
  call MPI_Comm_size(comm, nprocs, ierr)

  call MPI_Allreduce(rank + 1, isum, 1, MPI_INTEGER, MPI_SUM, comm, ierr)
  call check(ierr == MPI_SUCCESS, 'Allreduce ierr')
  call check(isum == nprocs * (nprocs + 1) / 2, 'Allreduce sum of rank+1')

  right = mod(rank + 1, nprocs)
  left = mod(rank - 1 + nprocs, nprocs)
  sbuf = (/ (rank * 100 + i, i = 1, 6) /)
  rbuf = -1
  call MPI_Irecv(rbuf, 6, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, comm, req, ierr)
  call MPI_Send(sbuf, 1 + mod(rank, 6), MPI_INTEGER, right, 70 + rank, comm, ierr)
  call MPI_Wait(req, status, ierr)
  call check(req == MPI_REQUEST_NULL, 'Wait did not null the request')
  call check(status%MPI_SOURCE == left, 'status%MPI_SOURCE')
  call check(status%MPI_TAG == 70 + left, 'status%MPI_TAG')
  call MPI_Get_count(status, MPI_INTEGER, cnt, ierr)
  call check(cnt == 1 + mod(left, 6), 'MPI_Get_count')
  do i = 1, cnt
     call check(rbuf(i) == left * 100 + i, 'payload')
  end do

  ! The layer's own sentinels: MPI_STATUS_IGNORE and MPI_IN_PLACE.
  rbuf = -1
  call MPI_Sendrecv(sbuf, 2, MPI_INTEGER, right, 9, rbuf, 2, MPI_INTEGER, left, 9, comm, &
       MPI_STATUS_IGNORE, ierr)
  call check(ierr == MPI_SUCCESS .and. rbuf(2) == left * 100 + 2, 'Sendrecv, STATUS_IGNORE')
  inplace = (/ rank, 1, -rank /)
  call MPI_Allreduce(MPI_IN_PLACE, inplace, 3, MPI_INTEGER, MPI_SUM, comm, ierr)
  call check(inplace(1) == nprocs * (nprocs - 1) / 2 .and. inplace(2) == nprocs &
       .and. inplace(3) == -inplace(1), 'Allreduce IN_PLACE')

  call MPI_Barrier(comm, ierr)
  if (rank == 0) then
     write (*, '(a)') 'PASS f08_basic'
     flush (6)
  end if
  call MPI_Finalize(ierr)

end program f08_basic
