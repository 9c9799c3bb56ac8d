"""AcmeTrace (NSDI'24): LLM development in Shanghai AI Lab's Seren and Kalos clusters.

The GitHub repository carries the job traces, a per-cluster summary and the
processed utilization CDF curves (`util_pkl`); the raw utilization metrics
(~80 GB) live only on the HuggingFace dataset and are handled by
:mod:`mltraces.hub` from the Hub's own file list.
"""

from __future__ import annotations

from mltraces.registry import RemoteFile, Source

COMMIT = "6d6ac9cd15f3b01151ac6ba00ecddd9156f0dc73"
BASE = f"https://raw.githubusercontent.com/InternLM/AcmeTrace/{COMMIT}/data"
HF_REPO = "Qinghao/AcmeTrace"
HF_BASE = f"https://huggingface.co/datasets/{HF_REPO}/resolve/main/data"

# Processed utilization curves: (file name, size, sha256, git blob sha1)
_UTIL_PKL = [
    (
        "gpu_power_kalos.pkl",
        16189,
        "8d37bcbb9e35bb8425c826df33caa2da8dfc1334f1a656bb1a719deb4d341efe",
        "0d0cea8327630c71c7a704bf32caff25db079400",
    ),
    (
        "gpu_power_seren.pkl",
        16189,
        "e12bc85ee521b0eb4141b4ab50e68f4965c123ac2c667eb182fe6382090d03aa",
        "b9e7b857d3ed18654eab604fd27e0038ef126bd6",
    ),
    (
        "gpu_temp_kalos.pkl",
        32257,
        "2205de26c46618f390354ac2141a903756a8cff3868288d01c173fb8d51282c6",
        "be20b13011cce122c646ac843331aa66b1154ae1",
    ),
    (
        "gpu_temp_seren.pkl",
        32257,
        "714710ca10c802b803148fce93d10d0759f6c7b233cb7ac6a9563e4b0442e28a",
        "a346266ef3919dfc8808d6a5010ab605c48c4afd",
    ),
    (
        "ib_seren.pkl",
        32257,
        "ba31c3db37de660e3a739a096792e1f158228fd0dea63c790adcefe893679a66",
        "f2ad90ef78ee0248ad5c2a1e218a2d389db093c7",
    ),
    (
        "server_power.pkl",
        32257,
        "d04af0ace53cc7ced6e134cbddd4abdc621c8c7386930a307254b059145ba671",
        "82355387c70235eb62d14ad1b8f0b0247d541141",
    ),
    (
        "util_cpu_mem_kalos.pkl",
        32257,
        "a90a07c2da3939cf90a3a4f064b1a8655261e7160ba80382766b4b359f0bd043",
        "aa76837c9e4caabeab95feac0b02942f7e19f570",
    ),
    (
        "util_cpu_mem_seren.pkl",
        32257,
        "056821018f84ac3047860f58c91af3d8f4025a985a780b92e83fbee190f18e62",
        "a6d53810f1a908981f1ead2db89311024c08f6a0",
    ),
    (
        "util_gpu_kalos.pkl",
        32257,
        "de05ff0592a107a602a40ee63a9f3e9f2f13120d2ae999d3aff6bef831918028",
        "6a542a05f772626e97440bd88e7fa40824e0dbc5",
    ),
    (
        "util_gpu_kalos_full.pkl",
        80504,
        "fe5cb60b84c15caf9e1c125cd46cb0c6472a216f390da9ae46ca43577fe98143",
        "8ec37bd5c8d1dd7fa691dc7f3e96db25e027d2ee",
    ),
    (
        "util_gpu_pai.pkl",
        3847,
        "9e2ef459f15dbd272d5089195fe9a873b533bf5fb02039a07eb3226eedce7475",
        "ca4a86e8b2195977ca350266fa48aef53163fdd2",
    ),
    (
        "util_gpu_philly.pkl",
        16189,
        "c693dbb97c91b4c50d1ef702ad18721c3461caa5ba29240268d1f8d13ac81283",
        "ae62bf6174d69f7535e5b7c32d4e8d87380ed651",
    ),
    (
        "util_gpu_seren.pkl",
        80470,
        "1c32e7cc551397f814895c3f93a9e2765c0c0f1e38d251f5b563db33f558cbaf",
        "d029385df56902bf6fdbb21f3b86279584f4f71a",
    ),
]

SOURCE = Source(
    name="acme",
    title="AcmeTrace: LLM development in the datacenter (NSDI'24)",
    description=(
        "Six months (2023-03 to 2023-08) of jobs on Shanghai AI Lab's Seren and Kalos A100 "
        "clusters used for large language model development: per-job users, GPU/CPU counts, "
        "type (pretrain, SFT, eval, debug, ...), final state and submit/start/end times; a "
        "per-cluster summary compared against Philly, Helios and PAI; processed utilization "
        "CDF curves (GPU/CPU/memory utilization, temperature, power, InfiniBand); and, on "
        "HuggingFace, the raw 15-second DCGM, Prometheus and IPMI metrics."
    ),
    homepage="https://github.com/InternLM/AcmeTrace",
    license="CC-BY-4.0",
    citation="""@inproceedings{hu2024characterization,
  title     = {Characterization of Large Language Model Development in the Datacenter},
  author    = {Hu, Qinghao and Ye, Zhisheng and Wang, Zerui and Wang, Guoteng and Zhang, Meng
               and Chen, Qiaoling and Sun, Peng and Lin, Dahua and Wang, Xiaolin and Luo, Yingwei
               and Wen, Yonggang and Zhang, Tianwei},
  booktitle = {21st USENIX Symposium on Networked Systems Design and Implementation (NSDI 24)},
  pages     = {709--729},
  year      = {2024},
  publisher = {USENIX Association}
}""",
    files=(
        RemoteFile(
            id="acme/trace_seren.csv",
            url=f"{BASE}/job_trace/trace_seren.csv",
            mirrors=(f"{HF_BASE}/job_trace/trace_seren.csv",),
            git_blob="3133535311d36ecc404d4446e129036a1057c6f2",
            description="Seren job trace (~99 MB, 818,327 jobs after the authors' filtering)",
        ),
        RemoteFile(
            id="acme/trace_kalos.csv",
            url=f"{BASE}/job_trace/trace_kalos.csv",
            mirrors=(f"{HF_BASE}/job_trace/trace_kalos.csv",),
            size=8960159,
            git_blob="6e6c11a6308e403a2b75f3dec2d9cf48263c1a52",
            description="Kalos job trace (62,413 jobs)",
        ),
        RemoteFile(
            id="acme/cluster_summary.csv",
            url=f"{BASE}/cluster_summary.csv",
            size=1269,
            sha256="cde7a7d4ba1596ea165cf4583137d2095020abebbc26b3cd834284c16e8e6ecf",
            git_blob="c1a4e7dbd8397748c26e249661264ceb171ad604",
            description="One row per cluster (Seren, Kalos, Philly, Helios, PAI): job counts, "
            "run/queue times, state rates, GPU-time shares",
        ),
        *(
            RemoteFile(
                id=f"acme/{name}",
                url=f"{BASE}/utilization/util_pkl/{name}",
                size=size,
                sha256=sha256,
                git_blob=blob,
                description="Processed CDF curve(s): pickled list of 1,000-point numpy arrays",
            )
            for name, size, sha256, blob in _UTIL_PKL
        ),
    ),
    anomalies=(
        "cluster_summary.csv counts Seren jobs before the authors' filtering (1,031,550) while "
        "the released trace_seren.csv holds 818,327 jobs.",
        "Seren times carry +08:00 offsets and Kalos times +00:00; mltraces stores every time "
        "as TIMESTAMPTZ (an absolute instant) and renders them in UTC.",
        "util_gpu_pai.pkl is a pandas Series pickled by pandas 1.x (Int64Index) that does not "
        "unpickle under pandas 2+; mltraces loads it with a restricted unpickler.",
        "kalos: 3 jobs are still RUNNING at the end of the trace.",
        "In the published Kalos rows duration spans submit to end (queueing included); Seren's "
        "spans start to end.",
        "util_gpu_pai.pkl looks digitised from a figure: non-monotone in 19 places, ends at "
        "99.67 %.",
        "Curves 4 and 5 of util_gpu_seren.pkl and util_gpu_kalos_full.pkl are identical.",
        "Kalos node CPU utilization reaches 238.9 %.",
        "The raw utilization CSVs on HuggingFace are wide (one column per '<ip>-<gpu>') and "
        "mostly empty; mltraces converts them to long-form Parquet.",
    ),
    pins={"github": f"InternLM/AcmeTrace@{COMMIT}", "huggingface": f"datasets/{HF_REPO}"},
)
