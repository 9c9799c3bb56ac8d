# The C signatures of what efrounds.py calls in efcore.py, for Cython (setup.py): with these
# declared, the compiled round loop calls them as C functions. Keep them equal to the
# annotations in efcore.py (a mismatch fails the build, and the cores then run as Python).

cdef long long bisect_left(double[:] a, long long n, double x) except? -1
cdef double rate(double[:, :] speed2, long long m, long long g) except? -1
cpdef tuple estimate(double now, long long total, double slot, double[:] left,
                     double[:] deadline, long long[:] model, bint stop_on_miss,
                     double[:, :] speed2, long long[:, :] levels2, long long[:] nlev,
                     long long[:, :] fit2, long long[:] fitrow, long long[:] cap2)
cpdef tuple scale_up(double now, long long total, double slot, bint reprice_all,
                     double[:] times_in, long long[:] free_in, long long[:] gpus_in,
                     double[:] left, double[:] deadline, long long[:] model,
                     double[:] end_in, double[:] real_end_in, long long[:] ptr,
                     double[:] at_all, long long[:] ag_all, double[:, :] speed2,
                     long long[:, :] levels2, long long[:] nlev, long long[:, :] fit2,
                     long long[:] fitrow, long long[:] cap2)
