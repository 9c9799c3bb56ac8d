"""What the engines replay, read from the catalog: the bridge between tables and simulators.

The engines (:mod:`mltraces.scheduling`, :mod:`mltraces.simulation`) take plain data
(job tables, cluster specs, throughput profiles, trace arrays) and name no catalog
table and no source. This layer reads those inputs from a catalog connection:

- :mod:`.cluster`: job traces by id (every mapped job table's ``replay`` names),
  cluster specs and throughput profiles, for the cluster scheduler;
- :mod:`.recurring`: the Zeus train and power traces and the Alibaba recurring groups,
  for the recurring-job simulator (:mod:`.recurring_cache` keeps them as arrays between
  runs);
- :mod:`.requests`: a request trace's prefix blocks and input tokens (``mltraces.requests``'
  mapping, through Arrow), for the prefix KV-cache replay (:mod:`mltraces.prefixcache`);

Papers and commands build their replays through it; a new engine gets its own module
here, and nothing below imports this layer.
"""
