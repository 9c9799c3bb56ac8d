"""Zeus (NSDI'23): training and power traces of six DNN workloads on four GPUs."""

from __future__ import annotations

from mltraces.registry import RemoteFile, Source

COMMIT = "75a8b9398034eb9baf74ca0a830c2c31bcce52cd"
BASE = (
    f"https://raw.githubusercontent.com/ml-energy/zeus/{COMMIT}"
    "/examples/research_reproducibility/zeus_nsdi23/trace"
)

# (file name, size, sha256, git blob sha1, description)
_FILES = [
    (
        "summary_train.csv",
        186977,
        "076b35615349ee624403006e5ad67fd9ebda92af690c7750f8bb0c2ab92c0cf4",
        "091cb883d7d7753cd7564e0d9012f744305be61c",
        "Epochs to reach each target metric per (workload, batch size, optimizer, lr, run)",
    ),
    (
        "summary_power_v100.csv",
        32534,
        "f0b066dd1a451bd78f730e001ac3a7c411979bc7f0846f12c1a9fb604aa90628",
        "a574ae321e48d7c1dcf1ff9d833e62fe2481b28e",
        "Time per epoch and average power per (workload, batch size, power limit) on V100",
    ),
    (
        "summary_power_a40.csv",
        29641,
        "f4ec111fc9b06b353182faab9160ecb1236a486b2741ed93383b80497332031e",
        "e3eeba044d97be66fef5da5f2bcbfe668ae19ef5",
        "Time per epoch and average power per (workload, batch size, power limit) on A40",
    ),
    (
        "summary_power_p100.csv",
        18163,
        "158e9a6784b6e2d26710529b132cf173b227dc8688f4931c19a637bce2b7503b",
        "65247e8382155d1454e71dd4f8e83971778c29a3",
        "Time per epoch and average power per (workload, batch size, power limit) on P100",
    ),
    (
        "summary_power_rtx6000.csv",
        27704,
        "edccecc7f8b7a6102962b03f0f37767dd9cd2f03469ebccadc9805e82901bdc4",
        "b37519739a17e7918a9a542802efeb36c573794f",
        "Time per epoch and average power per (workload, batch size, power limit) on RTX6000",
    ),
]

SOURCE = Source(
    name="zeus",
    title="Zeus: GPU energy traces of DNN training (NSDI'23)",
    description=(
        "Train traces (epochs to target accuracy for every batch size, optimizer, learning "
        "rate and repetition) and power traces (time per epoch and average power for every "
        "batch size and GPU power limit on V100, A40, P100 and RTX6000) of six workloads, "
        "released to replay recurring training jobs under batch-size and power-limit "
        "policies; plus Alibaba recurring job groups used for the trace-driven evaluation."
    ),
    homepage="https://github.com/ml-energy/zeus/tree/master/examples/research_reproducibility/zeus_nsdi23",
    license="Apache-2.0",
    citation="""@inproceedings{you2023zeus,
  title     = {Zeus: Understanding and Optimizing {GPU} Energy Consumption of {DNN} Training},
  author    = {You, Jie and Chung, Jae-Won and Chowdhury, Mosharaf},
  booktitle = {20th USENIX Symposium on Networked Systems Design and Implementation (NSDI 23)},
  pages     = {119--139},
  year      = {2023},
  publisher = {USENIX Association}
}

% alibaba_groups.csv.xz derives from the Alibaba GPU cluster trace:
@inproceedings{weng2022mlaas,
  title     = {{MLaaS} in the Wild: Workload Analysis and Scheduling in Large-Scale Heterogeneous {GPU} Clusters},
  author    = {Weng, Qizhen and Xiao, Wencong and Yu, Yinghao and Wang, Wei and Wang, Cheng and He, Jian
               and Li, Yong and Zhang, Liping and Lin, Wei and Ding, Yu},
  booktitle = {19th USENIX Symposium on Networked Systems Design and Implementation (NSDI 22)},
  pages     = {945--960},
  year      = {2022},
  publisher = {USENIX Association}
}""",
    files=(
        *(
            RemoteFile(
                id=f"zeus/{name}",
                url=f"{BASE}/{name}",
                size=size,
                sha256=sha256,
                git_blob=blob,
                description=text,
            )
            for name, size, sha256, blob, text in _FILES
        ),
        RemoteFile(
            id="zeus/alibaba_groups.csv.xz",
            url=f"{BASE}/alibaba_groups.csv.xz",
            git_blob="c30bfb7215fb474872a629139537efe063d4f74f",
            description=(
                "Recurring job groups from the Alibaba GPU cluster trace (group, start_time, "
                "end_time, dataset, runtime_ratio), xz-compressed; verified by its git blob"
            ),
        ),
    ),
    anomalies=(
        "summary_train.csv repeats each (configuration, run) once per target_metric "
        "threshold; select the job's target before counting runs.",
        "target_epoch is written 'nan' when a run never reached that target within its epochs.",
        "Power rows for batch sizes or optimizers that were never trained do not join the "
        "train trace (91/59/18/24 rows on v100/a40/p100/rtx6000); not every batch size covers "
        "every power limit (a40 sentiment140 at batch size 128 has 5 limits).",
        "Optimizer names are lower case (adadelta, adamw, adam) in the files.",
        "Power limits differ per GPU: v100 100-250 W, a40 100-300 W, p100 125-250 W, "
        "rtx6000 100-260 W.",
    ),
    pins={"github": f"ml-energy/zeus@{COMMIT}"},
)
