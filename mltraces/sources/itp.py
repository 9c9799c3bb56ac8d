"""Microsoft ITP job traces as released with ElasticFlow (ASPLOS'23)."""

from __future__ import annotations

from mltraces.registry import RemoteFile, Source

COMMIT = "277ed24d0e908c31a1c98145819e2e3853d8ac00"
BASE = f"https://raw.githubusercontent.com/microsoft/elasticflow-traces/{COMMIT}/data"

SOURCE = Source(
    name="itp",
    title="Microsoft ITP GPU cluster traces (ElasticFlow, ASPLOS'23)",
    description=(
        "Two months (2021-03-04 to 2021-05-03) of deep-learning jobs on ten GPU clusters of "
        "Microsoft's internal ITP platform: submission time, duration and GPU count per job "
        "(raw traces), and the same jobs annotated by ElasticFlow with a model, batch size, "
        "iteration count and deadline, plus the 195-job testbed trace."
    ),
    homepage="https://github.com/microsoft/elasticflow-traces",
    license="MIT",
    citation="""@inproceedings{gu2023elasticflow,
  title     = {{ElasticFlow}: An Elastic Serverless Training Platform for Distributed Deep Learning},
  author    = {Gu, Diandian and Zhao, Yihao and Zhong, Yinmin and Xiong, Yifan and Han, Zhenhua
               and Cheng, Peng and Yang, Fan and Huang, Gang and Jin, Xin and Liu, Xuanzhe},
  booktitle = {Proceedings of the 28th ACM International Conference on Architectural Support
               for Programming Languages and Operating Systems (ASPLOS '23)},
  pages     = {266--280},
  year      = {2023},
  publisher = {ACM},
  doi       = {10.1145/3575693.3575721}
}""",
    files=(
        RemoteFile(
            id="itp/raw-traces.tar.gz",
            url=f"{BASE}/raw-traces.tar.gz",
            size=1943846,
            sha256="67398e1a89245c50ae0881bf997e6cda0c95f9f47980af5bc56d67998965669f",
            git_blob="8147e243486d25a21abb12c1e50cbcf90aa72ebc",
            kind="tar.gz",
            description="LICENSE + cluster01..10.csv: job_id, submission_time, duration, num_gpu",
        ),
        RemoteFile(
            id="itp/elasticflow-traces.tar.gz",
            url=f"{BASE}/elasticflow-traces.tar.gz",
            size=2599482,
            sha256="e9c20b73de61d2702aef086aebc995cbc432affbd0f09969cf30879c5d1a83c4",
            git_blob="bf9e3ccae14b35410a213b2528c02e71906f8890",
            kind="tar.gz",
            description=(
                "LICENSE + cluster01..10.csv + 195job.csv (testbed): job_id, submission_time, "
                "num_iteration, model_name, deadline, batch_size, num_gpu, duration"
            ),
        ),
    ),
    anomalies=(
        "Times are seconds from each cluster's trace start, not wall-clock timestamps.",
        "ElasticFlow deadlines are absolute (seconds from trace start), generated as "
        "submission_time + U[0.5, 1.5] x duration and truncated to whole seconds (3 jobs fall "
        "a fraction of a second below 0.5 x duration).",
        "The 195 testbed jobs (195job.csv) are cluster02 jobs with freshly drawn model, batch "
        "size and deadline.",
        "Published totals: 10 clusters, 69,351 jobs, 1,632,719.7 GPU hours.",
    ),
    pins={"github": f"microsoft/elasticflow-traces@{COMMIT}"},
)
