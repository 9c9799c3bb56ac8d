"""The scheduling policies, one module each (the engine and the cluster model are one floor up).

EDF (:mod:`.edf`), EDF with admission control (:mod:`.edfadmit`), EDF with elastic
scaling (:mod:`.efnoadmit`), ElasticFlow (:mod:`.elasticflow`), Gandiva
(:mod:`.gandiva`), Tiresias (:mod:`.tiresias`), Themis (:mod:`.themis`), Chronus
(:mod:`.chronus`, its lease plans in :mod:`.leases`) and the FIFO / SJF baselines
(:mod:`.baselines`). Each takes a :class:`~mltraces.scheduling.base.Setup` and returns
a :class:`~mltraces.scheduling.results.Recorder`; the hot loops of ElasticFlow, Gandiva
and Chronus are compiled cores in :mod:`mltraces.scheduling.cores`.
"""
