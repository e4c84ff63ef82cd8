! Core point-to-point, collectives, communicators and a derived type through
! MPICH's `use mpi` bindings. Expected values are computed locally.
program f_basic
  use ftest
  use mpi
  implicit none
  integer, parameter :: maxn = 64
  integer :: ierr, rank, nprocs, right, left, i, r, cnt, expect, root
  integer :: status(MPI_STATUS_SIZE)
  integer :: ibuf(maxn), rbuf(maxn), bc(10)
  integer :: ival, isum
  double precision :: d(3), dexp(3)
  integer :: sbufs(4), rbufs(4, 0:7), reqs(16)
  integer :: sub, subrank, subsize, subsum, color, nsame, nhigher
  double precision :: t0, t1
  integer :: vtype
  real :: va(20), vr(20)
  integer :: dsize

  rank = -1
  call MPI_Init(ierr)
  test_name = 'f_basic'
  call check(ierr == MPI_SUCCESS, 'MPI_Init ierr')
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  call check(nprocs >= 1 .and. nprocs <= 8, 'size out of 1..8')
  call check(rank >= 0 .and. rank < nprocs, 'rank out of range')
  right = mod(rank + 1, nprocs)
  left = mod(rank - 1 + nprocs, nprocs)

  ! Allreduce of MPI_INTEGER.
  call MPI_Allreduce(rank + 1, isum, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(ierr == MPI_SUCCESS, 'Allreduce ierr')
  call check(isum == nprocs * (nprocs + 1) / 2, 'Allreduce sum of rank+1')

  ! In-place double sum; dyadic values so the sum is exact in any order.
  d = (/ rank * 0.25d0 + 1.0d0, -2.5d0 * rank, 0.125d0 /)
  dexp = 0.0d0
  do r = 0, nprocs - 1
     dexp = dexp + (/ r * 0.25d0 + 1.0d0, -2.5d0 * r, 0.125d0 /)
  end do
  call MPI_Allreduce(MPI_IN_PLACE, d, 3, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(all(d == dexp), 'Allreduce MPI_IN_PLACE double sum')

  ! Reduce MAX to root 0 of a value whose maximum is not at the last rank.
  ival = -1
  call MPI_Reduce(mod(rank * 7 + 3, 11), ival, 1, MPI_INTEGER, MPI_MAX, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
     expect = -huge(0)
     do r = 0, nprocs - 1
        expect = max(expect, mod(r * 7 + 3, 11))
     end do
     call check(ival == expect, 'Reduce MPI_MAX at root 0')
  end if

  ! Bcast from the last rank.
  root = nprocs - 1
  if (rank == root) then
     do i = 1, 10
        bc(i) = i * i + 31 * root
     end do
  else
     bc = -7
  end if
  call MPI_Bcast(bc, 10, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
  do i = 1, 10
     call check(bc(i) == i * i + 31 * root, 'Bcast integer array')
  end do

  ! Ring with blocking Send/Recv and a full status; the count depends on
  ! the sender so MPI_Get_count is checked against something non-trivial.
  cnt = 3 + rank
  do i = 1, cnt
     ibuf(i) = rank * 1000 + i
  end do
  rbuf = -1
  status = -99
  if (nprocs == 1) then
     ! A blocking send to oneself may not complete before the receive.
     call MPI_Irecv(rbuf, maxn, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &
          reqs(1), ierr)
     call MPI_Send(ibuf, cnt, MPI_INTEGER, right, 100 + rank, MPI_COMM_WORLD, ierr)
     call MPI_Wait(reqs(1), status, ierr)
  else if (rank == 0) then
     call MPI_Send(ibuf, cnt, MPI_INTEGER, right, 100 + rank, MPI_COMM_WORLD, ierr)
     call MPI_Recv(rbuf, maxn, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &
          status, ierr)
  else
     call MPI_Recv(rbuf, maxn, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &
          status, ierr)
     call MPI_Send(ibuf, cnt, MPI_INTEGER, right, 100 + rank, MPI_COMM_WORLD, ierr)
  end if
  call check(ierr == MPI_SUCCESS, 'ring ierr')
  call check(status(MPI_SOURCE) == left, 'ring status(MPI_SOURCE)')
  call check(status(MPI_TAG) == 100 + left, 'ring status(MPI_TAG)')
  call MPI_Get_count(status, MPI_INTEGER, cnt, ierr)
  call check(cnt == 3 + left, 'ring MPI_Get_count')
  do i = 1, 3 + left
     call check(rbuf(i) == left * 1000 + i, 'ring payload')
  end do
  call check(rbuf(4 + left) == -1, 'ring wrote past the message')

  ! The other direction, received with MPI_STATUS_IGNORE.
  ibuf(1:2) = (/ rank * 17 + 5, -rank /)
  rbuf = -1
  if (nprocs == 1) then
     call MPI_Irecv(rbuf, 2, MPI_INTEGER, left, 200, MPI_COMM_WORLD, reqs(1), ierr)
     call MPI_Send(ibuf, 2, MPI_INTEGER, left, 200, MPI_COMM_WORLD, ierr)
     call MPI_Wait(reqs(1), MPI_STATUS_IGNORE, ierr)
  else if (rank == 0) then
     call MPI_Send(ibuf, 2, MPI_INTEGER, left, 200, MPI_COMM_WORLD, ierr)
     call MPI_Recv(rbuf, 2, MPI_INTEGER, right, 200, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  else
     call MPI_Recv(rbuf, 2, MPI_INTEGER, right, 200, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
     call MPI_Send(ibuf, 2, MPI_INTEGER, left, 200, MPI_COMM_WORLD, ierr)
  end if
  call check(ierr == MPI_SUCCESS, 'STATUS_IGNORE recv ierr')
  call check(rbuf(1) == right * 17 + 5 .and. rbuf(2) == -right, 'STATUS_IGNORE recv payload')

  ! Sendrecv around the ring.
  status = -99
  rbuf = -1
  call MPI_Sendrecv((/ rank, rank * rank /), 2, MPI_INTEGER, right, 300, &
       rbuf, maxn, MPI_INTEGER, left, 300, MPI_COMM_WORLD, status, ierr)
  call check(rbuf(1) == left .and. rbuf(2) == left * left, 'Sendrecv payload')
  call check(status(MPI_SOURCE) == left .and. status(MPI_TAG) == 300, 'Sendrecv status')
  call MPI_Get_count(status, MPI_INTEGER, cnt, ierr)
  call check(cnt == 2, 'Sendrecv count')

  ! All-to-all with nonblocking calls, self included.
  do i = 1, 4
     sbufs(i) = rank * 100 + i
  end do
  rbufs = -1
  do r = 0, nprocs - 1
     call MPI_Irecv(rbufs(1, r), 4, MPI_INTEGER, r, 400, MPI_COMM_WORLD, reqs(r + 1), ierr)
  end do
  do r = 0, nprocs - 1
     call MPI_Isend(sbufs, 4, MPI_INTEGER, r, 400, MPI_COMM_WORLD, reqs(nprocs + r + 1), ierr)
  end do
  call MPI_Waitall(2 * nprocs, reqs, MPI_STATUSES_IGNORE, ierr)
  call check(ierr == MPI_SUCCESS, 'Waitall ierr')
  do r = 0, nprocs - 1
     do i = 1, 4
        call check(rbufs(i, r) == r * 100 + i, 'Isend/Irecv payload')
     end do
     call check(reqs(r + 1) == MPI_REQUEST_NULL, 'Waitall left a request active')
  end do

  ! Even/odd split; a negative key reverses the order inside each half.
  color = mod(rank, 2)
  call MPI_Comm_split(MPI_COMM_WORLD, color, -rank, sub, ierr)
  call MPI_Comm_rank(sub, subrank, ierr)
  call MPI_Comm_size(sub, subsize, ierr)
  nsame = 0
  nhigher = 0
  expect = 0
  do r = 0, nprocs - 1
     if (mod(r, 2) == color) then
        nsame = nsame + 1
        expect = expect + r
        if (r > rank) nhigher = nhigher + 1
     end if
  end do
  call check(subsize == nsame, 'Comm_split size')
  call check(subrank == nhigher, 'Comm_split rank order by key')
  call MPI_Allreduce(rank, subsum, 1, MPI_INTEGER, MPI_SUM, sub, ierr)
  call check(subsum == expect, 'Allreduce on split communicator')
  call MPI_Comm_free(sub, ierr)
  call check(sub == MPI_COMM_NULL, 'Comm_free did not null the handle')

  ! Wtime never goes backwards.
  t0 = MPI_Wtime()
  do i = 1, 1000
     t1 = MPI_Wtime()
     call check(t1 >= t0, 'MPI_Wtime went backwards')
     t0 = t1
  end do
  call check(MPI_Wtick() > 0.0d0, 'MPI_Wtick not positive')

  ! Strided reals: 4 blocks of 2 with stride 5, out of 20.
  call MPI_Type_vector(4, 2, 5, MPI_REAL, vtype, ierr)
  call MPI_Type_commit(vtype, ierr)
  call MPI_Type_size(vtype, dsize, ierr)
  call check(dsize == 8 * 4, 'Type_size of the vector')
  do i = 1, 20
     va(i) = rank * 100 + i
  end do
  ! Vector out, contiguous in.
  vr = -1.0
  call MPI_Sendrecv(va, 1, vtype, right, 500, vr, 8, MPI_REAL, left, 500, &
       MPI_COMM_WORLD, status, ierr)
  call MPI_Get_count(status, MPI_REAL, cnt, ierr)
  call check(cnt == 8, 'vector Get_count in MPI_REAL')
  do i = 0, 3
     call check(vr(2 * i + 1) == left * 100 + 5 * i + 1, 'vector send, block start')
     call check(vr(2 * i + 2) == left * 100 + 5 * i + 2, 'vector send, block end')
  end do
  call check(vr(9) == -1.0, 'vector send wrote too much')
  ! Contiguous out, vector in: the gaps must stay untouched.
  vr = -1.0
  call MPI_Sendrecv(va, 8, MPI_REAL, right, 501, vr, 1, vtype, left, 501, &
       MPI_COMM_WORLD, status, ierr)
  call MPI_Get_count(status, vtype, cnt, ierr)
  call check(cnt == 1, 'vector Get_count in the vector type')
  do i = 1, 20
     if (mod(i - 1, 5) < 2 .and. i <= 17) then
        call check(vr(i) == left * 100 + 2 * ((i - 1) / 5) + mod(i - 1, 5) + 1, 'vector recv data')
     else
        call check(vr(i) == -1.0, 'vector recv touched a gap')
     end if
  end do
  call MPI_Type_free(vtype, ierr)
  call check(vtype == MPI_DATATYPE_NULL, 'Type_free did not null the handle')

  ! Every rank has passed every check once it gets through the barrier.
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call check(ierr == MPI_SUCCESS, 'Barrier ierr')
  if (rank == 0) then
     write (*, '(a)') 'PASS f_basic'
     flush (6)
  end if
  call MPI_Finalize(ierr)

end program f_basic
