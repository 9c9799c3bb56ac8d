# What efrounds.py uses of efcore.py, declared for Cython (setup.py): with these, the
# compiled round loop calls the planner as C functions and reads the Planner's arrays in
# place, and the planner reads its parts (Current ... Merged) without a type test. Keep
# them equal to efcore.py (a mismatch fails the build, and the cores then run as Python).

cdef class Tables:
    cdef double[:, :] speed2
    cdef long long[:, :] levels2
    cdef long long[:] nlev
    cdef long long[:, :] fit2
    cdef long long[:] fitrow
    cdef long long[:] cap2

cdef class Sheet:
    cdef Tables tables
    cdef long long total, xv, m
    cdef double slot, xt, deadline, aligned, event
    cdef double* nt
    cdef long long* nf
    cdef long long* aval
    cdef unsigned char* aset
    cdef double* at
    cdef long long* ag

cdef class Current:
    cdef double[:, :] cat
    cdef long long[:, :] cag
    cdef long long[:] cna

cdef class Offers:
    cdef double[:, :] ot, oat
    cdef long long[:, :] of, oag
    cdef long long[:] on, ona
    cdef double[:] oend, oreal
    cdef unsigned char[:] has

cdef class Prices:
    cdef double[:] marginal, r_step, r_horizon
    cdef unsigned char[:] reuse, r_fast
    cdef long long[:] r_jump

cdef class Work:
    cdef double[:] rt
    cdef long long[:] rf, aval
    cdef unsigned char[:] aset
    cdef double aligned
    cdef bint fast

cdef class Merged:
    cdef double[:] keys, next_change
    cdef long long[:] delta

cdef class Planner:
    cdef Tables tables
    cdef Sheet sheet
    cdef Current current
    cdef Offers offers
    cdef Prices prices
    cdef Work work
    cdef Merged merged
    cdef long long total
    cdef double slot
    cdef double[:] left, deadline
    cdef long long[:] model
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
cdef double rate(Tables tables, long long m, long long g) except? -1
cpdef long long estimate(double now, double[:] left, double[:] deadline, long long[:] model,
                         bint stop_on_miss, Planner planner) except? -1
cpdef double scale_up(double now, bint reprice_all, long long[:] gpus_in, double[:] left,
                      double[:] deadline, long long[:] model, double[:] end_in,
                      Planner planner) except? -1
