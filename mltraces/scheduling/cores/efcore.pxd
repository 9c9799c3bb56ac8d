# What efrounds.py uses of efcore.py, declared for Cython (setup.py): with these, the
# compiled round loop calls the planner as C functions and reads the Planner's arrays in
# place. Keep them equal to efcore.py (a mismatch fails the build, and the cores then run
# as Python).

cdef class Planner:
    cdef object tables, current, offers, prices, work, merged
    cdef double[:] times, nt, at, end, real_end, up_end, up_real, idle, at_all
    cdef double[:] next_change, step_end
    cdef long long[:] free, nf, aval, ag, ptr, ag_all, order, gpus, next_level, fill
    cdef long long[:] step_job
    cdef unsigned char[:] aset, started, stale
    cdef double[:, :] tt
    cdef long long[:, :] tf
    cdef long long timeline, rows, width, nsteps

cdef double* fptr(double[:] a) noexcept
cdef long long bisect_left(double* a, long long n, double x) noexcept
cdef double rate(double[:, :] speed2, long long m, long long g) except? -1
cpdef long long estimate(double now, long long total, double slot, double[:] left,
                         double[:] deadline, long long[:] model, bint stop_on_miss,
                         Planner planner) except? -1
cpdef double scale_up(double now, long long total, double slot, bint reprice_all,
                      double[:] times_in, long long[:] free_in, long long[:] gpus_in,
                      double[:] left, double[:] deadline, long long[:] model,
                      double[:] end_in, double[:] real_end_in, long long[:] ptr,
                      double[:] at_all, long long[:] ag_all, Planner planner) except? -1
