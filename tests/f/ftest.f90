! Shared by the Fortran test programs: the FAIL line the harness looks for,
! then MPI_Abort. Compiled with each program; it exports only these.
module ftest
  implicit none
  private
  public :: test_name, check

  character(len=32) :: test_name = '?'

contains

  subroutine check(ok, what)
    use mpi
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    integer :: rank, e
    if (ok) return
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, e)
    write (*, '(a,i0,a)') 'FAIL ' // trim(test_name) // ': rank ', rank, ': ' // what
    flush (6)
    call MPI_Abort(MPI_COMM_WORLD, 1, e)
  end subroutine check

end module ftest
