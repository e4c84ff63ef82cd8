! Fortran's own datatypes in reductions and point-to-point: COMPLEX,
! DOUBLE COMPLEX, LOGICAL, CHARACTER, the sized kinds and the pair types of
! MAXLOC/MINLOC, each checked against a value computed here.
program f_types
  use ftest
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, peer
  complex :: c, csum
  double complex :: z, zsum
  logical :: l, land, lor
  integer(kind=8) :: i8, i8sum
  real(kind=8) :: r8, r8max
  integer :: pairin(2), pairout(2)
  double precision :: dpin(2), dpout(2)
  character(len=12) :: word
  integer :: status(MPI_STATUS_SIZE), n
  integer, parameter :: rk = selected_real_kind(12, 100), ik = selected_int_kind(9)
  real(kind=rk) :: xr, yr
  integer(kind=ik) :: xi, yi
  integer :: tr, tr2, ti, ni, na, nd, comb, tsize, ints(2)
  integer(kind=MPI_ADDRESS_KIND) :: addrs(1)
  integer :: dts(1)

  call MPI_Init(ierr)

  test_name = 'f_types'
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)

  c = cmplx(real(rank + 1), real(-2 * rank))
  call MPI_Allreduce(c, csum, 1, MPI_COMPLEX, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(csum == cmplx(real(nprocs * (nprocs + 1) / 2), real(-nprocs * (nprocs - 1))), &
       'COMPLEX sum')

  z = dcmplx(dble(rank) * 0.5d0, dble(rank + 3))
  call MPI_Allreduce(z, zsum, 1, MPI_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(zsum == dcmplx(0.25d0 * nprocs * (nprocs - 1), dble(nprocs * (nprocs - 1) / 2 + 3 * nprocs)), &
       'DOUBLE COMPLEX sum')

  l = mod(rank, 2) == 0
  call MPI_Allreduce(l, land, 1, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
  call MPI_Allreduce(l, lor, 1, MPI_LOGICAL, MPI_LOR, MPI_COMM_WORLD, ierr)
  call check(land .eqv. (nprocs == 1), 'LOGICAL LAND')
  call check(lor, 'LOGICAL LOR')

  i8 = 3000000000_8 + rank
  call MPI_Allreduce(i8, i8sum, 1, MPI_INTEGER8, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(i8sum == 3000000000_8 * nprocs + nprocs * (nprocs - 1) / 2, 'INTEGER8 sum')

  r8 = 1.5d0 * rank - 2.0d0
  call MPI_Allreduce(r8, r8max, 1, MPI_REAL8, MPI_MAX, MPI_COMM_WORLD, ierr)
  call check(r8max == 1.5d0 * (nprocs - 1) - 2.0d0, 'REAL8 max')

  ! MAXLOC over (value, index): the value peaks at the middle rank.
  pairin = (/ -abs(2 * rank - (nprocs - 1)), rank /)
  call MPI_Allreduce(pairin, pairout, 1, MPI_2INTEGER, MPI_MAXLOC, MPI_COMM_WORLD, ierr)
  call check(pairout(1) == -mod(nprocs - 1, 2) .and. pairout(2) == (nprocs - 1) / 2, '2INTEGER MAXLOC')
  dpin = (/ dble(mod(rank * 7, 5)), dble(rank) /)
  call MPI_Allreduce(dpin, dpout, 1, MPI_2DOUBLE_PRECISION, MPI_MINLOC, MPI_COMM_WORLD, ierr)
  call check(dpout(1) == 0d0 .and. dpout(2) == 0d0, '2DOUBLE_PRECISION MINLOC')

  ! CHARACTER: rank 0 sends a word to every rank, which counts it.
  if (rank == 0) then
    word = 'lanai-hello!'
    do peer = 1, nprocs - 1
      call MPI_Send(word, 12, MPI_CHARACTER, peer, 5, MPI_COMM_WORLD, ierr)
    end do
  else
    word = ' '
    call MPI_Recv(word, 12, MPI_CHARACTER, 0, 5, MPI_COMM_WORLD, status, ierr)
    call MPI_Get_count(status, MPI_CHARACTER, n, ierr)
    call check(n == 12 .and. word == 'lanai-hello!', 'CHARACTER message')
  end if

  ! Types for SELECTED_REAL_KIND / SELECTED_INT_KIND values.
  call MPI_Type_create_f90_real(12, 100, tr, ierr)
  call check(ierr == MPI_SUCCESS, 'Type_create_f90_real')
  call MPI_Type_create_f90_real(12, 100, tr2, ierr)
  call check(tr2 == tr, 'Type_create_f90_real gives one handle per (p, r)')
  call MPI_Type_size(tr, tsize, ierr)
  call check(tsize == storage_size(xr) / 8, 'F90 real size')
  call MPI_Type_get_envelope(tr, ni, na, nd, comb, ierr)
  call check(comb == MPI_COMBINER_F90_REAL .and. ni == 2 .and. na == 0 .and. nd == 0, &
       'F90 real envelope')
  call MPI_Type_get_contents(tr, 2, 0, 0, ints, addrs, dts, ierr)
  call check(ints(1) == 12 .and. ints(2) == 100, 'F90 real contents')
  xr = 0.25_rk * rank
  call MPI_Allreduce(xr, yr, 1, tr, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(yr == 0.125_rk * nprocs * (nprocs - 1), 'F90 real sum')
  call MPI_Type_create_f90_integer(9, ti, ierr)
  call MPI_Type_size(ti, tsize, ierr)
  call check(tsize == storage_size(xi) / 8, 'F90 integer size')
  xi = 100000 + rank
  call MPI_Allreduce(xi, yi, 1, ti, MPI_MAX, MPI_COMM_WORLD, ierr)
  call check(yi == 100000 + nprocs - 1, 'F90 integer max')

  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a)', 'PASS f_types'
  call MPI_Finalize(ierr)

end program f_types
