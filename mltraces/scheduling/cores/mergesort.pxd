# What the other cores use of mergesort.py, declared for Cython (setup.py): with these,
# a core subclasses Ranking with its own order and calls sort as a C function. Keep them
# equal to mergesort.py (a mismatch fails the build, and the cores then run as Python).

cdef class Ranking:
    cdef bint before(self, long long a, long long b) noexcept

cdef class ByKey(Ranking):
    cdef double[:] key

cdef class Positions:
    cdef long long[:] items, spare

cdef ByKey by_key(double[:] key)
cpdef void sort(long long[:] items, long long n, long long[:] spare, Ranking ranking)
cdef long long[:] positions(Positions room, long long n, Ranking ranking)
