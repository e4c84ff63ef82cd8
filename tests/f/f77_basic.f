! Fixed-form program on mpif.h: the oldest way Fortran codes reach MPI.
      program f77basic
      implicit none
      include 'mpif.h'
      integer ierr, rank, nprocs, isum, i, cnt, right, left, req
      integer sbuf(8), rbuf(8), status(MPI_STATUS_SIZE)

      rank = -1
      call MPI_INIT(ierr)
      call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
      call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
      if (nprocs .lt. 1 .or. rank .lt. 0 .or. rank .ge. nprocs)
     &    call fail(rank, 'rank/size out of range')

      call MPI_ALLREDUCE(rank + 1, isum, 1, MPI_INTEGER, MPI_SUM,
     &    MPI_COMM_WORLD, ierr)
      if (isum .ne. nprocs * (nprocs + 1) / 2)
     &    call fail(rank, 'allreduce sum')

!     Ring: the count and tag depend on the sender.
      right = mod(rank + 1, nprocs)
      left = mod(rank - 1 + nprocs, nprocs)
      do 10 i = 1, 8
         sbuf(i) = rank * 10 + i
         rbuf(i) = -1
   10 continue
      call MPI_IRECV(rbuf, 8, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG,
     &    MPI_COMM_WORLD, req, ierr)
      call MPI_SEND(sbuf, 1 + mod(rank, 8), MPI_INTEGER, right,
     &    50 + rank, MPI_COMM_WORLD, ierr)
      call MPI_WAIT(req, status, ierr)
      if (status(MPI_SOURCE) .ne. left)
     &    call fail(rank, 'status(MPI_SOURCE)')
      if (status(MPI_TAG) .ne. 50 + left)
     &    call fail(rank, 'status(MPI_TAG)')
      call MPI_GET_COUNT(status, MPI_INTEGER, cnt, ierr)
      if (cnt .ne. 1 + mod(left, 8)) call fail(rank, 'MPI_GET_COUNT')
      do 20 i = 1, cnt
         if (rbuf(i) .ne. left * 10 + i) call fail(rank, 'payload')
   20 continue

      call MPI_BARRIER(MPI_COMM_WORLD, ierr)
      if (rank .eq. 0) then
         write (*, '(a)') 'PASS f77_basic'
         flush (6)
      end if
      call MPI_FINALIZE(ierr)
      end

      subroutine fail(rank, what)
      implicit none
      include 'mpif.h'
      integer rank, e
      character*(*) what
      write (*, '(a,i0,a)') 'FAIL f77_basic: rank ', rank, ': ' // what
      flush (6)
      call MPI_ABORT(MPI_COMM_WORLD, 1, e)
      end
